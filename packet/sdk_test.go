package packet

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// sdkGoldens is sdk/testdata/golden.json, the golden packets every SDK
// in sdk/ tests its codec against.
type sdkGoldens struct {
	Packets []struct {
		Name       string    `json:"name"`
		Hex        string    `json:"hex"`
		Framing    string    `json:"framing"`
		Type       string    `json:"type"`
		Seq        uint16    `json:"seq"`
		Tick       uint32    `json:"tick"`
		Compressed bool      `json:"compressed"`
		Room       uint32    `json:"room"`
		Port       uint16    `json:"port"`
		Rooms      []sdkRoom `json:"rooms"`
	} `json:"packets"`
	Malformed []struct {
		Name   string `json:"name"`
		Hex    string `json:"hex"`
		Reason string `json:"reason"`
	} `json:"malformed"`
	// The extension's packets, which package ext's codec keeps
	// (tests/sdk_ext_golden_test.go).
	Ext          json.RawMessage `json:"ext"`
	ExtMalformed json.RawMessage `json:"ext_malformed"`
}

type sdkRoom struct {
	ID         uint32 `json:"id"`
	Players    uint16 `json:"players"`
	MaxPlayers uint16 `json:"max_players"`
	Port       uint16 `json:"port"`
	State      string `json:"state"`
}

// byName finds the value of T among values whose String() is name.
func byName[T interface {
	~uint8
	String() string
}](name string) (T, bool) {
	for v := range 256 {
		if T(v).String() == name {
			return T(v), true
		}
	}
	return 0, false
}

// TestSDKGoldens keeps the SDKs' golden packets equal to the codec's:
// each packet decodes to the fields the file gives and those fields
// encode back to it, every golden packet of this package is among them,
// every message type has one in each framing and a compressed list too,
// and each malformed packet is refused for the reason the file names,
// one at least for each rule a client's decoder checks.
func TestSDKGoldens(t *testing.T) {
	raw, err := os.ReadFile("../sdk/testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var file struct {
		About string `json:"about"`
		sdkGoldens
	}
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("sdk/testdata/golden.json: %v", err)
	}
	g := file.sdkGoldens
	shared := map[string]bool{}
	covered := map[Framing]map[Type]bool{Compact: {}, Legacy: {}}
	compressed := map[Framing]bool{}
	for _, p := range g.Packets {
		b, err := hex.DecodeString(p.Hex)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		f, ok1 := byName[Framing](p.Framing)
		typ, ok2 := byName[Type](p.Type)
		if !ok1 || !ok2 {
			t.Fatalf("%s: framing %q or type %q unknown", p.Name, p.Framing, p.Type)
		}
		want := Message{Header: Header{Framing: f, Type: typ, Seq: p.Seq, Tick: p.Tick, Compressed: p.Compressed},
			RoomID: p.Room, Port: p.Port}
		for _, r := range p.Rooms {
			s, ok := byName[RoomState](r.State)
			if !ok {
				t.Fatalf("%s: room state %q", p.Name, r.State)
			}
			want.Rooms = append(want.Rooms, Room{ID: r.ID, Players: r.Players, MaxPlayers: r.MaxPlayers, Port: r.Port, State: s})
		}
		got, err := Parse(b)
		if err != nil {
			t.Errorf("%s: Parse: %v", p.Name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodes to %+v, the file says %+v", p.Name, got, want)
		}
		if again, err := want.Append(nil); err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s: the file's fields encode to %x (%v), the file says %s", p.Name, again, err, p.Hex)
		}
		shared[p.Hex] = true
		covered[f][typ] = true
		compressed[f] = compressed[f] || (p.Compressed && typ == RoomList)
	}
	for _, c := range golden {
		if !shared[hex.EncodeToString(wiretest.Hex(t, c.hex))] {
			t.Errorf("the codec's golden %s is not in sdk/testdata/golden.json", c.name)
		}
	}
	for _, f := range []Framing{Compact, Legacy} {
		for typ := ListRooms; typ <= JoinFailed; typ++ {
			if !covered[f][typ] {
				t.Errorf("sdk/testdata/golden.json has no %s in the %s framing", typ, f)
			}
		}
		if !compressed[f] {
			t.Errorf("sdk/testdata/golden.json has no compressed ROOM_LIST in the %s framing", f)
		}
	}
	refused := map[string]bool{}
	for _, m := range g.Malformed {
		b, err := hex.DecodeString(m.Hex)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := Parse(b); Reason(err) != m.Reason {
			t.Errorf("%s: Parse says %v (%q), the file says %q", m.Name, err, Reason(err), m.Reason)
		}
		refused[m.Reason] = true
	}
	// Every rule a client's decoder checks has a datagram that breaks it.
	for _, e := range []*Error{ErrShort, ErrMagic, ErrLength, ErrCRC, ErrPacketType, ErrUnknownType,
		ErrDirection, ErrCompression, ErrPayloadSize, ErrRoomCount, ErrRoomState} {
		if !refused[e.reason] {
			t.Errorf("sdk/testdata/golden.json has no malformed datagram refused as %q", e.reason)
		}
	}
}

package tests

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"os"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// The extension's golden packets of sdk/testdata/golden.json ("ext" and
// "ext_malformed"), which every SDK's tests encode (requests) and decode
// (replies), kept equal to package ext here.

// sdkExtGolden is one extension packet of the file: its bytes and its
// fields, named as the SDKs name them.
type sdkExtGolden struct {
	Name string    `json:"name"`
	Hex  string    `json:"hex"`
	Msg  sdkExtMsg `json:"msg"`
}

type sdkExtMsg struct {
	Framing   string        `json:"framing"`
	Type      string        `json:"type"`
	Seq       uint16        `json:"seq"`
	Tick      uint32        `json:"tick,omitempty"`
	Token     string        `json:"token,omitempty"`
	Pad       int           `json:"pad,omitempty"`
	Client    string        `json:"client,omitempty"`
	Filter    *sdkExtFilter `json:"filter,omitempty"`
	Cursor    uint32        `json:"cursor,omitempty"`
	Limit     uint8         `json:"limit,omitempty"`
	Meta      *sdkExtMeta   `json:"meta,omitempty"`
	Private   bool          `json:"private,omitempty"`
	Password  string        `json:"password,omitempty"`
	Room      uint32        `json:"room,omitempty"`
	Code      string        `json:"code,omitempty"`
	Port      uint16        `json:"port,omitempty"`
	Addr      string        `json:"addr,omitempty"`
	SeatToken string        `json:"seat_token,omitempty"`
	Next      uint32        `json:"next,omitempty"`
	Entries   []sdkExtEntry `json:"entries,omitempty"`
	Reason    uint8         `json:"reason,omitempty"`
}

type sdkExtFilter struct {
	States     uint8       `json:"states"`
	MinFree    uint8       `json:"min_free"`
	Mode       string      `json:"mode"`
	Map        string      `json:"map"`
	NamePrefix string      `json:"name_prefix"`
	Tags       [][2]string `json:"tags"`
}

type sdkExtMeta struct {
	Name string      `json:"name"`
	Mode string      `json:"mode"`
	Map  string      `json:"map"`
	Tags [][2]string `json:"tags"`
}

type sdkExtEntry struct {
	ID         uint32 `json:"id"`
	Players    uint16 `json:"players"`
	MaxPlayers uint16 `json:"max_players"`
	Port       uint16 `json:"port"`
	State      string `json:"state"`
	Password   bool   `json:"password"`
	Code       string `json:"code"`
	sdkExtMeta
}

func sdkExtTags(tags []ext.Tag) [][2]string {
	out := [][2]string{}
	for _, t := range tags {
		out = append(out, [2]string{t.Key, t.Value})
	}
	return out
}

func sdkExtMetaOf(m ext.Meta) sdkExtMeta {
	return sdkExtMeta{Name: m.Name, Mode: m.Mode, Map: m.Map, Tags: sdkExtTags(m.Tags)}
}

// sdkExtFields is m as the golden file writes it.
func sdkExtFields(m ext.Message) sdkExtMsg {
	s := sdkExtMsg{Framing: "compact", Type: ext.Name(m.Type), Seq: m.Seq, Tick: m.Tick,
		Token: hex.EncodeToString(m.Token), Pad: m.Pad, Cursor: m.Cursor, Limit: m.Limit,
		Private: m.Private, Password: m.Password, Room: m.RoomID, Code: m.Code, Port: m.Port,
		SeatToken: hex.EncodeToString(m.SeatToken), Next: m.Next, Reason: m.Reason}
	if m.Framing == packet.Legacy {
		s.Framing = "legacy"
	}
	if m.Client != ([8]byte{}) {
		s.Client = hex.EncodeToString(m.Client[:])
	}
	if m.Addr.IsValid() {
		s.Addr = m.Addr.String()
	}
	switch m.Type {
	case ext.List, ext.Quick:
		f := m.Filter
		s.Filter = &sdkExtFilter{States: f.States, MinFree: f.MinFree, Mode: f.Mode, Map: f.Map,
			NamePrefix: f.NamePrefix, Tags: sdkExtTags(f.Tags)}
	case ext.Create:
		meta := sdkExtMetaOf(m.Meta)
		s.Meta = &meta
	}
	for _, e := range m.Entries {
		s.Entries = append(s.Entries, sdkExtEntry{ID: e.ID, Players: e.Players, MaxPlayers: e.MaxPlayers,
			Port: e.Port, State: e.State.String(), Password: e.Password, Code: e.Code, sdkExtMeta: sdkExtMetaOf(e.Meta)})
	}
	return s
}

// sdkExtCases are the messages the golden file must hold, one or more of
// each type an SDK sends or receives, in both framings.
func sdkExtCases() map[string]ext.Message {
	client := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	token := []byte("retry-token-0123")
	eu := []ext.Tag{{Key: "region", Value: "eu"}}
	seat := ext.NewSigner(bytes.Repeat([]byte{7}, ext.KeyLen)).Sign(nil,
		ext.SeatToken{Epoch: 1, Room: 7, Seat: 2, Client: client, Expires: 1_700_000_000})
	h := func(typ packet.Type, seq uint16) packet.Header { return packet.Header{Type: typ, Seq: seq} }
	legacy := func(typ packet.Type, seq uint16, tick uint32) packet.Header {
		return packet.Header{Framing: packet.Legacy, Type: typ, Seq: seq, Tick: tick}
	}
	return map[string]ext.Message{
		"EXT_LIST padded, no token": {Header: h(ext.List, 10), Limit: 1, Pad: 47},
		"EXT_LIST filtered, token, cursor 5": {Header: h(ext.List, 11), Token: token, Cursor: 5, Limit: 20,
			Filter: ext.Filter{States: 1, MinFree: 1, Mode: "ctf", NamePrefix: "Fri", Tags: eu}},
		"legacy EXT_LIST token": {Header: legacy(ext.List, 12, 0xCAFEBABE), Token: token,
			Filter: ext.Filter{Map: "dust"}},
		"EXT_CREATE private with password": {Header: h(ext.Create, 13), Token: token, Client: client,
			Meta: ext.Meta{Name: "Friday night", Mode: "ctf", Map: "dust", Tags: eu}, Private: true, Password: "hunter2"},
		"EXT_CREATE padded, no options": {Header: h(ext.Create, 14), Client: client, Pad: 30},
		"EXT_JOIN room 7":               {Header: h(ext.Join, 15), Token: token, Client: client, RoomID: 7},
		"EXT_JOIN code with password": {Header: h(ext.Join, 16), Token: token, Client: client, Code: "ABCDEF",
			Password: "hunter2"},
		"legacy EXT_JOIN code": {Header: legacy(ext.Join, 17, 1000), Token: token, Client: client, Code: "XYZWVU"},
		"EXT_QUICK filtered": {Header: h(ext.Quick, 18), Token: token, Client: client,
			Filter: ext.Filter{MinFree: 1, Mode: "ctf", Tags: eu}},
		"EXT_ROOMS two rooms, next 9": {Header: h(ext.Rooms, 11), Next: 9, Entries: []ext.Entry{
			{ID: 7, Players: 1, MaxPlayers: 8, Port: 30000, State: packet.Waiting, Password: true, Code: "ABCDEF",
				Meta: ext.Meta{Name: "Friday night", Mode: "ctf", Map: "dust", Tags: eu}},
			{ID: 8, Players: 8, MaxPlayers: 8, Port: 30001, State: packet.Playing, Code: "BCDEFG"}}},
		"EXT_ROOMS empty":              {Header: h(ext.Rooms, 10)},
		"EXT_SEAT room 7 with a token": {Header: h(ext.Seat, 15), RoomID: 7, Port: 30000, Code: "ABCDEF", SeatToken: seat},
		"EXT_SEAT on another host": {Header: h(ext.Seat, 16), RoomID: 7, Port: 30000, Code: "ABCDEF",
			Addr: netip.MustParseAddr("192.0.2.7"), SeatToken: seat},
		"legacy EXT_SEAT":            {Header: legacy(ext.Seat, 17, 1000), RoomID: 7, Port: 30000, Code: "XYZWVU", SeatToken: seat},
		"EXT_REFUSED wrong password": {Header: h(ext.Refused, 16), Reason: 4},
		"EXT_RETRY":                  {Header: h(ext.Retry, 10), Token: token},
		"legacy EXT_REFUSED full":    {Header: legacy(ext.Refused, 17, 1000), Reason: 2},
		"EXT_PRESENT seat 2":         {Header: h(ext.Present, 0), SeatToken: seat},
		"EXT_ADMITTED room 7":        {Header: h(ext.Admitted, 0), RoomID: 7},
	}
}

// TestSDKExtGoldens keeps the extension's golden packets of
// sdk/testdata/golden.json equal to package ext: each decodes to the
// fields the file gives, each case of the codec is in the file with its
// bytes, and each malformed one is refused for the reason it says.
func TestSDKExtGoldens(t *testing.T) {
	raw, err := os.ReadFile(sdkGolden)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Ext          []sdkExtGolden `json:"ext"`
		ExtMalformed []struct {
			Name   string `json:"name"`
			Hex    string `json:"hex"`
			Reason string `json:"reason"`
		} `json:"ext_malformed"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", sdkGolden, err)
	}
	have := map[string]sdkExtGolden{}
	for _, g := range file.Ext {
		have[g.Name] = g
		b, err := hex.DecodeString(g.Hex)
		if err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		m, err := ext.Parse(b)
		if err != nil {
			t.Errorf("%s: the codec refuses it: %v", g.Name, err)
			continue
		}
		got, _ := json.Marshal(sdkExtFields(m))
		want, _ := json.Marshal(g.Msg)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the file says\n%s\nthe codec decodes\n%s", g.Name, want, got)
		}
	}
	for name, m := range sdkExtCases() {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		line, _ := json.Marshal(sdkExtGolden{Name: name, Hex: hex.EncodeToString(b), Msg: sdkExtFields(m)})
		if g, ok := have[name]; !ok || g.Hex != hex.EncodeToString(b) {
			t.Errorf("golden.json's ext lacks, or differs from:\n%s", line)
		}
	}
	reasons := map[string]bool{}
	for _, g := range file.ExtMalformed {
		b, err := hex.DecodeString(g.Hex)
		if err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		_, err = ext.Parse(b)
		if ext.Reason(err) != g.Reason {
			t.Errorf("%s: the codec says %q (%v), the file %q", g.Name, ext.Reason(err), err, g.Reason)
		}
		reasons[g.Reason] = true
	}
	for _, r := range []string{"ext_version", "ext_short", "ext_field", "ext_trailing", "crc"} {
		if !reasons[r] {
			t.Errorf("golden.json's ext_malformed has none refused as %q", r)
		}
	}
}

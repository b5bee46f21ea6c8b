package ext

import (
	"bytes"
	"errors"
	"hash/crc32"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// goldenKey signs the seat token of the golden packets.
var goldenKey = []byte("0123456789abcdef0123456789abcdef")

var (
	goldenClient = [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	goldenToken  = NewSigner(goldenKey).Sign(nil, SeatToken{Epoch: 1, Room: 7, Seat: 2, Client: goldenClient, Expires: 1800000000})
	region       = []Tag{{"region", "eu"}}
)

// golden are the extension's settled packets; docs/protocol.md shows the
// same set (TestDocumentedGoldens).
var golden = []struct {
	hex string
	msg Message
}{
	{"01800001003500350100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000086cb515",
		Message{Header: packet.Header{Type: List, Seq: 1}, Pad: 40}},
	{"01800002001c001c0102aabb000000000001010363746600000106726567696f6e026575d3afc2f1",
		Message{Header: packet.Header{Type: List, Seq: 2}, Token: []byte{0xaa, 0xbb},
			Filter: Filter{States: 1, MinFree: 1, Mode: "ctf", Tags: region}}},
	{"02810002003200320100000000010000000700010004753000004b584d50525405416e6e27730363746604647573740106726567696f6e0265754d1776f9",
		Message{Header: packet.Header{Type: Rooms, Seq: 2}, Entries: []Entry{{ID: 7, Players: 1, MaxPlayers: 4, Port: 30000,
			Code: "KXMPRT", Meta: Meta{Name: "Ann's", Mode: "ctf", Map: "dust", Tags: region}}}}},
	{"01820003001c001c0102aabb01020304050607080105416e6e277303637466000002707741478326",
		Message{Header: packet.Header{Type: Create, Seq: 3}, Token: []byte{0xaa, 0xbb}, Client: goldenClient, Private: true,
			Meta: Meta{Name: "Ann's", Mode: "ctf"}, Password: "pw"}},
	{"0283000300380038010000000775304b584d50525400290100000001000000070000000201020304050607086b49d200975a4e385b906c475da22fd2588b6cc9c0fbf0b3",
		Message{Header: packet.Header{Type: Seat, Seq: 3}, RoomID: 7, Port: 30000, Code: "KXMPRT", SeatToken: goldenToken}},
	{"02830006003c003c010000000775304b584d50525404c6336407290100000001000000070000000201020304050607086b49d200975a4e385b906c475da22fd2588b6cc9d37372ba",
		Message{Header: packet.Header{Type: Seat, Seq: 6}, RoomID: 7, Port: 30000, Code: "KXMPRT", Addr: netip.MustParseAddr("198.51.100.7"), SeatToken: goldenToken}},
	{"01840004001a001a0102aabb010203040506070800000000064b584d5052540270773d7e4446",
		Message{Header: packet.Header{Type: Join, Seq: 4}, Token: []byte{0xaa, 0xbb}, Client: goldenClient, Code: "KXMPRT", Password: "pw"}},
	{"0285000400020002010458c0ab0e", Message{Header: packet.Header{Type: Refused, Seq: 4}, Reason: 4}},
	{"01860005001500150102aabb0102030405060708000003637466000000d6dd65db",
		Message{Header: packet.Header{Type: Quick, Seq: 5}, Token: []byte{0xaa, 0xbb}, Client: goldenClient, Filter: Filter{Mode: "ctf"}}},
	{"02870001000400040102aabb6ce36310", Message{Header: packet.Header{Type: Retry, Seq: 1}, Token: []byte{0xaa, 0xbb}}},
	{"01880000002b002b01290100000001000000070000000201020304050607086b49d200975a4e385b906c475da22fd2588b6cc9bbbbe334",
		Message{Header: packet.Header{Type: Present}, SeatToken: goldenToken}},
	{"02890000000500050100000007296f857c", Message{Header: packet.Header{Type: Admitted}, RoomID: 7}},
	{"a35fc81d010180000100000005002c002c01000000000000000000000000000000000000000000000000000000000000000000000000000000000000006d0a30b3",
		Message{Header: packet.Header{Framing: packet.Legacy, Type: List, Seq: 1, Tick: 5}, Pad: 31}},
	{"a35fc81d010285000100000005000200020107c170ae1d",
		Message{Header: packet.Header{Framing: packet.Legacy, Type: Refused, Seq: 1, Tick: 5}, Reason: 7}},
}

func TestGoldens(t *testing.T) {
	for _, g := range golden {
		b, err := g.msg.Append(nil)
		if err != nil {
			t.Fatalf("%s: Append: %v", Name(g.msg.Type), err)
		}
		want := wiretest.Hex(t, g.hex)
		if !bytes.Equal(b, want) {
			t.Errorf("%s seq %d: Append = %x, want %x", Name(g.msg.Type), g.msg.Seq, b, want)
		}
		m, err := Parse(want)
		if err != nil || !reflect.DeepEqual(m, g.msg) {
			t.Errorf("Parse(%s) = %+v, %v; want %+v", g.hex, m, err, g.msg)
		}
		wiretest.EveryPrefixFails(t, want, Parse)
	}
}

// TestDocumentedGoldens keeps the extension's golden packets in
// docs/protocol.md equal to the codec's, and every message the section
// lists named as the codec names it and shown by one.
func TestDocumentedGoldens(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(doc, []byte("\n## The extension"))
	if !ok {
		t.Fatal("docs/protocol.md has no extension section")
	}
	_, rest, ok := bytes.Cut(section, []byte("\n<!-- ext golden packets -->\n"))
	table, _, ok2 := bytes.Cut(rest, []byte("\n<!-- end ext golden packets -->"))
	if !ok || !ok2 {
		t.Fatal("docs/protocol.md has no <!-- ext golden packets --> table")
	}
	known := map[string]bool{}
	for _, g := range golden {
		known[g.hex] = true
	}
	row := regexp.MustCompile("^\\| ([^`]+) \\| `([0-9a-f]+)` \\|$")
	seq := regexp.MustCompile(`\bseq (\d+)\b`)
	shown, covered := map[string]bool{}, map[packet.Type]bool{}
	for i, line := range strings.Split(string(table), "\n") {
		if i < 2 {
			continue
		}
		r := row.FindStringSubmatch(line)
		if r == nil {
			t.Fatalf("golden row %q is not | name | `hex` |", line)
		}
		m, err := Parse(wiretest.Hex(t, r[2]))
		if err != nil {
			t.Errorf("%s: %v", r[1], err)
			continue
		}
		want := Name(m.Type)
		if m.Framing == packet.Legacy {
			want = "legacy " + want
		}
		if !strings.HasPrefix(r[1], want+",") {
			t.Errorf("%q is a %s", r[1], want)
		}
		if s := seq.FindStringSubmatch(r[1]); s == nil || s[1] != strconv.Itoa(int(m.Seq)) {
			t.Errorf("%q has sequenceId %d", r[1], m.Seq)
		}
		if !known[r[2]] {
			t.Errorf("%s: %s is no golden packet of the codec", r[1], r[2])
		}
		shown[r[2]], covered[m.Type] = true, true
	}
	for _, g := range golden {
		if !shown[g.hex] {
			t.Errorf("the codec's golden %s is not in the document", g.hex)
		}
	}
	types := regexp.MustCompile("(?m)^\\| `0x([0-9a-f]{2})` \\| (EXT_[A-Z_]+) \\|").FindAllSubmatch(section, -1)
	if len(types) != int(Admitted-List)+1 {
		t.Fatalf("the section lists %d message types, the codec has %d", len(types), Admitted-List+1)
	}
	for _, m := range types {
		v, _ := strconv.ParseUint(string(m[1]), 16, 8)
		if Name(packet.Type(v)) != string(m[2]) {
			t.Errorf("the document names 0x%s %s, the codec %q", m[1], m[2], Name(packet.Type(v)))
		}
		if !covered[packet.Type(v)] {
			t.Errorf("no golden packet of %s in the document", m[2])
		}
	}
}

// TestTypesClearOfSeedAndDialect keeps the numbers off the seed's
// 0x40-0x46 and the later dialect's 0x47-0x74.
func TestTypesClearOfSeedAndDialect(t *testing.T) {
	for ty := range 256 {
		if Is(packet.Type(ty)) && ty >= 0x40 && ty <= 0x74 {
			t.Errorf("0x%02x is an extension type inside 0x40-0x74", ty)
		}
	}
	if packet.Type(List).Dir() != 0 {
		t.Error("the seed codec takes extension types")
	}
}

func TestRefuses(t *testing.T) {
	enc := func(m Message) []byte {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// frame rebuilds a datagram of type typ around payload p.
	frame := func(typ packet.Type, dir packet.Direction, p []byte) []byte {
		return packet.AppendFrame(nil, packet.Header{Type: typ}, dir, p)
	}
	tooMany := []Tag{{"a", ""}, {"b", ""}, {"c", ""}, {"d", ""}, {"e", ""}}
	for _, c := range []struct {
		name string
		b    []byte
		err  error
	}{
		{"seed type", enc2(t, packet.Message{Header: packet.Header{Type: packet.ListRooms}}), ErrType},
		{"reply as request", frame(List, packet.ServerToClient, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), ErrDirection},
		{"version 2", frame(Refused, packet.ServerToClient, []byte{2, 1}), ErrVersion},
		{"no version", frame(Refused, packet.ServerToClient, nil), ErrShort},
		{"trailing reply byte", frame(Refused, packet.ServerToClient, []byte{1, 1, 0}), ErrTrailing},
		{"non-zero padding", frame(List, packet.ClientToServer, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), ErrTrailing},
		{"join by id and code", frame(Join, packet.ClientToServer, append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 7, 6}, "KXMPRT\x00"...)), ErrField},
		{"join by neither", frame(Join, packet.ClientToServer, []byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0}), ErrField},
		{"code look-alike", frame(Join, packet.ClientToServer, append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 6}, "KXMPRO\x00"...)), ErrField},
		{"control in name", frame(Create, packet.ClientToServer, []byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, '\n', 0, 0, 0, 0}), ErrField},
		{"bad UTF-8", frame(Create, packet.ClientToServer, []byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 0xff, 0, 0, 0, 0}), ErrField},
		{"unknown create flag", frame(Create, packet.ClientToServer, []byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 0, 0, 0, 0}), ErrField},
		{"name too long", frame(Create, packet.ClientToServer, append(append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 33}, strings.Repeat("a", 33)...), 0, 0, 0, 0)), ErrField},
		{"five tags", frame(Quick, packet.ClientToServer, append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 5}, tagBytes(tooMany)...)), ErrField},
		{"same key twice", frame(Quick, packet.ClientToServer, append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 2}, tagBytes([]Tag{{"a", "1"}, {"a", "2"}})...)), ErrField},
		{"upper-case key", frame(Quick, packet.ClientToServer, append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 1}, tagBytes([]Tag{{"A", "1"}})...)), ErrField},
		{"state 4 asked", frame(Quick, packet.ClientToServer, []byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0, 0, 0, 0, 0}), ErrField},
		{"room count past the bytes", frame(Rooms, packet.ServerToClient, []byte{1, 0, 0, 0, 0, 200}), ErrShort},
		{"token longer than 64", frame(Retry, packet.ServerToClient, append([]byte{1, 65}, make([]byte, 65)...)), ErrField},
		{"empty retry token", frame(Retry, packet.ServerToClient, []byte{1, 0}), ErrField},
		{"empty seat token", frame(Present, packet.ClientToServer, []byte{1, 0}), ErrField},
		{"too long", frame(Create, packet.ClientToServer, append([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0}, make([]byte, MaxPayload)...)), ErrTooLong},
	} {
		if _, err := Parse(c.b); !errors.Is(err, c.err) {
			t.Errorf("%s: Parse = %v, want %v", c.name, err, c.err)
		}
	}
	if _, err := ParseRequest(enc(Message{Header: packet.Header{Type: Refused}})); !errors.Is(err, packet.ErrNotRequest) {
		t.Errorf("ParseRequest of a reply = %v", err)
	}
	for _, m := range []Message{
		{Header: packet.Header{Type: Join}},
		{Header: packet.Header{Type: Join}, RoomID: 1, Code: "KXMPRT"},
		{Header: packet.Header{Type: Create}, Meta: Meta{Name: strings.Repeat("x", 33)}},
		{Header: packet.Header{Type: Create}, Meta: Meta{Tags: tooMany}},
		{Header: packet.Header{Type: Seat}, Code: "abc"},
		{Header: packet.Header{Type: List}, Pad: MaxPayload},
		{Header: packet.Header{Type: packet.ListRooms}},
	} {
		if b, err := m.Append(nil); err == nil {
			t.Errorf("Append(%+v) = %x, want an error", m, b)
		}
	}
}

func enc2(t *testing.T, m packet.Message) []byte {
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tagBytes(tags []Tag) []byte {
	var b []byte
	for _, t := range tags {
		b = append(append(append(append(b, byte(len(t.Key))), t.Key...), byte(len(t.Value))), t.Value...)
	}
	return b
}

func TestSeatToken(t *testing.T) {
	s := NewSigner(goldenKey)
	want := SeatToken{Epoch: 1, Room: 7, Seat: 2, Client: goldenClient, Expires: 1800000000}
	if len(goldenToken) != TokenLen || !s.Verify(goldenToken) {
		t.Fatalf("the golden token (%x) does not verify", goldenToken)
	}
	if got, ok := ReadToken(goldenToken); !ok || got != want {
		t.Fatalf("ReadToken = %+v, %v", got, ok)
	}
	for i := range goldenToken {
		bad := bytes.Clone(goldenToken)
		bad[i] ^= 1
		if s.Verify(bad) {
			t.Errorf("a token with byte %d changed verifies", i)
		}
	}
	if NewSigner([]byte("another key, another host's epoch")).Verify(goldenToken) {
		t.Error("a token verifies under another key")
	}
	if s.Verify(goldenToken[:TokenLen-1]) {
		t.Error("a cut token verifies")
	}
}

// FuzzParse holds the decoder to its round trip: what it accepts encodes
// back to the same bytes (or, compressed, to the same message), and
// anything else is refused with one of the package's errors.
func FuzzParse(f *testing.F) {
	for _, g := range golden {
		f.Add(wiretest.Hex(f, g.hex))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range [][]byte{b, fixAny(b)} {
			m, err := Parse(d)
			if err != nil {
				if Reason(err) == "unknown" {
					t.Fatalf("Parse(%x) = %v, not one of the codec's errors", d, err)
				}
				continue
			}
			again, err := m.Append(nil)
			if err != nil {
				t.Fatalf("Parse(%x) = %+v, which does not encode: %v", d, m, err)
			}
			if !m.Compressed && !bytes.Equal(again, d) {
				if d[0] != 0xA3 || d[15] != 0 || d[16] != 0 { // the original client's originalSize 0
					t.Fatalf("Parse(%x) = %+v, encoded back as %x", d, m, again)
				}
			}
			m2, err := Parse(again)
			m2.Compressed = m.Compressed
			if err != nil || !reflect.DeepEqual(m2, m) {
				t.Fatalf("re-encoded %+v as %x: %+v, %v", m, again, m2, err)
			}
		}
	})
}

// fixAny is b with its CRC recomputed, so the fuzzer gets past the CRC.
func fixAny(b []byte) []byte {
	if len(b) < packet.CRCLen {
		return b
	}
	c := bytes.Clone(b)
	n := len(c) - packet.CRCLen
	sum := crc(c[:n])
	c[n], c[n+1], c[n+2], c[n+3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	return c
}

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

package packet

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"runtime"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// golden are the settled packets of the native protocol, byte for byte;
// docs/protocol.md shows the same set (TestDocumentedGoldens).
var golden = []struct {
	name string
	hex  string
	msg  Message
}{
	{"LIST seq 0", "0140000000000000ed83aa8e", Message{Header: Header{Type: ListRooms}}},
	{"LIST seq 7", "01400007000000005fa3769e", Message{Header: Header{Type: ListRooms, Seq: 7}}},
	{"CREATE seq 1", "0142000100000000477c9217", Message{Header: Header{Type: CreateRoom, Seq: 1}}},
	{"JOIN room 1 seq 2", "014400020004000400000001dedf7aae",
		Message{Header: Header{Type: JoinRoom, Seq: 2}, RoomID: 1}},
	{"ROOM_CREATED room 1 port 30000 seq 1", "024300010006000600000001753094850457",
		Message{Header: Header{Type: RoomCreated, Seq: 1}, RoomID: 1, Port: 30000}},
	{"ROOM_LIST 2 rooms seq 0",
		"0241000000180018000200000001000100047530000000000200040004753102ba7e9222",
		Message{Header: Header{Type: RoomList}, Rooms: []Room{
			{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: Waiting},
			{ID: 2, Players: 4, MaxPlayers: 4, Port: 30001, State: Playing},
		}}},
	// Its CRC computed with zlib's crc32, not Go's.
	{"JOIN_SUCCESS room 1 port 30000 seq 2", "0245000200060006000000017530ad82bd8b",
		Message{Header: Header{Type: JoinSuccess, Seq: 2}, RoomID: 1, Port: 30000}},
	{"JOIN_FAILED seq 9", "02460009000000000dccfa26", Message{Header: Header{Type: JoinFailed, Seq: 9}}},

	// The original game's 17-byte framing (magic, version 1, packetType,
	// messageType, sequenceId, tickId, payloadSize, originalSize), each
	// datagram computed from the protocol notes outside this package, its
	// CRC with a CRC-32 implementation other than Go's.
	{"legacy LIST seq 7 tick 0x12345678", "a35fc81d 01 01 40 0007 12345678 0000 0000 5789e13c",
		Message{Header: Header{Framing: Legacy, Type: ListRooms, Seq: 7, Tick: 0x12345678}}},
	{"legacy CREATE seq 1 tick 0xDEADBEEF", "a35fc81d 01 01 42 0001 deadbeef 0000 0000 b297220f",
		Message{Header: Header{Framing: Legacy, Type: CreateRoom, Seq: 1, Tick: 0xDEADBEEF}}},
	{"legacy JOIN room 1 seq 2 tick 0xCAFEBABE", "a35fc81d 01 01 44 0002 cafebabe 0004 0004 00000001 32f90129",
		Message{Header: Header{Framing: Legacy, Type: JoinRoom, Seq: 2, Tick: 0xCAFEBABE}, RoomID: 1}},
	{"legacy ROOM_LIST 2 rooms seq 0 tick 1000",
		"a35fc81d 01 02 41 0000 000003e8 0018 0018 0002 0000000100010004753000 0000000200040004753102 b1a37eb7",
		Message{Header: Header{Framing: Legacy, Type: RoomList, Tick: 1000}, Rooms: []Room{
			{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: Waiting},
			{ID: 2, Players: 4, MaxPlayers: 4, Port: 30001, State: Playing},
		}}},
	{"legacy ROOM_CREATED room 1 port 30000 seq 1 tick 0xDEADBEEF",
		"a35fc81d 01 02 43 0001 deadbeef 0006 0006 00000001 7530 156111c8",
		Message{Header: Header{Framing: Legacy, Type: RoomCreated, Seq: 1, Tick: 0xDEADBEEF}, RoomID: 1, Port: 30000}},
	{"legacy JOIN_SUCCESS room 1 port 30000 seq 2 tick 0xCAFEBABE",
		"a35fc81d 01 02 45 0002 cafebabe 0006 0006 00000001 7530 d2401dea",
		Message{Header: Header{Framing: Legacy, Type: JoinSuccess, Seq: 2, Tick: 0xCAFEBABE}, RoomID: 1, Port: 30000}},
	{"legacy JOIN_FAILED seq 9 tick 0xFFFFFFFF", "a35fc81d 01 02 46 0009 ffffffff 0000 0000 eb7af578",
		Message{Header: Header{Framing: Legacy, Type: JoinFailed, Seq: 9, Tick: 0xFFFFFFFF}}},
}

func TestGoldenEncode(t *testing.T) {
	for _, g := range golden {
		got, err := g.msg.Append(nil)
		if err != nil {
			t.Fatalf("%s: Append: %v", g.name, err)
		}
		if want := wiretest.Hex(t, g.hex); !bytes.Equal(got, want) {
			t.Errorf("%s: Append = %x, want %x", g.name, got, want)
		}
	}
}

func TestGoldenParse(t *testing.T) {
	for _, g := range golden {
		got, err := Parse(wiretest.Hex(t, g.hex))
		if err != nil {
			t.Fatalf("%s: Parse: %v", g.name, err)
		}
		if !reflect.DeepEqual(got, g.msg) {
			t.Errorf("%s: Parse = %+v, want %+v", g.name, got, g.msg)
		}
	}
}

// sampleRooms returns n rooms whose fields vary but repeat enough for
// LZ4 to shrink a list of them.
func sampleRooms(n int) []Room {
	rooms := make([]Room, n)
	for i := range rooms {
		rooms[i] = Room{
			ID:         uint32(i + 1),
			Players:    uint16(i % 4),
			MaxPlayers: 8,
			Port:       uint16(30000 + i%4),
			State:      RoomState(i % 4),
		}
	}
	return rooms
}

// samples is one message of every type, with both extremes of ROOM_LIST.
func samples() []Message {
	return []Message{
		{Header: Header{Type: ListRooms, Seq: 1}},
		{Header: Header{Type: RoomList, Seq: 2}},
		{Header: Header{Type: RoomList, Seq: 3}, Rooms: sampleRooms(10)},
		{Header: Header{Type: RoomList, Seq: 4}, Rooms: sampleRooms(MaxRooms)},
		{Header: Header{Type: CreateRoom, Seq: 0xFFFF}},
		{Header: Header{Type: RoomCreated, Seq: 5}, RoomID: 0xDEADBEEF, Port: 65535},
		{Header: Header{Type: JoinRoom, Seq: 6}, RoomID: 42},
		{Header: Header{Type: JoinRoom, Seq: 6}}, // room 0: well-formed, the lobby refuses it
		{Header: Header{Type: JoinSuccess, Seq: 7}, RoomID: 42, Port: 30042},
		{Header: Header{Type: JoinFailed, Seq: 8}},
	}
}

// variants returns every sample in both framings, compressed and not.
func variants() []Message {
	var out []Message
	for _, m := range samples() {
		for _, f := range []Framing{Compact, Legacy} {
			for _, c := range []bool{false, true} {
				v := m
				v.Framing, v.Compressed = f, c
				if f == Legacy {
					v.Tick = 0x01020304
				}
				out = append(out, v)
			}
		}
	}
	return out
}

func name(m Message) string {
	return fmt.Sprintf("%v/%v/rooms=%d/compressed=%v", m.Type, m.Framing, len(m.Rooms), m.Compressed)
}

func TestRoundTrip(t *testing.T) {
	for _, m := range variants() {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatalf("%s: Append: %v", name(m), err)
		}
		if !Is(b) {
			t.Errorf("%s: Is = false for a valid datagram", name(m))
		}
		if !m.Compressed && len(b) != m.Len() {
			t.Errorf("%s: len(Append) = %d, Len = %d", name(m), len(b), m.Len())
		}
		got, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: Parse: %v", name(m), err)
		}
		if got.Compressed && !m.Compressed {
			t.Errorf("%s: compressed without being asked", name(m))
		}
		want := m
		want.Compressed = got.Compressed
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Parse(Append(m)) = %+v, want %+v", name(m), got, want)
		}
		again, err := got.Append(nil)
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs: %x, %v", name(m), again, err)
		}
	}
}

// TestCompressionShrinks checks that a compressible list really goes out as
// an LZ4 block, and a tiny payload goes out as is with the flag clear.
func TestCompressionShrinks(t *testing.T) {
	for _, f := range []Framing{Compact, Legacy} {
		m := Message{Header: Header{Framing: f, Type: RoomList, Compressed: true}, Rooms: sampleRooms(MaxRooms)}
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		plain := m
		plain.Compressed = false
		pb, _ := plain.Append(nil)
		if len(b) >= len(pb) {
			t.Errorf("%v: compressed ROOM_LIST is %d bytes, plain %d", f, len(b), len(pb))
		}
		got, err := Parse(b)
		if err != nil || !got.Compressed {
			t.Errorf("%v: Parse compressed list: compressed=%v err=%v", f, got.Compressed, err)
		}

		j := Message{Header: Header{Framing: f, Type: JoinSuccess, Compressed: true}, RoomID: 1, Port: 2}
		jb, _ := j.Append(nil)
		plainJ := j
		plainJ.Compressed = false
		pj, _ := plainJ.Append(nil)
		if !bytes.Equal(jb, pj) {
			t.Errorf("%v: incompressible JOIN_SUCCESS = %x, want plain %x", f, jb, pj)
		}
	}
}

func TestLegacyFraming(t *testing.T) {
	m := Message{Header: Header{Framing: Legacy, Type: JoinRoom, Seq: 2, Tick: 0xCAFEBABE}, RoomID: 1}
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	const wantHead = "a35fc81d" + "01" + "01" + "44" + "0002" + "cafebabe" + "0004" + "0004" + "00000001"
	if h := hex.EncodeToString(b[:len(b)-CRCLen]); h != wantHead {
		t.Errorf("legacy JOIN = %s, want %s", h, wantHead)
	}
	if crc := binary.BigEndian.Uint32(b[len(b)-CRCLen:]); crc != crc32.ChecksumIEEE(b[:len(b)-CRCLen]) {
		t.Errorf("legacy CRC %08x is not the IEEE CRC of header and payload", crc)
	}

	// The original game's encoder leaves originalSize 0 on a plain
	// payload: with the compressed bit clear, that is a plain payload.
	zero := legacy(1, 1, 0x44, 4, 0, []byte{0, 0, 0, 7})
	if got, err := Parse(zero); err != nil || got.Type != JoinRoom || got.RoomID != 7 || got.Compressed {
		t.Errorf("legacy JOIN with originalSize 0: %+v, %v", got, err)
	}

	c := Message{Header: Header{Framing: Legacy, Type: RoomList, Compressed: true}, Rooms: sampleRooms(100)}
	cb, _ := c.Append(nil)
	if cb[4] != 0x81 {
		t.Errorf("compressed legacy version byte = %#x, want 0x81", cb[4])
	}
}

// fix rewrites the CRC of a hand-made datagram so that only the defect
// under test remains.
func fix(b []byte) []byte {
	n := len(b) - CRCLen
	binary.BigEndian.PutUint32(b[n:], crc32.ChecksumIEEE(b[:n]))
	return b
}

// compact builds a compact datagram from raw header fields and a payload.
func compact(dir, typ byte, size, orig uint16, payload []byte) []byte {
	b := []byte{dir, typ, 0, 1}
	b = binary.BigEndian.AppendUint16(b, size)
	b = binary.BigEndian.AppendUint16(b, orig)
	b = append(b, payload...)
	return fix(append(b, 0, 0, 0, 0))
}

// legacy builds a legacy datagram from raw header fields and a payload.
func legacy(version, dir, typ byte, size, orig uint16, payload []byte) []byte {
	b := append(legacyMagic[:], version, dir, typ, 0, 1, 0, 0, 0, 9)
	b = binary.BigEndian.AppendUint16(b, size)
	b = binary.BigEndian.AppendUint16(b, orig)
	b = append(b, payload...)
	return fix(append(b, 0, 0, 0, 0))
}

// roomList is a plain ROOM_LIST payload that claims count rooms and holds n.
func roomList(count uint16, n int, state RoomState) []byte {
	rooms := sampleRooms(n)
	for i := range rooms {
		rooms[i].State = state
	}
	p := appendRooms(nil, rooms)
	binary.BigEndian.PutUint16(p, count)
	return p
}

func lz4Of(t testing.TB, p []byte) []byte {
	t.Helper()
	q := bytes.Clone(p)
	n := deflate(q)
	if n >= len(p) {
		t.Fatalf("test payload of %d bytes does not compress", len(p))
	}
	return q[:n]
}

func TestMalformed(t *testing.T) {
	golden0 := wiretest.Hex(t, golden[0].hex)
	badCRC := bytes.Clone(golden0)
	badCRC[len(badCRC)-1] ^= 1
	longList := roomList(MaxRooms+1, MaxRooms+1, Waiting)
	block := lz4Of(t, roomList(50, 50, Waiting))
	short := lz4Of(t, roomList(40, 40, Waiting))

	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"one byte", []byte{1}, ErrShort},
		{"compact header without CRC", golden0[:CompactHeaderLen+3], ErrShort},
		{"legacy shorter than its header", append(legacyMagic[:], 1, 1, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ErrShort},
		{"legacy magic wrong", fix(append([]byte{0xA3, 0x5F, 0xC8, 0x1E}, legacy(1, 1, 0x40, 0, 0, nil)[4:]...)), ErrMagic},
		{"legacy version 2", legacy(2, 1, 0x40, 0, 0, nil), ErrMagic},
		{"legacy version 0 compressed", legacy(0x80, 1, 0x40, 0, 0, nil), ErrMagic},
		{"trailing byte", append(bytes.Clone(golden0), 0), ErrLength},
		{"payloadSize beyond datagram", compact(1, 0x44, 4, 4, nil), ErrLength},
		{"legacy payloadSize short of datagram", legacy(1, 1, 0x40, 0, 0, []byte{0}), ErrLength},
		{"CRC mismatch", badCRC, ErrCRC},
		{"packetType 0", compact(0, 0x40, 0, 0, nil), ErrPacketType},
		{"packetType 3", compact(3, 0x40, 0, 0, nil), ErrPacketType},
		{"legacy packetType 0xFF", legacy(1, 0xFF, 0x40, 0, 0, nil), ErrPacketType},
		{"type 0x3F", compact(1, 0x3F, 0, 0, nil), ErrUnknownType},
		{"type 0x47", compact(2, 0x47, 0, 0, nil), ErrUnknownType},
		{"LIST sent by a server", compact(2, 0x40, 0, 0, nil), ErrDirection},
		{"ROOM_LIST sent by a client", compact(1, 0x41, 2, 2, []byte{0, 0}), ErrDirection},
		{"legacy JOIN_FAILED sent by a client", legacy(1, 1, 0x46, 0, 0, nil), ErrDirection},
		{"originalSize below payloadSize", compact(1, 0x44, 4, 3, []byte{0, 0, 0, 1}), ErrCompression},
		{"legacy flag without compression", legacy(0x81, 1, 0x44, 4, 4, []byte{0, 0, 0, 1}), ErrCompression},
		{"legacy flag with originalSize 0", legacy(0x81, 1, 0x44, 4, 0, []byte{0, 0, 0, 1}), ErrCompression},
		{"legacy originalSize neither 0 nor payloadSize", legacy(1, 1, 0x44, 4, 3, []byte{0, 0, 0, 1}), ErrCompression},
		{"legacy compression without flag", legacy(1, 2, 0x41, uint16(len(block)), 2+50*11, block), ErrCompression},
		{"LZ4 block corrupt", compact(2, 0x41, 4, 200, []byte{0xFF, 0xFF, 0xFF, 0xFF}), ErrCompression},
		{"LZ4 block inflates short", compact(2, 0x41, uint16(len(short)), 2+50*11, short), ErrCompression},
		{"LZ4 block inflates long", compact(2, 0x41, uint16(len(block)), 2+40*11, block), ErrCompression},
		{"originalSize beyond any LZ4 block", compact(1, 0x40, 1, 0xFFFF, []byte{0}), ErrCompression},
		{"LIST with payload", compact(1, 0x40, 1, 1, []byte{0}), ErrPayloadSize},
		{"CREATE with payload", compact(1, 0x42, 2, 2, []byte{0, 0}), ErrPayloadSize},
		{"JOIN_FAILED with payload", compact(2, 0x46, 1, 1, []byte{0}), ErrPayloadSize},
		{"JOIN with 3 bytes", compact(1, 0x44, 3, 3, []byte{0, 0, 1}), ErrPayloadSize},
		{"JOIN with 5 bytes", compact(1, 0x44, 5, 5, []byte{0, 0, 0, 0, 1}), ErrPayloadSize},
		{"ROOM_CREATED with 5 bytes", compact(2, 0x43, 5, 5, []byte{0, 0, 0, 1, 0}), ErrPayloadSize},
		{"JOIN_SUCCESS with 7 bytes", compact(2, 0x45, 7, 7, make([]byte, 7)), ErrPayloadSize},
		{"ROOM_LIST without count", compact(2, 0x41, 1, 1, []byte{0}), ErrPayloadSize},
		{"ROOM_LIST count above rooms", compact(2, 0x41, 2+11, 2+11, roomList(2, 1, Waiting)), ErrPayloadSize},
		{"ROOM_LIST count below rooms", compact(2, 0x41, 2+22, 2+22, roomList(1, 2, Waiting)), ErrPayloadSize},
		{"ROOM_LIST compressed, count above rooms", func() []byte {
			c := lz4Of(t, roomList(51, 50, Waiting))
			return compact(2, 0x41, uint16(len(c)), 2+50*11, c)
		}(), ErrPayloadSize},
		{"ROOM_LIST of 5038 rooms", compact(2, 0x41, uint16(len(longList)), uint16(len(longList)), longList), ErrRoomCount},
		{"ROOM_LIST of 5038 rooms, compressed", func() []byte {
			c := lz4Of(t, longList)
			return compact(2, 0x41, uint16(len(c)), uint16(len(longList)), c)
		}(), ErrRoomCount},
		{"room state 4", compact(2, 0x41, 2+22, 2+22, roomList(2, 2, 4)), ErrRoomState},
		{"room state 0xFF, legacy", legacy(1, 2, 0x41, 2+11, 2+11, roomList(1, 1, 0xFF)), ErrRoomState},
	}
	for _, tt := range tests {
		m, err := Parse(tt.b)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Parse(%x) = %+v, %v; want %v", tt.name, tt.b, m, err, tt.want)
			continue
		}
		if !reflect.DeepEqual(m, Message{}) {
			t.Errorf("%s: Parse returned %+v with its error", tt.name, m)
		}
		if got, want := Reason(err), tt.want.(*Error).reason; got != want {
			t.Errorf("%s: Reason = %q, want %q", tt.name, got, want)
		}
		// The framing layer agrees on everything it checks.
		_, ferr := ParseFrame(tt.b)
		switch tt.want {
		case ErrUnknownType, ErrDirection, ErrPayloadSize, ErrRoomCount, ErrRoomState:
			if ferr != nil {
				t.Errorf("%s: ParseFrame = %v, want no framing error", tt.name, ferr)
			}
		default:
			if ferr != tt.want {
				t.Errorf("%s: ParseFrame = %v, want %v", tt.name, ferr, tt.want)
			}
		}
	}
}

// validPackets is every golden packet, the datagrams compressed by the
// reference LZ4 encoder and every encoded variant.
func validPackets(t testing.TB) [][]byte {
	var out [][]byte
	for _, g := range golden {
		out = append(out, wiretest.Hex(t, g.hex))
	}
	for _, d := range cliDatagrams {
		out = append(out, wiretest.Hex(t, d.hex))
	}
	for _, m := range variants() {
		if len(m.Rooms) == MaxRooms {
			continue // 65k prefixes each would only slow the suite
		}
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestTruncatedPrefixesFail(t *testing.T) {
	for _, b := range validPackets(t) {
		for i := range len(b) {
			if m, err := Parse(b[:i]); err == nil {
				t.Errorf("Parse(%x) (prefix %d of %x) = %+v, want error", b[:i], i, b, m)
			}
			if f, err := ParseFrame(b[:i]); err == nil {
				t.Errorf("ParseFrame(%x) = %+v, want error", b[:i], f)
			}
			if Is(b[:i]) {
				t.Errorf("Is(%x) = true for a truncated datagram", b[:i])
			}
		}
	}
}

func TestAppendRefuses(t *testing.T) {
	prefix := []byte("keep")
	tests := []struct {
		name string
		m    Message
		want error
	}{
		{"unknown type", Message{Header: Header{Type: 0x47}}, ErrUnknownType},
		{"game type", Message{Header: Header{Type: 0x01}}, ErrUnknownType},
		{"too many rooms", Message{Header: Header{Type: RoomList}, Rooms: sampleRooms(MaxRooms + 1)}, ErrRoomCount},
		{"room state 4", Message{Header: Header{Type: RoomList}, Rooms: []Room{{State: 4}}}, ErrRoomState},
		{"unknown framing", Message{Header: Header{Type: ListRooms, Framing: 2}}, ErrFraming},
	}
	for _, tt := range tests {
		b, err := tt.m.Append(bytes.Clone(prefix))
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Append error = %v, want %v", tt.name, err, tt.want)
		}
		if !bytes.Equal(b, prefix) {
			t.Errorf("%s: Append returned %q, want the input unchanged", tt.name, b)
		}
		if n := tt.m.Len(); n != 0 {
			t.Errorf("%s: Len = %d for a message Append refuses", tt.name, n)
		}
	}
}

func TestAppendKeepsPrefix(t *testing.T) {
	m := golden[4].msg
	b, err := m.Append([]byte("xy"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "7879" + golden[4].hex; hex.EncodeToString(b) != want {
		t.Errorf("Append after prefix = %x, want %s", b, want)
	}
}

func TestSetSeq(t *testing.T) {
	for _, m := range variants() {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		SetSeq(b, 0xBEEF)
		m.Seq = 0xBEEF
		want, _ := m.Append(nil)
		if !bytes.Equal(b, want) {
			t.Errorf("%s: SetSeq gave %x, want %x", name(m), b, want)
		}
	}
	list := wiretest.Hex(t, golden[0].hex)
	SetSeq(list, 7)
	if h := hex.EncodeToString(list); h != golden[1].hex {
		t.Errorf("SetSeq(LIST seq 0, 7) = %s, want %s", h, golden[1].hex)
	}
	for _, short := range [][]byte{nil, {1, 0x40, 0}, wiretest.Hex(t, "a35fc81d0101400001")} {
		before := bytes.Clone(short)
		SetSeq(short, 9)
		if !bytes.Equal(short, before) {
			t.Errorf("SetSeq changed a too-short datagram %x to %x", before, short)
		}
	}
}

// SetSeqTick gives a cached encoding the sequence and tick of another
// request, again and again: the same bytes as encoding with them, in
// either framing (the compact one has no tick to set), whatever the
// length, up to a full ROOM_LIST.
func TestSetSeqTick(t *testing.T) {
	for _, m := range variants() {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []struct {
			seq  uint16
			tick uint32
		}{{0xBEEF, 0xCAFEF00D}, {0xBEEF, 0xCAFEF00D}, {0, 0}, {1, 0xFFFFFFFF}, {0xFFFF, 7}} {
			SetSeqTick(b, st.seq, st.tick)
			m.Seq = st.seq
			if m.Framing == Legacy {
				m.Tick = st.tick
			}
			want, _ := m.Append(nil)
			if !bytes.Equal(b, want) {
				t.Fatalf("%s: SetSeqTick(%#x, %#x) gave %x, want %x", name(m), st.seq, st.tick, b, want)
			}
		}
	}
	for _, short := range [][]byte{nil, {1, 0x40, 0}, wiretest.Hex(t, "a35fc81d0101400001000000070000000000")} {
		before := bytes.Clone(short)
		SetSeqTick(short, 9, 9)
		if !bytes.Equal(short, before) {
			t.Errorf("SetSeqTick changed a too-short datagram %x to %x", before, short)
		}
	}
}

// Past the longest datagram, further than the zero-run tables' runs add
// up to, SetSeqTick's CRC is still right.
func TestSetSeqTickBeyondADatagram(t *testing.T) {
	for _, f := range []Framing{Compact, Legacy} {
		m := Message{Header: Header{Framing: f, Type: RoomList, Seq: 1, Tick: 1}, Rooms: sampleRooms(MaxRooms)}
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b[:len(b)-CRCLen], make([]byte, 1<<16)...)
		b = binary.BigEndian.AppendUint32(b, checksum(b))
		SetSeqTick(b, 0xBEEF, 0xCAFEF00D)
		n := len(b) - CRCLen
		if got, want := binary.BigEndian.Uint32(b[n:]), checksum(b[:n]); got != want {
			t.Errorf("%v, %d bytes: CRC %#08x, want %#08x", f, len(b), got, want)
		}
	}
}

// TypeOf reads back the type of every encoding, and is 0 for what is too
// short to have a header.
func TestTypeOf(t *testing.T) {
	for _, m := range variants() {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := TypeOf(b); got != m.Type {
			t.Errorf("%s: TypeOf = %v", name(m), got)
		}
		hl := CompactHeaderLen
		if m.Framing == Legacy {
			hl = LegacyHeaderLen
		}
		if got := TypeOf(b[:hl-1]); got != 0 {
			t.Errorf("%s: TypeOf of %d bytes = %v, want 0", name(m), hl-1, got)
		}
	}
	if got := TypeOf(nil); got != 0 {
		t.Errorf("TypeOf(nil) = %v", got)
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{ErrShort, "short"},
		{ErrMagic, "magic"},
		{ErrLength, "length"},
		{ErrCRC, "crc"},
		{ErrPacketType, "packet_type"},
		{ErrUnknownType, "unknown_type"},
		{ErrDirection, "direction"},
		{ErrNotRequest, "not_request"},
		{ErrCompression, "compression"},
		{ErrPayloadSize, "payload_size"},
		{ErrRoomCount, "room_count"},
		{ErrRoomState, "room_state"},
		{ErrFraming, "framing"},
		{fmt.Errorf("from 127.0.0.1: %w", ErrCRC), "crc"},
		{errors.New("something else"), "unknown"},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		s    fmt.Stringer
		want string
	}{
		{ListRooms, "LIST_ROOMS"},
		{RoomList, "ROOM_LIST"},
		{CreateRoom, "CREATE_ROOM"},
		{RoomCreated, "ROOM_CREATED"},
		{JoinRoom, "JOIN_ROOM"},
		{JoinSuccess, "JOIN_SUCCESS"},
		{JoinFailed, "JOIN_FAILED"},
		{Type(0x10), "Type(0x10)"},
		{Waiting, "waiting"},
		{Countdown, "countdown"},
		{Playing, "playing"},
		{Finished, "finished"},
		{RoomState(9), "RoomState(9)"},
		{Compact, "compact"},
		{Legacy, "legacy"},
		{Framing(5), "Framing(5)"},
		{ClientToServer, "client_to_server"},
		{ServerToClient, "server_to_client"},
		{Direction(0), "Direction(0x00)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestTypeDir(t *testing.T) {
	for typ := range 256 {
		want := Direction(0)
		switch Type(typ) {
		case 0x40, 0x42, 0x44:
			want = ClientToServer
		case 0x41, 0x43, 0x45, 0x46:
			want = ServerToClient
		}
		if got := Type(typ).Dir(); got != want {
			t.Errorf("Type(%#x).Dir() = %v, want %v", typ, got, want)
		}
	}
}

func TestIs(t *testing.T) {
	tests := []struct {
		b    []byte
		want bool
	}{
		{wiretest.Hex(t, golden[0].hex), true},
		{wiretest.Hex(t, "0140000000000000ffffffff"), true}, // Is does not check the CRC
		{wiretest.Hex(t, "0340000000000000ed83aa8e"), false},
		{wiretest.Hex(t, "0140000000010000ed83aa8e"), false},
		{legacy(1, 1, 0x40, 0, 0, nil), true},
		{legacy(3, 1, 0x40, 0, 0, nil), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := Is(tt.b); got != tt.want {
			t.Errorf("Is(%x) = %v, want %v", tt.b, got, tt.want)
		}
	}
}

// TestHostileOriginalSize checks that a datagram claiming a payload that
// inflates to 64 KiB from a block that could never do so is refused before
// anything is allocated.
func TestHostileOriginalSize(t *testing.T) {
	b := compact(2, 0x41, 16, 0xFFFF, bytes.Repeat([]byte{0xF0}, 16))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(b); !errors.Is(err, ErrCompression) {
			t.Fatalf("Parse = %v, want ErrCompression", err)
		}
	})
	if allocs != 0 {
		t.Errorf("refusing a hostile originalSize allocated %v times", allocs)
	}
}

// A compressed payload that claims a size its type cannot have is refused
// before anything is inflated: a LIST claiming a whole list's size, from a
// block that would inflate that far, costs no allocation.
func TestCompressedClaimCheckedFirst(t *testing.T) {
	full := Message{Header: Header{Type: RoomList, Compressed: true}, Rooms: sampleRooms(MaxRooms)}
	b, err := full.Append(nil)
	if err != nil || !full.Compressed {
		t.Fatal(err)
	}
	b[0], b[1] = byte(ClientToServer), byte(ListRooms)
	fix(b)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(b); !errors.Is(err, ErrCompression) {
			t.Fatalf("Parse = %v, want ErrCompression", err)
		}
	})
	if allocs != 0 {
		t.Errorf("refusing a compressed LIST allocated %v times", allocs)
	}
	if _, err := ParseFrameMax(b, 18); !errors.Is(err, ErrCompression) {
		t.Errorf("ParseFrameMax(18) = %v, want ErrCompression", err)
	}
	if f, err := ParseFrame(b); err != nil || len(f.Payload) != 2+11*MaxRooms {
		t.Errorf("ParseFrame = %d bytes, %v", len(f.Payload), err)
	}
	// As a reply, the same block is refused unread by a server.
	b[0], b[1] = byte(ServerToClient), byte(RoomList)
	fix(b)
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := ParseRequest(b); !errors.Is(err, ErrNotRequest) {
			t.Fatalf("ParseRequest = %v, want ErrNotRequest", err)
		}
	})
	if allocs != 0 {
		t.Errorf("refusing a compressed reply allocated %v times", allocs)
	}
}

// TestInflateCap checks the worst a sender can make a decoder allocate: a
// block long enough to pass the expansion check, claiming the largest
// originalSize, costs one buffer of at most 64 KiB.
func TestInflateCap(t *testing.T) {
	b := compact(2, 0x41, 300, 0xFFFF, bytes.Repeat([]byte{0xF0}, 300))
	const runs = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := Parse(b); !errors.Is(err, ErrCompression) {
			t.Fatalf("Parse = %v, want ErrCompression", err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 64<<10+512 {
		t.Errorf("a hostile compressed datagram allocated %d bytes per parse, want at most 64 KiB", per)
	}
}

func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	for _, m := range variants() {
		if m.Type == RoomList || m.Compressed {
			continue
		}
		b, _ := m.Append(nil)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := m.Append(buf[:0]); err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(b); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: encode and decode allocated %v times", name(m), allocs)
		}
	}
}

// UnmarshalRequest decodes as ParseRequest does, into a Message it
// overwrites whole: nothing of what it held before is left, whatever the
// next datagram is.
func TestUnmarshalRequestOverwrites(t *testing.T) {
	m := Message{Header: Header{Framing: Legacy, Type: RoomList, Seq: 9, Tick: 9, Compressed: true}, RoomID: 9, Port: 9, Rooms: sampleRooms(2)}
	for _, v := range variants() {
		b, err := v.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := ParseRequest(b)
		err = m.UnmarshalRequest(b)
		if err != wantErr || err == nil && !reflect.DeepEqual(m, want) {
			t.Fatalf("%s: UnmarshalRequest gave %+v, %v; ParseRequest %+v, %v", name(v), m, err, want, wantErr)
		}
	}
}

package packet

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// The vectors below are LZ4 blocks this package's encoder did not make, so
// that decoding them checks the codec against LZ4 itself rather than
// against its own encoder. None of them is produced while the tests run.

// cliRooms is a ROOM_LIST of twelve rooms, as a lobby would list them.
var cliRooms = []Room{
	{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: Waiting},
	{ID: 2, Players: 4, MaxPlayers: 4, Port: 30001, State: Playing},
	{ID: 3, Players: 0, MaxPlayers: 4, Port: 30002, State: Waiting},
	{ID: 4, Players: 2, MaxPlayers: 4, Port: 30003, State: Countdown},
	{ID: 5, Players: 4, MaxPlayers: 4, Port: 30004, State: Playing},
	{ID: 6, Players: 1, MaxPlayers: 4, Port: 30005, State: Waiting},
	{ID: 7, Players: 0, MaxPlayers: 4, Port: 30006, State: Waiting},
	{ID: 8, Players: 3, MaxPlayers: 4, Port: 30007, State: Finished},
	{ID: 9, Players: 1, MaxPlayers: 4, Port: 30008, State: Waiting},
	{ID: 10, Players: 4, MaxPlayers: 4, Port: 30009, State: Playing},
	{ID: 11, Players: 0, MaxPlayers: 4, Port: 30010, State: Waiting},
	{ID: 12, Players: 2, MaxPlayers: 4, Port: 30011, State: Countdown},
}

// cliPlain is the 134-byte payload of cliRooms, uncompressed.
const cliPlain = `000c
	00000001 0001 0004 7530 00   00000002 0004 0004 7531 02   00000003 0000 0004 7532 00
	00000004 0002 0004 7533 01   00000005 0004 0004 7534 02   00000006 0001 0004 7535 00
	00000007 0000 0004 7536 00   00000008 0003 0004 7537 03   00000009 0001 0004 7538 00
	0000000a 0004 0004 7539 02   0000000b 0000 0004 753a 00   0000000c 0002 0004 753b 01`

// cliBlock is cliPlain compressed by the reference LZ4 command-line tool
// (lz4 1.9.4, `lz4 -B4 --no-frame-crc -BD`): the one block of its frame,
// taken from after the frame descriptor and the block's size word
// (73 00 00 00: 115 bytes, compressed). It inflates to the 134 bytes of
// cliPlain in 16 sequences, whose 15 matches reach back 11 to 62 bytes.
const cliBlock = `f013000c00000001000100047530000000000200040004753102000000030000000475321600100418
	007175330100000005210010342100110637001035210011072c0010360b0070080003000475373e00
	1109210010381600110a370010393700110b2c00103a1600800c00020004753b01`

// cliDatagrams carry cliBlock as a ROOM_LIST (seq 3) in both framings, with
// payloadSize 0x73, originalSize 0x86 and, in the legacy framing, version
// 0x81 and tick 0x00010203; each CRC computed from the protocol notes.
var cliDatagrams = []struct {
	name string
	hex  string
	h    Header
}{
	{"compact", "0241 0003 0073 0086" + cliBlock + "17dd94db",
		Header{Framing: Compact, Type: RoomList, Seq: 3, Compressed: true}},
	{"legacy", "a35fc81d 81 02 41 0003 00010203 0073 0086" + cliBlock + "9535bec2",
		Header{Framing: Legacy, Type: RoomList, Seq: 3, Tick: 0x00010203, Compressed: true}},
}

func TestLZ4BlockFromTheReferenceEncoder(t *testing.T) {
	plain := wiretest.Hex(t, cliPlain)
	if got := appendRooms(nil, cliRooms); !bytes.Equal(got, plain) {
		t.Fatalf("cliRooms encode as %x, want the payload the block was made from %x", got, plain)
	}
	for _, d := range cliDatagrams {
		b := wiretest.Hex(t, d.hex)
		m, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: Parse: %v", d.name, err)
		}
		if want := (Message{Header: d.h, Rooms: cliRooms}); !reflect.DeepEqual(m, want) {
			t.Errorf("%s: Parse = %+v, want %+v", d.name, m, want)
		}
		f, err := ParseFrame(b)
		if err != nil || !bytes.Equal(f.Payload, plain) || f.Header != d.h || f.Dir != ServerToClient {
			t.Errorf("%s: ParseFrame = %+v, %v; want the plain payload %x", d.name, f, err, plain)
		}
		if !Is(b) {
			t.Errorf("%s: Is = false", d.name)
		}
		// Our own encoder may build another block, or none (it does not
		// shrink this list): what it sends must decode to the same list.
		ours, err := m.Append(nil)
		if err != nil {
			t.Fatalf("%s: Append: %v", d.name, err)
		}
		again, err := Parse(ours)
		again.Compressed = true
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Errorf("%s: our encoding %x parses to %+v, %v; want %+v", d.name, ours, again, err, m)
		}
	}
}

// TestLZ4BlockSizesMustBeExact alters the reference datagram's sizes, with
// the CRC fixed up each time, so that only the block disagrees with them.
func TestLZ4BlockSizesMustBeExact(t *testing.T) {
	block := wiretest.Hex(t, cliBlock)
	n := len(wiretest.Hex(t, cliPlain))
	for _, tt := range []struct {
		name  string
		block []byte
		orig  int
	}{
		{"originalSize one short", block, n - 1},
		{"originalSize one long", block, n + 1},
		{"last byte cut", block[:len(block)-1], n},
		{"last literal doubled", append(bytes.Clone(block), block[len(block)-1]), n},
		{"match offset beyond the output", withByte(block, 36, 0xFF), n}, // 36: the first match's offset, 22 -> 255
	} {
		b := compact(2, byte(RoomList), uint16(len(tt.block)), uint16(tt.orig), tt.block)
		if m, err := Parse(b); !errors.Is(err, ErrCompression) {
			t.Errorf("%s: Parse = %+v, %v; want ErrCompression", tt.name, m, err)
		}
	}
}

func withByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

// The blocks below are written by hand from the LZ4 block format: a block
// is a run of sequences, each a token (high nibble: literal count, low
// nibble: match length minus 4; 15 means more length bytes follow, each
// added, until one below 255), the literals, then a little-endian 16-bit
// offset back into the output and the match length bytes; the last
// sequence is literals only, its last five bytes are literals, and its last
// match starts at least 12 bytes before the end.

// TestLZ4HandWrittenBlocks decodes blocks in the format's simplest forms.
func TestLZ4HandWrittenBlocks(t *testing.T) {
	// A ROOM_LIST of rooms 1-3 (no players, 4 seats, ports 30000-30002,
	// waiting), 35 bytes, in three sequences:
	//   f1 02 + 17 literals + 0b00  literal count 15+2, match of 4+1 at offset 11
	//   10    + 31          + 0b00  one literal, match of 4 at offset 11
	//   80    + 8 literals          the last sequence: literals only
	const handBlock = "f102" + "0003 00000001 0000 0004 7530 00 00000002" + "0b00" +
		"10" + "31" + "0b00" + "80" + "03 0000 0004 7532 00"
	list := wiretest.Hex(t, "0241 0005 0022 0023"+handBlock+"5f0eac89")
	m, err := Parse(list)
	want := Message{Header: Header{Type: RoomList, Seq: 5, Compressed: true}, Rooms: []Room{
		{ID: 1, MaxPlayers: 4, Port: 30000}, {ID: 2, MaxPlayers: 4, Port: 30001}, {ID: 3, MaxPlayers: 4, Port: 30002},
	}}
	if err != nil || !reflect.DeepEqual(m, want) {
		t.Errorf("hand-written ROOM_LIST block: Parse = %+v, %v; want %+v", m, err, want)
	}
	wiretest.EveryPrefixFails(t, list, Parse)

	// Run-length: one literal, then a match at offset 1 that overlaps the
	// bytes it copies (length 4+15+21 = 40), then five literals: 11 bytes
	// that inflate to 46, carried at the framing layer (message type 0x20).
	rle := wiretest.Hex(t, "0120 0007 000b 002e"+"1f 7a 0100 15"+"50 3132333435"+"eccc7df9")
	f, err := ParseFrame(rle)
	if wantP := append(bytes.Repeat([]byte{'z'}, 41), "12345"...); err != nil || !bytes.Equal(f.Payload, wantP) || !f.Compressed {
		t.Errorf("run-length block: ParseFrame = %+v, %v; want payload %q", f, err, wantP)
	}

	// The simplest block of all is one literal-only sequence: token 0x40
	// and the four bytes of a JOIN's room ID. It inflates to fewer bytes
	// than it has, so it can never be a compressed payload here (that is
	// originalSize > payloadSize): claiming its true size, or more than
	// it holds, is refused, while the same four bytes sent plain are a JOIN.
	literals := wiretest.Hex(t, "40 00000001")
	for _, orig := range []uint16{4, 6} {
		b := compact(1, byte(JoinRoom), 5, orig, literals)
		if m, err := Parse(b); !errors.Is(err, ErrCompression) {
			t.Errorf("literal-only block claiming %d bytes: Parse = %+v, %v; want ErrCompression", orig, m, err)
		}
	}
	if m, err := Parse(compact(1, byte(JoinRoom), 4, 4, literals[1:])); err != nil || m.RoomID != 1 || m.Compressed {
		t.Errorf("the literals sent plain: Parse = %+v, %v; want a JOIN of room 1", m, err)
	}
}

package game

import (
	"bytes"
	"errors"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// golden holds every message once, encoded by hand from the layout in the
// package doc (CRCs computed independently).
var golden = []struct {
	name string
	msg  Message
	hex  string
}{
	{"client-hello", Message{Type: ClientHello, Seq: 1}, "0101000100000000329ffdf3"},
	{"client-ready", Message{Type: ClientReady, Seq: 2}, "0103000200000000e2a0960a"},
	{"client-ping", Message{Type: ClientPing, Seq: 3, Token: 0xCAFEBABE}, "0104000300040004cafebabefcb2cf95"},
	{"client-disconnect", Message{Type: ClientDisconnect, Seq: 4}, "010700040000000099af47b9"},
	{"server-hello", Message{Type: ServerHello, Seq: 1, RoomID: 7, Slot: 1, MaxPlayers: 4}, "02100001000600060000000701044eaf6b1d"},
	{"server-join-deny", Message{Type: ServerJoinDeny, Seq: 2, Deny: DenyFull}, "0212000200010001016d09cdc7"},
	{"server-pong", Message{Type: ServerPong, Seq: 3, Token: 0xCAFEBABE}, "0213000300040004cafebabe0ce1cc2d"},
	{"game-start", Message{Type: GameStart, Seq: 5, Seconds: 120}, "02150005000200020078748aeed2"},
	{"game-end", Message{Type: GameEnd, Seq: 6, End: EndTimeUp}, "02160006000100010172d2812b"},
	{"countdown-tick", Message{Type: CountdownTick, Seq: 4, Seconds: 3}, "02200004000100010392b61bf6"},
}

func TestGolden(t *testing.T) {
	for _, g := range golden {
		t.Run(g.name, func(t *testing.T) {
			want := wiretest.Hex(t, g.hex)
			got, err := g.msg.Append(nil)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Append = %x, want %x", got, want)
			}
			if len(got) > MaxLen {
				t.Fatalf("%d bytes, more than MaxLen %d", len(got), MaxLen)
			}
			m, err := Parse(want)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m != g.msg {
				t.Fatalf("Parse = %+v, want %+v", m, g.msg)
			}
			if !Is(want) {
				t.Fatal("Is = false")
			}
		})
	}
}

func TestAppendAppends(t *testing.T) {
	prefix := []byte("prefix")
	m := Message{Type: ServerPong, Seq: 9, Token: 42}
	got, err := m.Append(bytes.Clone(prefix))
	if err != nil {
		t.Fatal(err)
	}
	alone, _ := m.Append(nil)
	if !bytes.Equal(got, append(prefix, alone...)) {
		t.Fatalf("Append to a prefix = %x", got)
	}
}

func TestRoundTripExtremes(t *testing.T) {
	for _, m := range []Message{
		{Type: ClientPing, Seq: 0xFFFF, Token: 0xFFFFFFFF},
		{Type: ServerHello, RoomID: 0xFFFFFFFF, Slot: 0xFF, MaxPlayers: 0xFF},
		{Type: ServerJoinDeny, Deny: 0xFF},
		{Type: GameStart, Seconds: 0xFFFF},
		{Type: GameEnd, End: 0},
		{Type: CountdownTick, Seconds: 0xFF},
	} {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatalf("Append(%+v): %v", m, err)
		}
		got, err := Parse(b)
		if err != nil || got != m {
			t.Fatalf("Parse(Append(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	for _, tc := range []struct {
		m    Message
		want error
	}{
		{Message{Type: 0x02}, ErrType},
		{Message{Type: Type(packet.ListRooms)}, ErrType},
		{Message{Type: CountdownTick, Seconds: 256}, ErrRange},
	} {
		b, err := tc.m.Append([]byte{1, 2})
		if !errors.Is(err, tc.want) || len(b) != 2 {
			t.Errorf("Append(%+v) = %x, %v; want %v and b untouched", tc.m, b, err, tc.want)
		}
	}
}

// frame encodes a payload under any type and direction, to build
// datagrams that are well framed but wrong for this protocol.
func frame(f packet.Framing, dir packet.Direction, typ byte, payload string) []byte {
	return packet.AppendFrame(nil, packet.Header{Framing: f, Type: packet.Type(typ), Seq: 1}, dir, []byte(payload))
}

func TestParseMalformed(t *testing.T) {
	badCRC := wiretest.Hex(t, golden[0].hex)
	badCRC[len(badCRC)-1] ^= 1
	tooLong := append(wiretest.Hex(t, golden[0].hex), 0)
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, packet.ErrShort},
		{"bad crc", badCRC, packet.ErrCRC},
		{"trailing byte", tooLong, packet.ErrLength},
		{"packet type 3", frameRaw(3, 0x01, ""), packet.ErrPacketType},
		{"legacy framing", frame(packet.Legacy, packet.ClientToServer, 0x01, ""), ErrFraming},
		{"unknown type", frame(packet.Compact, packet.ClientToServer, 0x02, ""), ErrType},
		{"lobby type", frame(packet.Compact, packet.ClientToServer, 0x40, ""), ErrType},
		{"hello from the server side", frame(packet.Compact, packet.ServerToClient, 0x01, ""), ErrDirection},
		{"pong from the client side", frame(packet.Compact, packet.ClientToServer, 0x13, "abcd"), ErrDirection},
		{"hello with payload", frame(packet.Compact, packet.ClientToServer, 0x01, "x"), ErrSize},
		{"short ping", frame(packet.Compact, packet.ClientToServer, 0x04, "abc"), ErrSize},
		{"long ping", frame(packet.Compact, packet.ClientToServer, 0x04, "abcde"), ErrSize},
		{"short server hello", frame(packet.Compact, packet.ServerToClient, 0x10, "abcde"), ErrSize},
		{"empty tick", frame(packet.Compact, packet.ServerToClient, 0x20, ""), ErrSize},
		{"long game start", frame(packet.Compact, packet.ServerToClient, 0x15, "abc"), ErrSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse(%x) = %+v, %v; want %v", tc.b, m, err, tc.want)
			}
			if m != (Message{}) {
				t.Fatalf("Parse returned %+v with its error", m)
			}
			if Reason(err) == "unknown" || Reason(err) == "" {
				t.Fatalf("Reason(%v) = %q", err, Reason(err))
			}
		})
	}
}

// frameRaw builds a compact datagram with any packetType byte.
func frameRaw(packetType, typ byte, payload string) []byte {
	b := frame(packet.Compact, packet.ClientToServer, typ, payload)
	b[0] = packetType
	packet.SetSeq(b, 1) // recomputes the CRC
	return b
}

func TestEveryTruncatedPrefixFails(t *testing.T) {
	for _, g := range golden {
		b := wiretest.Hex(t, g.hex)
		for n := range len(b) {
			if m, err := Parse(b[:n]); err == nil {
				t.Errorf("%s: Parse of %d-byte prefix = %+v, want an error", g.name, n, m)
			}
			if Is(b[:n]) {
				t.Errorf("%s: Is(%d-byte prefix) = true", g.name, n)
			}
		}
	}
}

func TestTypeString(t *testing.T) {
	if s := ServerJoinDeny.String(); s != "SERVER_JOIN_DENY" {
		t.Errorf("ServerJoinDeny.String() = %q", s)
	}
	if s := Type(0x41).String(); s != "Type(0x41)" {
		t.Errorf("Type(0x41).String() = %q", s)
	}
	if d := Type(0x41).Dir(); d != 0 {
		t.Errorf("Type(0x41).Dir() = %v", d)
	}
}

func FuzzParse(f *testing.F) {
	for _, g := range golden {
		f.Add(wiretest.Hex(f, g.hex))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			if m != (Message{}) {
				t.Fatalf("Parse returned %+v with error %v", m, err)
			}
			return
		}
		if !Is(b) {
			t.Fatalf("Parse accepted %x but Is rejects it", b)
		}
		out, err := m.Append(nil)
		if err != nil {
			t.Fatalf("Append(%+v) of a parsed message: %v", m, err)
		}
		again, err := Parse(out)
		if err != nil || again != m {
			t.Fatalf("round trip: %+v -> %x -> %+v, %v", m, out, again, err)
		}
		// Only a compressed input may differ from its re-encoding.
		if f, _ := packet.ParseFrame(b); !f.Compressed && !bytes.Equal(out, b) {
			t.Fatalf("re-encoding %x gives %x", b, out)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for _, g := range []int{0, 2, 4} {
		pkt := wiretest.Hex(b, golden[g].hex)
		b.Run(golden[g].name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("garbage", func(b *testing.B) {
		pkt := wiretest.Hex(b, golden[2].hex)
		pkt[len(pkt)-1] ^= 1
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(pkt); err == nil {
				b.Fatal("parsed garbage")
			}
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, MaxLen)
	for _, g := range []int{0, 4} {
		m := golden[g].msg
		b.Run(golden[g].name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Append(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

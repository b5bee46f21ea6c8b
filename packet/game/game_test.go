package game

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

type goldenMsg struct {
	name string
	msg  Message
	hex  string
}

// golden holds every message once, encoded by hand from the layout in the
// package doc (CRCs computed independently).
var golden = []goldenMsg{
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
	{"player-left", Message{Type: PlayerLeft, Seq: 7, Slot: 2}, "021c00070001000102b1471ffc"},
	{"client-ping-empty", Message{Type: ClientPing, Seq: 3, NoToken: true}, "01040003000000001a678134"},
	{"server-pong-empty-ping", Message{Type: ServerPong, Seq: 3}, "02130003000400040000000098b8442c"},

	// The original game's framing, as its client sends and expects it.
	{"legacy-client-hello", legacy(ClientHello, 0, 0), "a35fc81d0101010000000000000000000055e9bd29"},
	{"legacy-client-join-request", legacy(ClientJoinRequest, 1, 0), "a35fc81d01010200010000000000000000db70cf6b"},
	{"legacy-client-join-request-user", Message{Framing: packet.Legacy, Type: ClientJoinRequest, Seq: 1, HasUser: true, UserID: 42},
		"a35fc81d01010200010000000000050005000000002af3456d94"},
	{"legacy-client-ping", legacy(ClientPing, 2, 7), "a35fc81d01010400020000000700000000b868e5fd"},
	{"legacy-client-ready", legacy(ClientReady, 1000, 0), "a35fc81d01010303e80000000000000000675c9c18"},
	{"legacy-client-disconnect", legacy(ClientDisconnect, 0, 0), "a35fc81d01010700000000000000000000bd5c776a"},
	// Player 1 firing at x 100, y 50, angle 0.
	{"legacy-client-input", Message{Framing: packet.Legacy, Type: ClientInput, Seq: 7, Input: [LegacyInputLen]byte{
		0, 0, 0, 1, 0, 0x10, 0x42, 0xc8, 0, 0, 0x42, 0x48, 0, 0, 0, 0, 0, 0}},
		"a35fc81d0101050007000000000012001200000001001042c800004248000000000000cdb8f522"},
	{"legacy-server-hello", legacy(ServerHello, 0, 0), "a35fc81d010210000000000000000000004d0f74d2"},
	{"legacy-server-join-accept", legacy(ServerJoinAccept, 1, 0), "a35fc81d010211000100000000000000009bfabf51"},
	{"legacy-server-join-deny", legacy(ServerJoinDeny, 1, 0), "a35fc81d010212000100000000000000000218d950"},
	{"legacy-server-pong", legacy(ServerPong, 2, 7), "a35fc81d01021300020000000700000000483be645"},
	{"legacy-all-ready", legacy(AllReady, 5, 0), "a35fc81d01021f000500000000000000009460c55b"},
	{"legacy-countdown-tick", Message{Framing: packet.Legacy, Type: CountdownTick, Seq: 6, Seconds: 3},
		"a35fc81d01022000060000000000010001039b0b12dc"},
	{"legacy-game-start", legacy(GameStart, 9, 0), "a35fc81d0102150009000000000000000090fb6ecb"},
	{"legacy-game-end", Message{Framing: packet.Legacy, Type: GameEnd, Seq: 10, End: EndTimeUp},
		"a35fc81d010216000a0000000000020002010087aa7c5e"},
	{"legacy-game-end-cut-short", legacy(GameEnd, 11, 0), "a35fc81d010216000b000000000002000200005f3f92df"},
}

func legacy(t Type, seq uint16, tick uint32) Message {
	return Message{Framing: packet.Legacy, Type: t, Seq: seq, Tick: tick}
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

// The original client fills in originalSize only when it compresses: its
// inputs carry 0 there, and read as the same input.
func TestOriginalInputParses(t *testing.T) {
	b := wiretest.Hex(t, "a35fc81d0101050007000000000012000000000001001042c800004248000000000000aa4ec8d9")
	m, err := Parse(b)
	if want := golden[slices.IndexFunc(golden, func(g goldenMsg) bool { return g.name == "legacy-client-input" })].msg; err != nil || m != want {
		t.Fatalf("Parse = %+v, %v; want %+v", m, err, want)
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
		{Type: PlayerLeft, Slot: 0xFF},
		{Type: ClientPing, Seq: 0xFFFF, NoToken: true},
		{Framing: packet.Legacy, Type: ClientPing, Seq: 0xFFFF, Tick: 0xFFFFFFFF},
		{Framing: packet.Legacy, Type: ClientJoinRequest, HasUser: true, Spectator: true, UserID: 0xFFFFFFFF},
		{Framing: packet.Legacy, Type: CountdownTick, Seconds: 0xFF},
		{Framing: packet.Legacy, Type: GameEnd, End: EndTimeUp},
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
		{Message{Framing: packet.Legacy, Type: CountdownTick, Seconds: 256}, ErrRange},
		{Message{Framing: 2, Type: ClientHello}, ErrFraming},
		{Message{Type: ClientJoinRequest}, ErrType},
		{Message{Type: ServerJoinAccept}, ErrType},
		{Message{Type: AllReady}, ErrType},
		{Message{Type: ClientInput}, ErrType},
		{Message{Framing: packet.Legacy, Type: 0x06}, ErrType},
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
		{"unknown type", frame(packet.Compact, packet.ClientToServer, 0x05, ""), ErrType},
		{"join request compact", frame(packet.Compact, packet.ClientToServer, 0x02, ""), ErrType},
		{"all ready compact", frame(packet.Compact, packet.ServerToClient, 0x1F, ""), ErrType},
		{"legacy acknowledge", frame(packet.Legacy, packet.ClientToServer, 0x06, ""), ErrType},
		{"legacy input of 3 bytes", frame(packet.Legacy, packet.ClientToServer, 0x05, "abc"), ErrSize},
		{"compact input", frame(packet.Compact, packet.ClientToServer, 0x05, "0123456789abcdefgh"), ErrType},
		{"legacy lobby type", frame(packet.Legacy, packet.ClientToServer, 0x40, ""), ErrType},
		{"legacy accept from the client side", frame(packet.Legacy, packet.ClientToServer, 0x11, ""), ErrDirection},
		{"legacy hello with payload", frame(packet.Legacy, packet.ClientToServer, 0x01, "x"), ErrSize},
		{"legacy ping with token", frame(packet.Legacy, packet.ClientToServer, 0x04, "abcd"), ErrSize},
		{"legacy join of 4 bytes", frame(packet.Legacy, packet.ClientToServer, 0x02, "\x00abc"), ErrSize},
		{"legacy join of 6 bytes", frame(packet.Legacy, packet.ClientToServer, 0x02, "\x00abcde"), ErrSize},
		{"legacy join spectator 2", frame(packet.Legacy, packet.ClientToServer, 0x02, "\x02\x00\x00\x00\x01"), ErrValue},
		{"legacy compact-shaped server hello", frame(packet.Legacy, packet.ServerToClient, 0x10, "\x00\x00\x00\x07\x01\x04"), ErrSize},
		{"legacy compact-shaped game end", frame(packet.Legacy, packet.ServerToClient, 0x16, "\x01"), ErrSize},
		{"legacy game end with scores", frame(packet.Legacy, packet.ServerToClient, 0x16, "\x01\x01\x00\x00\x00\x01\x00\x00\x00\x09"), ErrSize},
		{"legacy game end counting missing scores", frame(packet.Legacy, packet.ServerToClient, 0x16, "\x01\x01"), ErrSize},
		{"legacy game end victory 2", frame(packet.Legacy, packet.ServerToClient, 0x16, "\x02\x00"), ErrValue},
		{"legacy empty tick", frame(packet.Legacy, packet.ServerToClient, 0x20, ""), ErrSize},
		{"legacy start with seconds", frame(packet.Legacy, packet.ServerToClient, 0x15, "\x00\x78"), ErrSize},
		{"legacy bad magic", legacyBadMagic(t), packet.ErrMagic},
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

// legacyBadMagic is a legacy hello whose magic is off by one bit.
func legacyBadMagic(t *testing.T) []byte {
	b := wiretest.Hex(t, "a35fc81d0101010000000000000000000055e9bd29")
	b[2] ^= 1
	packet.SetSeq(b, 0) // recomputes the CRC
	return b
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

// A legacy message carries fewer fields than a compact one: encoding
// drops the others, and a GAME_END keeps only whether time ran out.
func TestLegacyCarriesLess(t *testing.T) {
	for _, tc := range []struct{ in, out Message }{
		{Message{Framing: packet.Legacy, Type: ServerHello, RoomID: 7, Slot: 1, MaxPlayers: 4},
			Message{Framing: packet.Legacy, Type: ServerHello}},
		{Message{Framing: packet.Legacy, Type: ServerJoinDeny, Deny: DenyFull}, Message{Framing: packet.Legacy, Type: ServerJoinDeny}},
		{Message{Framing: packet.Legacy, Type: ServerPong, Tick: 9, Token: 5}, Message{Framing: packet.Legacy, Type: ServerPong, Tick: 9}},
		{Message{Framing: packet.Legacy, Type: GameStart, Seconds: 120}, Message{Framing: packet.Legacy, Type: GameStart}},
		{Message{Framing: packet.Legacy, Type: GameEnd, End: EndStopped}, Message{Framing: packet.Legacy, Type: GameEnd}},
		{Message{Framing: packet.Legacy, Type: GameEnd, End: EndAbandoned}, Message{Framing: packet.Legacy, Type: GameEnd}},
		{Message{Framing: packet.Legacy, Type: ClientJoinRequest, Spectator: true, UserID: 3},
			Message{Framing: packet.Legacy, Type: ClientJoinRequest}},
		{Message{Type: ClientPing, Token: 5, NoToken: true}, Message{Type: ClientPing, NoToken: true}},
		{Message{Type: ServerHello, Tick: 5, RoomID: 1}, Message{Type: ServerHello, RoomID: 1}},
	} {
		b, err := tc.in.Append(nil)
		if err != nil {
			t.Fatalf("Append(%+v): %v", tc.in, err)
		}
		if got, err := Parse(b); err != nil || got != tc.out {
			t.Errorf("Parse(Append(%+v)) = %+v, %v; want %+v", tc.in, got, err, tc.out)
		}
	}
}

// The original client's waiting-room heartbeat and its disconnect on
// quitting are sent without a CRC: they are malformed, like any datagram
// that lacks one.
func TestLegacyWithoutCRCFails(t *testing.T) {
	b := wiretest.Hex(t, "a35fc81d01010700000000000000000000bd5c776a")
	if m, err := Parse(b[:packet.LegacyHeaderLen]); !errors.Is(err, packet.ErrShort) {
		t.Fatalf("Parse of a CRC-less disconnect = %+v, %v; want ErrShort", m, err)
	}
}

func TestIsRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"legacy acknowledge":    frame(packet.Legacy, packet.ClientToServer, 0x06, ""),
		"compact join request":  frame(packet.Compact, packet.ClientToServer, 0x02, ""),
		"legacy hello as reply": frame(packet.Legacy, packet.ServerToClient, 0x01, ""),
		"lobby list":            frame(packet.Compact, packet.ClientToServer, 0x40, ""),
		"teeworlds":             []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x05"),
	} {
		if Is(b) {
			t.Errorf("Is(%s %x) = true", name, b)
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
	for _, tc := range []struct {
		t          Type
		compact, l bool
	}{
		{ClientHello, true, true}, {ClientJoinRequest, false, true}, {AllReady, false, true},
		{ServerJoinAccept, false, true}, {CountdownTick, true, true}, {ClientInput, false, true}, {0x06, false, false},
		{PlayerLeft, true, false},
	} {
		if tc.t.In(packet.Compact) != tc.compact || tc.t.In(packet.Legacy) != tc.l || tc.t.In(2) {
			t.Errorf("%v.In: compact %v, legacy %v", tc.t, tc.t.In(packet.Compact), tc.t.In(packet.Legacy))
		}
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

// FuzzAppend builds messages from any fields: whatever Append accepts,
// Parse must read back with the same framing, type, sequence and tick, and
// re-encode to the same bytes.
func FuzzAppend(f *testing.F) {
	for _, g := range golden {
		m := g.msg
		f.Add(uint8(m.Framing), uint8(m.Type), m.Seq, m.Tick, m.Token|m.RoomID|m.UserID, m.Seconds, m.Slot, uint8(m.End))
	}
	f.Fuzz(func(t *testing.T, framing, typ uint8, seq uint16, tick, word uint32, half uint16, small, bits uint8) {
		m := Message{Framing: packet.Framing(framing), Type: Type(typ), Seq: seq, Tick: tick,
			RoomID: word, Slot: small, MaxPlayers: ^small, Deny: DenyReason(small), End: EndReason(bits),
			Seconds: half, Token: word, NoToken: bits&1 != 0, HasUser: bits&2 != 0, Spectator: bits&4 != 0, UserID: word}
		b, err := m.Append(nil)
		if err != nil {
			if !m.Type.In(m.Framing) || m.Type == CountdownTick && m.Seconds > 0xFF {
				return
			}
			t.Fatalf("Append(%+v): %v", m, err)
		}
		if len(b) > MaxLen || !Is(b) {
			t.Fatalf("Append(%+v) = %x: %d bytes, Is %v", m, b, len(b), Is(b))
		}
		got, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Append(%+v) = %x): %v", m, b, err)
		}
		wantTick := tick
		if m.Framing == packet.Compact {
			wantTick = 0
		}
		if got.Framing != m.Framing || got.Type != m.Type || got.Seq != seq || got.Tick != wantTick {
			t.Fatalf("Parse(Append(%+v)) = %+v", m, got)
		}
		again, err := got.Append(nil)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %+v gives %x, %v; want %x", got, again, err, b)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for _, g := range []int{0, 2, 4, goldenIndex(b, "legacy-client-hello"), goldenIndex(b, "legacy-game-end")} {
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

// goldenIndex is the index of the golden message called name.
func goldenIndex(tb testing.TB, name string) int {
	for i, g := range golden {
		if g.name == name {
			return i
		}
	}
	tb.Fatalf("no golden message %q", name)
	return 0
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, MaxLen)
	for _, g := range []int{0, 4, goldenIndex(b, "legacy-server-pong"), goldenIndex(b, "legacy-game-end")} {
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

// TestDocumentedGoldens checks that every datagram docs/game-protocol.md
// shows is one of this file's golden messages, so the two cannot drift.
func TestDocumentedGoldens(t *testing.T) {
	doc, err := os.ReadFile("../../docs/game-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, g := range golden {
		known[g.hex] = true
	}
	shown := regexp.MustCompile("\\| `([0-9a-f]{24,})` \\|").FindAllSubmatch(doc, -1)
	if len(shown) < 20 {
		t.Fatalf("only %d golden datagrams in the document", len(shown))
	}
	for _, m := range shown {
		if !known[string(m[1])] {
			t.Errorf("the document shows %s, which is no golden message here", m[1])
		}
	}
}

// A compressed datagram claiming more than any game message holds is
// refused before anything is inflated: a flood of them costs a room what
// plain garbage costs.
func TestCompressedClaimRefusedFirst(t *testing.T) {
	payload := bytes.Repeat([]byte{0}, 60000)
	b := packet.AppendFrame(nil, packet.Header{Framing: packet.Legacy, Type: packet.Type(ClientHello), Compressed: true}, packet.ClientToServer, payload)
	if len(b) > 1000 {
		t.Fatalf("the block did not shrink: %d bytes", len(b))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(b); !errors.Is(err, packet.ErrCompression) {
			t.Fatalf("Parse = %v, want ErrCompression", err)
		}
	})
	if allocs != 0 {
		t.Errorf("refusing it allocated %v times", allocs)
	}
}

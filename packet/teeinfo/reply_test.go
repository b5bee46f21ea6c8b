package teeinfo

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

const pad = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"

// Replies captured from DDNet-Server 16.4 (Debian ddnet-server) started
// with sv_name "Foyer test", answering the requests of TestRequestGolden
// (token 7, extra token 0x1234).
const (
	ddnetVanilla = pad + "inf3" + "7\x00" + "0.6.4, 16.4\x00" + "Foyer test [0/64]\x00" +
		"Tutorial\x00" + "TestDDraceNetwor\x00" + "0\x00" + "0\x00" + "16\x00" + "0\x00" + "16\x00"
	ddnetExtended = pad + "iext" + "1192967\x00" + "0.6.4, 16.4\x00" + "Foyer test\x00" +
		"Tutorial\x00" + "-1924373370\x00" + "1082711\x00" + "TestDDraceNetwor\x00" +
		"0\x00" + "0\x00" + "64\x00" + "0\x00" + "64\x00" + "\x00"
)

// Hand-built replies with players, field by field from the layout.
const (
	goldenVanilla = pad + "inf3" + "42\x00" + "0.6.4\x00" + "Room 1\x00" + "arena\x00" + "DM\x00" +
		"1\x00" + "1\x00" + "8\x00" + "2\x00" + "8\x00" +
		"nameless\x00" + "clan\x00" + "276\x00" + "12\x00" + "1\x00" +
		"watcher\x00" + "\x00" + "-1\x00" + "-3\x00" + "0\x00"
	goldenExtended = pad + "iext" + "4660\x00" + "0.6.4\x00" + "Room 1\x00" + "arena\x00" +
		"305419896\x00" + "5000\x00" + "DM\x00" + "0\x00" + "1\x00" + "8\x00" + "2\x00" + "8\x00" + "\x00" +
		"nameless\x00" + "clan\x00" + "276\x00" + "12\x00" + "1\x00" + "\x00"
	goldenMore = pad + "iex+" + "4660\x00" + "1\x00" + "\x00" +
		"watcher\x00" + "\x00" + "-1\x00" + "-3\x00" + "0\x00" + "\x00"
)

var goldenPlayers = []Player{
	{Name: "nameless", Clan: "clan", Country: 276, Score: 12, IsPlayer: true},
	{Name: "watcher", Country: -1, Score: -3},
}

func TestReplyGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire string
		want Reply
	}{
		{"ddnet vanilla", ddnetVanilla, Reply{Kind: Vanilla, Info: Info{
			Token: 7, Version: "0.6.4, 16.4", Name: "Foyer test [0/64]", Map: "Tutorial",
			GameType: "TestDDraceNetwor", MaxPlayers: 16, MaxClients: 16,
		}}},
		{"ddnet extended", ddnetExtended, Reply{Kind: Extended, Info: Info{
			Token: 0x123407, Version: "0.6.4, 16.4", Name: "Foyer test", Map: "Tutorial",
			MapCRC: -1924373370, MapSize: 1082711, GameType: "TestDDraceNetwor", MaxPlayers: 64, MaxClients: 64,
		}}},
		{"vanilla", goldenVanilla, Reply{Kind: Vanilla, Info: Info{
			Token: 42, Version: "0.6.4", Name: "Room 1", Map: "arena", GameType: "DM", Flags: FlagPassword,
			NumPlayers: 1, MaxPlayers: 8, NumClients: 2, MaxClients: 8, Players: goldenPlayers,
		}}},
		{"extended", goldenExtended, Reply{Kind: Extended, Info: Info{
			Token: 0x1234, Version: "0.6.4", Name: "Room 1", Map: "arena", MapCRC: 0x12345678, MapSize: 5000,
			GameType: "DM", NumPlayers: 1, MaxPlayers: 8, NumClients: 2, MaxClients: 8, Players: goldenPlayers[:1],
		}}},
		{"more", goldenMore, Reply{Kind: More, PacketNo: 1, Info: Info{Token: 0x1234, Players: goldenPlayers[1:]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply([]byte(tc.wire))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parsed %+v\nwant   %+v", got, tc.want)
			}
			if out := tc.want.Append([]byte{1}); string(out[1:]) != tc.wire {
				t.Fatalf("Append = %q\nwant     %q", out[1:], tc.wire)
			}
		})
	}
}

func TestReplyCleansText(t *testing.T) {
	long := strings.Repeat("é", MaxString) // 2 bytes a rune
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"  lead", "lead"},
		{"\t\nx\x01y", "x y"},
		{"bad\xffutf8\xc3", "bad\uFFFDutf8\uFFFD"},
		{long, long[:MaxString-1]},
	} {
		in := Info{Name: tc.in}
		rep := Reply{Kind: Vanilla, Info: in}
		got, err := ParseReply(rep.Append(nil))
		if err != nil || got.Info.Name != tc.want {
			t.Errorf("name %q -> %q, %v; want %q", tc.in, got.Info.Name, err, tc.want)
		}
		if len(tc.in) <= MaxString {
			raw := []byte(pad + "inf3" + "0\x00" + "\x00" + tc.in + "\x00" + "\x00\x00" + "0\x000\x000\x000\x000\x00")
			if got, err := ParseReply(raw); err != nil || got.Info.Name != tc.want {
				t.Errorf("wire name %q -> %q, %v; want %q", tc.in, got.Info.Name, err, tc.want)
			}
		}
	}
}

func TestReplyMalformed(t *testing.T) {
	vanillaHead := pad + "inf3" + "0\x00" + "v\x00" + "n\x00" + "m\x00" + "g\x00" + "0\x000\x000\x000\x000\x00"
	for _, tc := range []struct {
		name string
		wire string
		want error
	}{
		{"short", pad + "inf", ErrTruncated},
		{"padding", "\xfe" + pad[1:] + "inf3" + "0\x00", ErrHeader},
		{"type", pad + "inf2" + "0\x00", ErrType},
		{"request", pad + "gie3" + "\x00", ErrType},
		{"no token", pad + "inf3", ErrTruncated},
		{"unterminated", pad + "inf3" + "0\x00" + "version", ErrTruncated},
		{"long string", pad + "inf3" + "0\x00" + strings.Repeat("v", MaxString+1) + "\x00", ErrString},
		{"long unterminated", pad + "inf3" + "0\x00" + strings.Repeat("v", MaxString+1), ErrString},
		{"int letters", pad + "inf3" + "7a\x00", ErrInt},
		{"int empty", pad + "inf3" + "\x00", ErrInt},
		{"int minus only", pad + "inf3" + "-\x00", ErrInt},
		{"int plus", pad + "inf3" + "+7\x00", ErrInt},
		{"int space", pad + "inf3" + " 7\x00", ErrInt},
		{"int overflow", pad + "inf3" + "2147483648\x00", ErrInt},
		{"int long", pad + "inf3" + "00000000001\x00", ErrInt},
		{"partial player", vanillaHead + "name\x00clan\x00" + "0\x00", ErrTruncated},
		{"player bad int", vanillaHead + "name\x00clan\x00" + "x\x000\x001\x00", ErrInt},
		{"extended no reserved", pad + "iext" + "0\x00" + "v\x00n\x00m\x00" + "0\x000\x00" + "g\x00" + "0\x000\x000\x000\x000\x00", ErrTruncated},
		{"more packet 0", pad + "iex+" + "0\x00" + "0\x00" + "\x00", ErrPacketNo},
		{"more packet 64", pad + "iex+" + "0\x00" + "64\x00" + "\x00", ErrPacketNo},
		{"too many players", vanillaHead + strings.Repeat("\x00\x000\x000\x000\x00", MaxPlayers+1), ErrTooManyPlayers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, err := ParseReply([]byte(tc.wire)); !errors.Is(err, tc.want) {
				t.Fatalf("ParseReply = %+v, %v; want %v", r, err, tc.want)
			}
		})
	}
}

// Clients run to the end of a reply, so a prefix that ends right after
// the fixed fields or after a whole client is a valid, shorter reply;
// every other prefix must fail.
func TestReplyTruncated(t *testing.T) {
	for _, wire := range []string{goldenVanilla, goldenExtended, goldenMore} {
		rep, err := ParseReply([]byte(wire))
		if err != nil {
			t.Fatal(err)
		}
		valid := map[int]int{} // prefix length -> players it holds
		short := rep
		for n := len(rep.Info.Players); n >= 0; n-- {
			short.Info.Players = rep.Info.Players[:n]
			valid[len(short.Append(nil))] = n
		}
		for n := range len(wire) {
			got, err := ParseReply([]byte(wire[:n]))
			if players, ok := valid[n]; ok {
				if err != nil || len(got.Info.Players) != players {
					t.Fatalf("%s prefix %d: %d players, %v", rep.Kind, n, len(got.Info.Players), err)
				}
				continue
			}
			if err == nil {
				t.Fatalf("%s prefix %d parsed: %+v", rep.Kind, n, got)
			}
		}
	}
}

func TestKindString(t *testing.T) {
	if Vanilla.String() != "inf3" || Extended.String() != "iext" || More.String() != "iex+" || Kind(0).String() != "unknown" {
		t.Fatal("kind names")
	}
	if out := (&Reply{}).Append([]byte{1}); !bytes.Equal(out, []byte{1}) {
		t.Fatalf("Append of no kind = %q", out)
	}
}

func FuzzReply(f *testing.F) {
	for _, s := range []string{ddnetVanilla, ddnetExtended, goldenVanilla, goldenExtended, goldenMore} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := ParseReply(b)
		if err != nil {
			return
		}
		out := rep.Append(nil)
		again, err := ParseReply(out)
		if err != nil || !reflect.DeepEqual(again, rep) {
			t.Fatalf("round trip:\n in %q\nout %q\n%+v\n%+v, %v", b, out, rep, again, err)
		}
		// Once cleaned, the encoding is canonical.
		if out2 := again.Append(nil); !bytes.Equal(out2, out) {
			t.Fatalf("second encoding differs:\n%q\n%q", out, out2)
		}
	})
}

func BenchmarkParseReply(b *testing.B) {
	in := benchInfo(16)
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"vanilla16", in.AppendVanilla(nil)},
		{"ddnet-extended", []byte(ddnetExtended)},
	} {
		b.Run(tc.name, func(b *testing.B) { wiretest.BenchParse(b, tc.wire, ParseReply) })
	}
}

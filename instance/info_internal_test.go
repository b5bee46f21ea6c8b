package instance

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// namedGame is a Game that describes itself with fixed names.
type namedGame struct{ players []string }

func (namedGame) Start(context.Context, Assignment, net.PacketConn, Reporter) error { return nil }
func (namedGame) Stop(context.Context) error                                        { return nil }
func (g namedGame) Describe(info *BrowserInfo) {
	info.Map, info.GameType = "dm1", "ctf"
	info.Players = append(info.Players, g.players...)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// answerer returns an answerer for a room of maxPlayers with players
// connected, describing itself with g.
func answerer(maxPlayers, players int, g Game) *infoAnswerer {
	rep := newReporter(nil)
	for range players {
		rep.PlayerConnected(netip.MustParseAddr("192.0.2.1"))
	}
	ia := newInfoAnswerer(Assignment{RoomID: 3, MaxPlayers: maxPlayers}, rep, g)
	ia.limit = newLimiter()
	return ia
}

// assemble parses an answer back into one Info.
func assemble(t testing.TB, pkts [][]byte) teeinfo.Info {
	t.Helper()
	var asm teeinfo.Assembler
	for i, p := range pkts {
		r, err := teeinfo.ParseReply(p)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if len(p) > teeinfo.MaxDatagram {
			t.Fatalf("datagram %d is %d bytes", i, len(p))
		}
		done, err := asm.Add(&r)
		if err != nil || done != (i == len(pkts)-1) {
			t.Fatalf("datagram %d of %d: complete %v, %v", i+1, len(pkts), done, err)
		}
	}
	return asm.Info()
}

func TestIsConnless(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"\xff\xff\xff\xff\xff\xff", true},
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie", true},
		{"xe\x00\x00\x00\x00\xff\xff\xff\xff", true},
		{"xe\x12\x34\x00\x00\xff\xff\xff\xffgie3\x01", true},
		{"\xff\xff\xff\xff\xff", false},
		{"xe\x00\x00\x00\x00\xff\xff\xff", false},
		{"xe\x00\x00\x00\x00\xff\xff\xff\x00", false},
		{"xerxes and more", false},
		{"\x01\x01\x00\x01\x00\x00\x00\x00\x32\x9f\xfd\xf3", false}, // a game hello
		{"", false},
	} {
		if got := isConnless([]byte(tc.b)); got != tc.want {
			t.Errorf("isConnless(%q) = %v, want %v", tc.b, got, tc.want)
		}
	}
}

func TestReplyDefaultsAndNames(t *testing.T) {
	ia := answerer(8, 3, namedGame{players: []string{"", "bob"}})
	pkts := ia.reply(teeinfo.Request{Extended: true, ExtraToken: 1, Token: 2}.Append(nil), netip.MustParseAddr("192.0.2.9"), t0)
	in := assemble(t, pkts)
	if in.Token != 0x102 || in.Name != "Foyer room 3" || in.Map != "dm1" || in.GameType != "ctf" ||
		in.NumPlayers != 3 || in.MaxPlayers != 8 || len(in.Players) != 3 ||
		in.Players[0].Name != "player 1" || in.Players[1].Name != "bob" || in.Players[2].Name != "player 3" {
		t.Fatalf("answer %+v", in)
	}
	for _, p := range in.Players {
		if p.Country != -1 || !p.IsPlayer || p.Clan != "" || p.Score != 0 {
			t.Fatalf("player %+v", p)
		}
	}
	// A game that names more players than it reported lists them all.
	ia = answerer(2, 0, namedGame{players: []string{"a", "b", "c"}})
	in = assemble(t, ia.reply(teeinfo.Request{Token: 1}.Append(nil), netip.MustParseAddr("192.0.2.9"), t0))
	if in.NumPlayers != 3 || in.MaxPlayers != 3 || len(in.Players) != 3 {
		t.Fatalf("answer %+v", in)
	}
}

// A player list longer than MaxInfoPackets datagrams (one) carry is cut,
// and the cut list still parses as a complete answer.
func TestReplyCutsLongPlayerLists(t *testing.T) {
	long := make([]string, 1000)
	for i := range long {
		long[i] = strings.Repeat("n", 200) + strconv.Itoa(i)
	}
	for _, players := range []int{1000, teeinfo.MaxPlayers * 2} {
		ia := answerer(teeinfo.MaxPlayers, players, namedGame{players: long})
		pkts := ia.build(teeinfo.Request{Extended: true, Token: 9})
		if len(pkts) == 0 || len(pkts) > MaxInfoPackets {
			t.Fatalf("%d players: %d datagrams", players, len(pkts))
		}
		in := assemble(t, pkts)
		if want := min(players, teeinfo.MaxPlayers); in.NumPlayers != want || in.NumClients != len(in.Players) ||
			len(in.Players) >= want || len(in.Players) < 4 {
			t.Fatalf("%d players: num_players %d, num_clients %d, %d listed", players, in.NumPlayers, in.NumClients, len(in.Players))
		}
		for i, p := range in.Players {
			if p.Name != long[i] {
				t.Fatalf("player %d is %q", i, p.Name)
			}
		}
	}
}

func TestReplyDropsWhatIsNotARequest(t *testing.T) {
	ia := answerer(4, 1, namedGame{})
	ip := netip.MustParseAddr("192.0.2.9")
	req := teeinfo.Request{Token: 1}.Append(nil)
	for _, b := range [][]byte{req[:14], append(req, 0), []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie2\x00"), nil} {
		if pkts := ia.reply(b, ip, t0); pkts != nil {
			t.Errorf("answered %q", b)
		}
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter()
	a, sameNet := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("::ffff:198.51.100.200")
	for i := range InfoBurst {
		if !l.allow(a, t0) {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if l.allow(sameNet, t0) {
		t.Fatal("same /24 answered past its burst")
	}
	if l.allow(a, t0.Add(InfoInterval-1)) || !l.allow(a, t0.Add(InfoInterval)) {
		t.Fatal("the bucket does not refill one answer per interval")
	}
	// IPv6 networks are /56s, as the lobby's reply budget counts them.
	v6 := netip.MustParseAddr("2001:db8:1:2::1")
	for range InfoBurst {
		l.allow(v6, t0)
	}
	if l.allow(netip.MustParseAddr("2001:db8:1:ff::9"), t0) {
		t.Fatal("same /56 answered past its burst")
	}
	if !l.allow(netip.MustParseAddr("2001:db8:1:100::1"), t0) {
		t.Fatal("the next /56 shares a budget with its neighbour")
	}

	// The room's own budget caps answers over many networks.
	l = newLimiter()
	answered := 0
	for i := range 4 * allBurst {
		if l.allow(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), t0) {
			answered++
		}
	}
	if answered != allBurst {
		t.Fatalf("%d answers across networks at once, want %d", answered, allBurst)
	}
}

// Answers reuse their buffers: once warm, a request allocates nothing.
func TestReplyDoesNotAllocate(t *testing.T) {
	ia := answerer(200, 150, namedGame{players: []string{"alice"}})
	ip := netip.MustParseAddr("192.0.2.9")
	now := t0
	for _, req := range []teeinfo.Request{{Token: 1}, {Extended: true, Token: 1}} {
		b := req.Append(nil)
		next := func() {
			now = now.Add(time.Second)
			if len(ia.reply(b, ip, now)) == 0 {
				t.Fatal("no answer")
			}
		}
		next()
		if n := testing.AllocsPerRun(100, next); n != 0 {
			t.Errorf("extended %v: %v allocations per answer", req.Extended, n)
		}
	}
}

// FuzzInfoReply checks that any datagram gets either no answer or one
// that parses back, complete, with the request's token.
func FuzzInfoReply(f *testing.F) {
	f.Add(teeinfo.Request{Token: 7}.Append(nil))
	f.Add(teeinfo.Request{Extended: true, ExtraToken: 0xbeef, Token: 1}.Append(nil))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ia := answerer(64, 40, namedGame{players: []string{"x"}})
		pkts := ia.reply(b, netip.MustParseAddr("192.0.2.9"), t0)
		req, err := teeinfo.ParseRequest(b)
		if err != nil {
			if pkts != nil {
				t.Fatalf("answered %q (%v)", b, err)
			}
			return
		}
		in := assemble(t, pkts)
		if in.Token != req.ReplyToken() || len(in.Players) != in.NumClients || in.NumPlayers != min(40, in.MaxPlayers) {
			t.Fatalf("answer to %+v: %+v", req, in)
		}
	})
}

// BenchmarkInfoAnswer measures one answer: building it and sending it
// over a loopback socket as answer does, the rate limit aside.
func BenchmarkInfoAnswer(b *testing.B) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := sink.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
		}
	}()
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	for _, players := range []int{2, 16, 200} {
		for _, req := range []teeinfo.Request{{Token: 1}, {Extended: true, Token: 1}} {
			kind := "vanilla"
			if req.Extended {
				kind = "extended"
			}
			b.Run(kind+"/players="+strconv.Itoa(players), func(b *testing.B) {
				ia := answerer(255, players, namedGame{})
				b.ReportAllocs()
				datagrams, bytes := 0, 0
				for b.Loop() {
					for _, d := range ia.build(req) {
						_, _ = conn.WriteToUDPAddrPort(d, to)
						datagrams++
						bytes += len(d)
					}
				}
				b.ReportMetric(float64(datagrams)/float64(b.N), "datagrams/op")
				b.ReportMetric(float64(bytes)/float64(b.N), "bytes/op")
			})
		}
	}
}

// BenchmarkInfoLimit measures the rate limit's decision for a flood from
// many networks.
func BenchmarkInfoLimit(b *testing.B) {
	l := newLimiter()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		l.allow(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), t0)
	}
}

// Whatever a room holds, an answer is one datagram of at most
// teeinfo.MaxDatagram bytes: a 15-byte request draws at most that much.
// The test logs the sizes a room of the SDK's default names gives, empty
// to full, and with names of the longest a game may give.
func TestAnswerIsOneBoundedDatagram(t *testing.T) {
	long := make([]string, 255)
	for i := range long {
		long[i] = strings.Repeat("x", 255)
	}
	for _, tc := range []struct {
		name             string
		players, maxSlot int
		game             Game
	}{
		{"empty room of 4", 0, 4, namedGame{}},
		{"full room of 4", 4, 4, namedGame{}},
		{"full room of 16", 16, 16, namedGame{}},
		{"full room of 64", 64, 64, namedGame{}},
		{"full room of 255, longest names", 255, 255, namedGame{players: long}},
	} {
		ia := answerer(tc.maxSlot, tc.players, tc.game)
		for _, extended := range []bool{false, true} {
			req := teeinfo.Request{Extended: extended, Token: 1}.Append(nil)
			pkts := ia.build(teeinfo.Request{Extended: extended, Token: 1})
			if len(pkts) != 1 || len(pkts[0]) > teeinfo.MaxDatagram {
				t.Fatalf("%s, extended %v: %d datagrams", tc.name, extended, len(pkts))
			}
			assemble(t, pkts)
			t.Logf("%s, extended %v: %d bytes for %d (%.1fx)", tc.name, extended, len(pkts[0]), len(req), float64(len(pkts[0]))/float64(len(req)))
		}
	}
}

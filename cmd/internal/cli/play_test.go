package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/lobby/client/clienttest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
	"github.com/rs/zerolog"
)

// patience bounds waits for things that must happen; it is never a speed
// check.
const patience = 10 * time.Second

// seats records the players a room reports.
type seats struct{ events chan string }

func (s seats) SetState(packet.RoomState)     {}
func (s seats) PlayerConnected(ip netip.Addr) { s.events <- "+" + ip.String() }
func (s seats) PlayerDisconnected(netip.Addr) { s.events <- "-" }

// quick makes a match short: the countdown and the match each last one
// announced second or less.
var quick = map[string]string{"countdown": "100ms", "match_duration": "100ms"}

// startRoom runs a reference room, the real one, in this process on a free
// loopback port.
func startRoom(t *testing.T, id uint32, maxPlayers int, settings map[string]string) (uint16, seats) {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(conn.LocalAddr().(*net.UDPAddr).Port)
	s := seats{events: make(chan string, 16)}
	g := refroom.New(zerolog.Nop())
	a := instance.Assignment{RoomID: id, Port: port, MaxPlayers: maxPlayers, Settings: settings, Bind: netip.MustParseAddr("127.0.0.1")}
	if err := g.Start(t.Context(), a, conn, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		g.Stop(ctx)
	})
	return port, s
}

func TestPlayMatch(t *testing.T) {
	port, players := startRoom(t, 1, 2, quick)
	l := clienttest.Start(t)
	l.CreatePort(port)
	alice, bob := playPair(t, players, []string{"--ready", l.Addr.String()}, []string{l.Addr.String(), "1", "--ready"})
	match := "ready: waiting for the others\nstarting in 1\ngame started: a 1 s match\ngame over: time is up\n"
	alice.check(t, "alice", fmt.Sprintf("created room 1, port %d: others join with 'foyer play %s 1'\nin room 1: slot 1 of 2\n", port, l.Addr)+match)
	bob.check(t, "bob", fmt.Sprintf("joined room 1, port %d\nin room 1: slot 2 of 2\n", port)+match)
}

// playPair runs two players of the room whose seats are s at once: the
// first creates it through the lobby, the second joins once the first is
// in the room, so that the first has its first slot.
func playPair(t *testing.T, s seats, first, second []string) (a, b playResult) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { a.code, a.out, a.errOut = run(t, append([]string{"play"}, first...)...) })
	select {
	case <-s.events:
	case <-time.After(patience):
		t.Errorf("the first player never got into the room")
	}
	wg.Go(func() { b.code, b.out, b.errOut = run(t, append([]string{"play"}, second...)...) })
	wg.Wait()
	return a, b
}

type playResult struct {
	code        int
	out, errOut string
}

func (r playResult) check(t *testing.T, who, want string) {
	t.Helper()
	if r.code != 0 || r.out != want || r.errOut != "" {
		t.Errorf("%s: exit %d, stderr %q, stdout\n%s\nwant\n%s", who, r.code, r.errOut, r.out, want)
	}
}

// legacyMatch is what a player in the original framing sees of a match.
const legacyMatch = "ready: waiting for the others\nall players ready\nstarting in 1\ngame started\ngame over: time is up\n"

func TestPlayMatchLegacy(t *testing.T) {
	port, players := startRoom(t, 1, 2, quick)
	l := clienttest.Start(t)
	l.CreatePort(port)
	alice, bob := playPair(t, players, []string{"--legacy", "--ready", l.Addr.String()}, []string{"--legacy", "--ready", l.Addr.String(), "1"})
	alice.check(t, "alice", fmt.Sprintf("created room 1, port %d: others join with 'foyer play %s 1'\nin room 1: join accepted\n", port, l.Addr)+legacyMatch)
	bob.check(t, "bob", fmt.Sprintf("joined room 1, port %d\nin room 1: join accepted\n", port)+legacyMatch)
	reqs := l.Requests() // each answered, so read by the lobby before the players went on
	if len(reqs) < 2 {
		t.Errorf("the lobby got %d requests, want at least the CREATE and the JOIN", len(reqs))
	}
	for _, req := range reqs {
		if req.Framing != packet.Legacy {
			t.Errorf("the lobby got a %v request from a --legacy player", req.Framing)
		}
	}
}

func TestPlayMixedFramings(t *testing.T) {
	port, players := startRoom(t, 1, 2, quick)
	l := clienttest.Start(t)
	l.CreatePort(port)
	alice, bob := playPair(t, players, []string{"--ready", l.Addr.String()}, []string{"--legacy", "--ready", l.Addr.String(), "1"})
	alice.check(t, "alice", fmt.Sprintf("created room 1, port %d: others join with 'foyer play %s 1'\nin room 1: slot 1 of 2\n", port, l.Addr)+
		"ready: waiting for the others\nstarting in 1\ngame started: a 1 s match\ngame over: time is up\n")
	bob.check(t, "bob", fmt.Sprintf("joined room 1, port %d\nin room 1: join accepted\n", port)+legacyMatch)
}

func TestPlayReadyOnEnter(t *testing.T) {
	port, _ := startRoom(t, 1, 1, quick)
	l := clienttest.Start(t)
	l.SetRooms(packet.Room{ID: 1, MaxPlayers: 1, Port: port})
	var out, errOut strings.Builder
	c := New("play", playHelp, &out, &errOut)
	room := uint32(1)
	code := c.play(t.Context(), l.Addr.String(), roomTarget{id: &room}, testPlayConfig(), strings.NewReader("\n"))
	want := fmt.Sprintf("joined room 1, port %d\nin room 1: slot 1 of 1\npress Enter when ready (Ctrl-C leaves)\n", port) +
		"ready: waiting for the others\nstarting in 1\ngame started: a 1 s match\ngame over: time is up\n"
	if code != 0 || out.String() != want {
		t.Fatalf("play with Enter: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut.String(), out.String(), want)
	}
}

func testPlayConfig() playConfig {
	return playConfig{ping: 2 * time.Second, silence: patience, reconnect: 3 * time.Second, lobby: &lobbyFlags{timeout: time.Second, attempts: 3}}
}

func TestPlayLeaveSendsDisconnect(t *testing.T) {
	port, s := startRoom(t, 1, 2, nil)
	l := clienttest.Start(t)
	l.SetRooms(packet.Room{ID: 1, MaxPlayers: 2, Port: port})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut strings.Builder
	c := New("play", playHelp, &out, &errOut)
	room := uint32(1)
	code := make(chan int, 1)
	go func() {
		code <- c.play(ctx, l.Addr.String(), roomTarget{id: &room}, testPlayConfig(), strings.NewReader(""))
	}()

	expect := func(want string) {
		t.Helper()
		select {
		case got := <-s.events:
			if got != want {
				t.Fatalf("room saw %q, want %q", got, want)
			}
		case <-time.After(patience):
			t.Fatalf("room never saw %q", want)
		}
	}
	expect("+127.0.0.1")
	cancel() // what Ctrl-C does
	expect("-")
	if got := <-code; got != exitInterrupted || !strings.HasSuffix(out.String(), "left room 1\n") {
		t.Fatalf("play after Ctrl-C: exit %d, stdout %q", got, out.String())
	}
}

// TestPlayDenied: someone else takes a one-player room's only slot
// first; play then says the room denied it, in either framing.
func TestPlayDenied(t *testing.T) {
	for _, c := range []struct {
		name    string
		framing packet.Framing
		first   game.Type // what the first player sends
		answer  game.Type // and what the room answers it
		args    []string
		denial  string
	}{
		{"compact", packet.Compact, game.ClientHello, game.ServerHello, nil,
			"the room denied the hello: the room is full"},
		{"legacy", packet.Legacy, game.ClientJoinRequest, game.ServerJoinAccept, []string{"--legacy"},
			"the room denied the join request: the room is full or the match has begun"},
	} {
		t.Run(c.name, func(t *testing.T) {
			port, _ := startRoom(t, 1, 1, nil)
			l := clienttest.Start(t)
			l.SetRooms(packet.Room{ID: 1, MaxPlayers: 4, Port: port})

			other, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			first, _ := (&game.Message{Framing: c.framing, Type: c.first}).Append(nil)
			other.Write(first)
			other.SetReadDeadline(time.Now().Add(patience))
			buf := make([]byte, game.MaxLen)
			if n, err := other.Read(buf); err != nil {
				t.Fatal(err)
			} else if m, err := game.Parse(buf[:n]); err != nil || m.Type != c.answer {
				t.Fatalf("first player's %v answered %+v, %v", c.first, m, err)
			}

			args := append(append([]string{"play"}, c.args...), "--ready", l.Addr.String(), "1")
			code, out, errOut := run(t, args...)
			want := fmt.Sprintf("foyer: play 127.0.0.1:%d room 1: %s\n", port, c.denial)
			if code != 1 || errOut != want || out != fmt.Sprintf("joined room 1, port %d\n", port) {
				t.Fatalf("play of a full room: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
			}
		})
	}
}

func TestPlaySilentRoom(t *testing.T) {
	// A socket that reads nothing stands for a room that hangs.
	hung, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	port := hung.LocalAddr().(*net.UDPAddr).Port
	l := clienttest.Start(t)
	l.SetRooms(packet.Room{ID: 3, MaxPlayers: 4, Port: uint16(port)})

	code, _, errOut := run(t, "play", "--timeout", "20ms", "--attempts", "2", l.Addr.String(), "3")
	want := fmt.Sprintf("foyer: play 127.0.0.1:%d room 3: timeout: no SERVER_HELLO or SERVER_JOIN_DENY after 2 attempts of 20ms\n", port)
	if code != 1 || errOut != want {
		t.Fatalf("play of a silent room: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	code, _, errOut = run(t, "play", "--legacy", "--timeout", "20ms", "--attempts", "2", l.Addr.String(), "3")
	want = fmt.Sprintf("foyer: play 127.0.0.1:%d room 3: timeout: no SERVER_JOIN_ACCEPT or SERVER_JOIN_DENY after 2 attempts of 20ms\n", port)
	if code != 1 || errOut != want {
		t.Fatalf("legacy play of a silent room: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

func TestPlayLobbySaysNo(t *testing.T) {
	l := clienttest.Start(t)
	code, out, errOut := run(t, "play", l.Addr.String(), "9")
	want := fmt.Sprintf("foyer: join %s room 9: lobby answered JOIN_FAILED (no such room (or not one you may join by id))\n", l.Addr)
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("play of an unknown room: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
	}
}

func TestReasonTexts(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{reason(denyReasons, game.DenyFull), "the room is full"},
		{reason(denyReasons, game.DenyInProgress), "the match has already begun"},
		{reason(denyReasons, 0), "reason 0"},
		{reason(endReasons, game.EndTimeUp), "time is up"},
		{reason(endReasons, game.EndAbandoned), "the room was abandoned"},
		{reason(endReasons, game.EndStopped), "the host stopped the room"},
		{reason(endReasons, 200), "reason 200"},
		{denyText(game.Message{Framing: packet.Legacy}), "the room is full or the match has begun"},
		{denyText(game.Message{Deny: game.DenyFull}), "the room is full"},
		{endText(game.Message{Framing: packet.Legacy, End: game.EndTimeUp}), "time is up"},
		{endText(game.Message{Framing: packet.Legacy}), "the match was cut short"},
		{endText(game.Message{End: game.EndStopped}), "the host stopped the room"},
	} {
		if tc.got != tc.want {
			t.Errorf("reason text %q, want %q", tc.got, tc.want)
		}
	}
}

// A room that has ended is gone, and a ping sent meanwhile draws a "port
// unreachable" that the kernel reports before the GAME_END still unread:
// the player reads the GAME_END all the same, and learns the room is gone
// only once nothing more comes.
func TestPlayReadsTheEndOfAGoneRoom(t *testing.T) {
	room, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialUDP("udp4", nil, room.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	p := &player{framing: packet.Compact, conn: conn, events: make(chan roomEvent), done: make(chan struct{})}
	defer p.close()
	end := game.Message{Type: game.GameEnd, End: game.EndTimeUp}
	b, _ := end.Append(nil)
	room.WriteTo(b, conn.LocalAddr())
	room.Close()
	if err := p.send(game.ClientPing); err != nil { // the room is gone: this draws the refusal
		t.Fatal(err)
	}
	go p.read(conn)
	first := <-p.events
	if first.err != nil || first.msg.Type != game.GameEnd {
		t.Fatalf("first event %+v, want the GAME_END", first)
	}
	p.send(game.ClientPing)
	select {
	case ev := <-p.events:
		if !errors.Is(ev.err, client.ErrRefused) {
			t.Fatalf("then %+v, want the room gone", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the room's absence never reported")
	}
}

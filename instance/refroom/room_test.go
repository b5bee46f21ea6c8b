package refroom

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
)

// recorder is an instance.Reporter that writes down what it is told.
type recorder struct{ events []string }

func (r *recorder) SetState(s packet.RoomState)      { r.events = append(r.events, s.String()) }
func (r *recorder) PlayerConnected(ip netip.Addr)    { r.events = append(r.events, "+"+ip.String()) }
func (r *recorder) PlayerDisconnected(ip netip.Addr) { r.events = append(r.events, "-"+ip.String()) }

func (r *recorder) take() string {
	s := strings.Join(r.events, " ")
	r.events = nil
	return s
}

var (
	t0    = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	alice = netip.MustParseAddrPort("127.0.0.1:5001")
	bob   = netip.MustParseAddrPort("127.0.0.2:5002")
	carol = netip.MustParseAddrPort("127.0.0.3:5003")
)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newTestRoom(t *testing.T, maxPlayers int, settings map[string]string) (*Room, *recorder) {
	t.Helper()
	cfg, err := ParseSettings(settings, maxPlayers)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	return NewRoom(9, maxPlayers, cfg, rec), rec
}

// outbox renders the room's outbox as "to:TYPE(field)" words, sorted.
func outbox(r *Room) string {
	var words []string
	for _, d := range r.Outbox() {
		words = append(words, word(d))
	}
	slices.Sort(words) // broadcasts come in map order
	return strings.Join(words, " ")
}

// outboxByPlayer renders the room's outbox per address, in the order the
// room queued each address's datagrams.
func outboxByPlayer(r *Room) map[netip.AddrPort]string {
	by := map[netip.AddrPort]string{}
	for _, d := range r.Outbox() {
		by[d.To] = strings.TrimSpace(by[d.To] + " " + word(d))
	}
	return by
}

// word renders one datagram as "to:TYPE(fields)"; a legacy one as
// "to:TYPE[seq,tick](fields)", since its sequence and tick matter, with
// only the fields the legacy framing carries.
func word(d Datagram) string {
	m := d.Msg
	w := fmt.Sprintf("%s:%s", d.To.Addr(), m.Type)
	legacy := m.Framing == packet.Legacy
	if legacy {
		w += fmt.Sprintf("[%d,%d]", m.Seq, m.Tick)
	}
	switch {
	case m.Type == game.ServerHello && !legacy:
		w += fmt.Sprintf("(room=%d,slot=%d,max=%d)", m.RoomID, m.Slot, m.MaxPlayers)
	case m.Type == game.ServerJoinDeny && !legacy:
		w += fmt.Sprintf("(%d)", m.Deny)
	case m.Type == game.GameEnd:
		w += fmt.Sprintf("(%d)", m.End)
	case m.Type == game.PlayerLeft:
		w += fmt.Sprintf("(slot=%d)", m.Slot)
	case m.Type == game.CountdownTick, m.Type == game.GameStart && !legacy:
		w += fmt.Sprintf("(%d)", m.Seconds)
	case m.Type == game.ServerPong && !legacy:
		w += fmt.Sprintf("(seq=%d,token=%d)", m.Seq, m.Token)
	}
	return w
}

func say(r *Room, now time.Time, from netip.AddrPort, typ game.Type) {
	r.Receive(now, from, game.Message{Type: typ})
}

func check(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestRoomPlaysAMatch(t *testing.T) {
	r, rec := newTestRoom(t, 4, map[string]string{"match_duration": "8s"})
	say(r, at(0), alice, game.ClientHello)
	check(t, "hello", outbox(r), "127.0.0.1:SERVER_HELLO(room=9,slot=0,max=4)")
	say(r, at(0), bob, game.ClientHello)
	check(t, "hello", outbox(r), "127.0.0.2:SERVER_HELLO(room=9,slot=1,max=4)")
	say(r, at(time.Second), alice, game.ClientReady)
	check(t, "one ready", outbox(r)+rec.take(), "+127.0.0.1 +127.0.0.2")
	if r.State() != packet.Waiting {
		t.Fatalf("state %v with one player not ready", r.State())
	}
	say(r, at(2*time.Second), bob, game.ClientReady)
	check(t, "all ready", outbox(r), "127.0.0.1:COUNTDOWN_TICK(3) 127.0.0.2:COUNTDOWN_TICK(3)")
	check(t, "all ready", rec.take(), "countdown")
	if next := r.Next(); !next.Equal(at(3 * time.Second)) {
		t.Fatalf("Next = %v, want the second tick", next.Sub(t0))
	}
	r.Advance(at(3 * time.Second))
	check(t, "tick", outbox(r), "127.0.0.1:COUNTDOWN_TICK(2) 127.0.0.2:COUNTDOWN_TICK(2)")
	r.Advance(at(4 * time.Second))
	check(t, "tick", outbox(r), "127.0.0.1:COUNTDOWN_TICK(1) 127.0.0.2:COUNTDOWN_TICK(1)")
	r.Advance(at(4*time.Second + 999*time.Millisecond))
	check(t, "before the end", outbox(r)+rec.take(), "")
	r.Advance(at(5 * time.Second))
	check(t, "start", outbox(r), "127.0.0.1:GAME_START(8) 127.0.0.2:GAME_START(8)")
	check(t, "start", rec.take(), "playing")
	// Pings keep both players alive through the match.
	for s := 6; s < 13; s += 3 {
		r.Receive(at(time.Duration(s)*time.Second), alice, game.Message{Type: game.ClientPing, Seq: uint16(s), Token: 77})
		say(r, at(time.Duration(s)*time.Second), bob, game.ClientReady)
	}
	check(t, "pongs", outbox(r), "127.0.0.1:SERVER_PONG(seq=12,token=77) 127.0.0.1:SERVER_PONG(seq=6,token=77) 127.0.0.1:SERVER_PONG(seq=9,token=77)")
	r.Advance(at(13 * time.Second))
	check(t, "end", outbox(r), "127.0.0.1:GAME_END(1) 127.0.0.2:GAME_END(1)")
	check(t, "end", rec.take(), "finished")
	if !r.Next().IsZero() {
		t.Fatal("a finished room still wants time")
	}
	say(r, at(14*time.Second), carol, game.ClientHello)
	r.Advance(at(time.Hour))
	check(t, "after the end", outbox(r)+rec.take(), "")
}

func TestRoomDeniesWhenFullOrStarted(t *testing.T) {
	r, rec := newTestRoom(t, 2, map[string]string{"countdown": "1s"})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), bob, game.ClientHello)
	outbox(r)
	say(r, at(0), carol, game.ClientHello)
	check(t, "full", outbox(r), "127.0.0.3:SERVER_JOIN_DENY(1)")
	say(r, at(0), alice, game.ClientHello)
	check(t, "hello again keeps the slot", outbox(r), "127.0.0.1:SERVER_HELLO(room=9,slot=0,max=2)")
	say(r, at(0), bob, game.ClientDisconnect)
	say(r, at(0), carol, game.ClientHello)
	check(t, "freed slot", outbox(r), "127.0.0.1:PLAYER_LEFT(slot=1) 127.0.0.3:SERVER_HELLO(room=9,slot=1,max=2)")
	say(r, at(0), alice, game.ClientReady)
	say(r, at(0), carol, game.ClientReady)
	outbox(r)
	say(r, at(0), bob, game.ClientHello)
	check(t, "full in the countdown", outbox(r), "127.0.0.2:SERVER_JOIN_DENY(1)")
	r.Advance(at(time.Second))
	outbox(r)
	say(r, at(time.Second), carol, game.ClientDisconnect)
	say(r, at(time.Second), bob, game.ClientHello)
	check(t, "in progress", outbox(r), "127.0.0.1:PLAYER_LEFT(slot=1) 127.0.0.2:SERVER_JOIN_DENY(2)")
	check(t, "events", rec.take(), "+127.0.0.1 +127.0.0.2 -127.0.0.2 +127.0.0.3 countdown playing -127.0.0.3")
}

// Until the match begins a newcomer may join, as the lobby's rule says:
// one who joins in the countdown plays when it starts, ready or not.
func TestRoomJoinInTheCountdown(t *testing.T) {
	r, rec := newTestRoom(t, 3, map[string]string{"countdown": "2s"})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), bob, game.ClientHello)
	say(r, at(0), alice, game.ClientReady)
	say(r, at(0), bob, game.ClientReady)
	outbox(r)
	r.Receive(at(time.Second/2), carol, legacyMsg(game.ClientJoinRequest, 1, 0))
	check(t, "join in the countdown", outbox(r), "127.0.0.3:SERVER_JOIN_ACCEPT[1,0]")
	r.Advance(at(time.Second))
	check(t, "the countdown goes on", outbox(r), "127.0.0.1:COUNTDOWN_TICK(1) 127.0.0.2:COUNTDOWN_TICK(1) 127.0.0.3:COUNTDOWN_TICK[6,0](1)")
	r.Advance(at(2 * time.Second))
	check(t, "all three start", outbox(r), "127.0.0.1:GAME_START(120) 127.0.0.2:GAME_START(120) 127.0.0.3:GAME_START[9,0]")
	check(t, "events", rec.take(), "+127.0.0.1 +127.0.0.2 countdown +127.0.0.3 playing")
}

func TestRoomIgnoresStrangers(t *testing.T) {
	r, rec := newTestRoom(t, 2, nil)
	r.Receive(at(0), alice, game.Message{Type: game.ClientPing, Token: 1})
	say(r, at(0), alice, game.ClientReady)
	say(r, at(0), alice, game.ClientDisconnect)
	say(r, at(0), alice, game.ServerHello)
	check(t, "strangers", outbox(r)+rec.take(), "")
}

func TestRoomDropsSilentPlayers(t *testing.T) {
	r, rec := newTestRoom(t, 4, map[string]string{"silence_timeout": "10s"})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(4*time.Second), bob, game.ClientHello)
	outbox(r)
	if next := r.Next(); !next.Equal(at(10 * time.Second)) {
		t.Fatalf("Next = %v, want alice's silence limit", next.Sub(t0))
	}
	r.Advance(at(10*time.Second - time.Nanosecond))
	check(t, "just in time", rec.take(), "+127.0.0.1 +127.0.0.2")
	r.Advance(at(10 * time.Second))
	check(t, "silent", rec.take(), "-127.0.0.1")
	check(t, "the other is told", outbox(r), "127.0.0.2:PLAYER_LEFT(slot=0)")
	r.Advance(at(14 * time.Second))
	check(t, "silent", rec.take(), "-127.0.0.2")
	check(t, "nobody is left to tell", outbox(r), "")
}

func TestRoomCountdownFallsBackWhenAPlayerLeaves(t *testing.T) {
	r, rec := newTestRoom(t, 4, nil)
	for _, p := range []netip.AddrPort{alice, bob} {
		say(r, at(0), p, game.ClientHello)
		say(r, at(0), p, game.ClientReady)
	}
	say(r, at(time.Second), bob, game.ClientDisconnect)
	check(t, "fallback", rec.take(), "+127.0.0.1 +127.0.0.2 countdown -127.0.0.2 waiting")
	outbox(r)
	say(r, at(2*time.Second), carol, game.ClientHello)
	say(r, at(2*time.Second), carol, game.ClientReady)
	check(t, "again", rec.take(), "+127.0.0.3 countdown")
}

func TestRoomFinishesWhenEveryoneLeaves(t *testing.T) {
	r, rec := newTestRoom(t, 4, map[string]string{"min_players": "1", "countdown": "1s"})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), alice, game.ClientReady)
	r.Advance(at(time.Second))
	say(r, at(2*time.Second), alice, game.ClientDisconnect)
	check(t, "abandoned", rec.take(), "+127.0.0.1 countdown playing -127.0.0.1 finished")
}

// TestRoomWaitsEmpty: a room nobody is in has nothing due and stays
// waiting, however long: its supervisor ends it (empty_timeout), whose
// log then says why.
func TestRoomWaitsEmpty(t *testing.T) {
	r, rec := newTestRoom(t, 4, nil)
	say(r, at(0), alice, game.ClientHello)
	say(r, at(time.Second), alice, game.ClientDisconnect)
	if next := r.Next(); !next.IsZero() {
		t.Fatalf("Next = %v, want nothing due", next.Sub(t0))
	}
	r.Advance(at(24 * time.Hour))
	check(t, "a day later", rec.take(), "+127.0.0.1 -127.0.0.1")
	if r.State() != packet.Waiting {
		t.Fatalf("state %v, want waiting", r.State())
	}
}

// TestRoomTellsWhoLeft: a player who quits or goes silent, in any state,
// is seen by the compact players who stay, by its slot; the match goes on
// for them.
func TestRoomTellsWhoLeft(t *testing.T) {
	r, rec := newTestRoom(t, 4, map[string]string{"min_players": "2", "countdown": "0s", "silence_timeout": "5s"})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), bob, game.ClientHello)
	say(r, at(0), carol, game.ClientHello)
	say(r, at(0), alice, game.ClientReady)
	say(r, at(0), bob, game.ClientReady)
	say(r, at(0), carol, game.ClientReady)
	outbox(r)
	check(t, "playing", rec.take(), "+127.0.0.1 +127.0.0.2 +127.0.0.3 countdown playing")
	say(r, at(time.Second), bob, game.ClientDisconnect)
	check(t, "bob quits", outbox(r), "127.0.0.1:PLAYER_LEFT(slot=1) 127.0.0.3:PLAYER_LEFT(slot=1)")
	say(r, at(4*time.Second), alice, game.ClientPing)
	outbox(r)
	r.Advance(at(5 * time.Second))
	check(t, "carol goes silent", outbox(r), "127.0.0.1:PLAYER_LEFT(slot=2)")
	check(t, "the match goes on", rec.take(), "-127.0.0.2 -127.0.0.3")
	if r.State() != packet.Playing {
		t.Fatalf("state %v, want playing", r.State())
	}
}

func TestRoomStop(t *testing.T) {
	r, rec := newTestRoom(t, 4, nil)
	say(r, at(0), alice, game.ClientHello)
	outbox(r)
	r.Stop()
	r.Stop()
	check(t, "stop", outbox(r), "127.0.0.1:GAME_END(3)")
	check(t, "stop", rec.take(), "+127.0.0.1 finished")
}

func TestRoomShortCountdownTicksOnce(t *testing.T) {
	r, _ := newTestRoom(t, 1, map[string]string{"countdown": "200ms"})
	say(r, at(0), alice, game.ClientHello)
	outbox(r)
	say(r, at(0), alice, game.ClientReady)
	check(t, "tick", outbox(r), "127.0.0.1:COUNTDOWN_TICK(1)")
	r.Advance(at(200 * time.Millisecond))
	check(t, "start", outbox(r), "127.0.0.1:GAME_START(120)")
}

func TestRoomZeroCountdownStartsAtOnce(t *testing.T) {
	r, rec := newTestRoom(t, 1, map[string]string{"countdown": "0s"})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), alice, game.ClientReady)
	check(t, "start", outbox(r), "127.0.0.1:GAME_START(120) 127.0.0.1:SERVER_HELLO(room=9,slot=0,max=1)")
	check(t, "start", rec.take(), "+127.0.0.1 countdown playing")
}

func TestRoomLongTimesSaturate(t *testing.T) {
	r, _ := newTestRoom(t, 1, map[string]string{"countdown": "300s", "match_duration": "20h"})
	say(r, at(0), alice, game.ClientHello)
	outbox(r)
	say(r, at(0), alice, game.ClientReady)
	check(t, "first tick", outbox(r), "127.0.0.1:COUNTDOWN_TICK(255)")
	for s := 1; s <= 299; s++ {
		say(r, at(time.Duration(s)*time.Second), alice, game.ClientReady) // keeps alice alive
	}
	words := strings.Fields(outbox(r))
	if len(words) != 299 || words[0] != "127.0.0.1:COUNTDOWN_TICK(1)" {
		t.Fatalf("%d ticks, lowest %q", len(words), words[0])
	}
	r.Advance(at(300 * time.Second))
	check(t, "start", outbox(r), "127.0.0.1:GAME_START(65535)")
}

func TestParseSettings(t *testing.T) {
	cfg, err := ParseSettings(nil, 4)
	if err != nil || cfg != DefaultConfig() {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = ParseSettings(map[string]string{
		"min_players": "3", "countdown": "1500ms", "match_duration": "2m",
		"silence_timeout": "250ms",
	}, 4)
	want := Config{3, 1500 * time.Millisecond, 2 * time.Minute, 250 * time.Millisecond}
	if err != nil || cfg != want {
		t.Fatalf("settings: %+v, %v; want %+v", cfg, err, want)
	}
	if cfg, _ := ParseSettings(nil, 1); cfg.MinPlayers != 1 {
		t.Fatalf("a one-player room needs %d players", cfg.MinPlayers)
	}
	for _, tc := range []struct {
		settings map[string]string
		max      int
		want     string
	}{
		{nil, 0, "max players 0"},
		{nil, 256, "max players 256"},
		{map[string]string{"countdown": "3"}, 4, `countdown="3"`},
		{map[string]string{"countdown": "-1s"}, 4, `countdown="-1s"`},
		{map[string]string{"match_duration": "0s"}, 4, `match_duration="0s"`},
		{map[string]string{"silence_timeout": "soon"}, 4, `silence_timeout="soon"`},
		{map[string]string{"idle_timeout": "5s"}, 4, `unknown setting "idle_timeout"`},
		{map[string]string{"min_players": "5"}, 4, `min_players="5"`},
		{map[string]string{"min_players": "0"}, 4, `min_players="0"`},
		{map[string]string{"min_players": "two"}, 4, `min_players="two"`},
		{map[string]string{"countdwon": "3s"}, 4, `unknown setting "countdwon"`},
	} {
		_, err := ParseSettings(tc.settings, tc.max)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSettings(%v, %d) = %v, want an error with %q", tc.settings, tc.max, err, tc.want)
		}
	}
}

// legacyMsg is a message in the original game's framing, as its client
// sends them: empty payloads, tick 0 unless given.
func legacyMsg(typ game.Type, seq uint16, tick uint32) game.Message {
	return game.Message{Framing: packet.Legacy, Type: typ, Seq: seq, Tick: tick}
}

// welcomeRound is one second of the original client's handshake: hello
// (always sequence 0), join request and ping, with the next sequences.
func welcomeRound(r *Room, now time.Time, from netip.AddrPort, seq *uint16) {
	r.Receive(now, from, legacyMsg(game.ClientHello, 0, 0))
	*seq++
	r.Receive(now, from, legacyMsg(game.ClientJoinRequest, *seq, 0))
	*seq++
	r.Receive(now, from, legacyMsg(game.ClientPing, *seq, 0))
}

func TestRoomLegacyHandshakeIsIdempotent(t *testing.T) {
	r, rec := newTestRoom(t, 4, nil)
	var seq uint16
	welcomeRound(r, at(0), alice, &seq)
	check(t, "first round", outbox(r),
		"127.0.0.1:SERVER_HELLO[0,0] 127.0.0.1:SERVER_JOIN_ACCEPT[1,0] 127.0.0.1:SERVER_PONG[2,0]")
	// The client repeats the round every second until it sees the accept.
	welcomeRound(r, at(time.Second), alice, &seq)
	check(t, "second round", outbox(r),
		"127.0.0.1:SERVER_HELLO[0,0] 127.0.0.1:SERVER_JOIN_ACCEPT[3,0] 127.0.0.1:SERVER_PONG[4,0]")
	r.Receive(at(time.Second), alice, legacyMsg(game.ClientPing, 9, 0xDEADBEEF))
	check(t, "pong echoes the tick", outbox(r), "127.0.0.1:SERVER_PONG[9,3735928559]")
	// A compact player shares the slot numbering: alice holds slot 0.
	say(r, at(time.Second), bob, game.ClientHello)
	check(t, "compact neighbour", outbox(r), "127.0.0.2:SERVER_HELLO(room=9,slot=1,max=4)")
	check(t, "seated once", rec.take(), "+127.0.0.1 +127.0.0.2")
}

func TestRoomLegacyJoinRequestSeatsFirst(t *testing.T) {
	r, rec := newTestRoom(t, 4, nil)
	r.Receive(at(0), alice, legacyMsg(game.ClientReady, 1000, 0))
	check(t, "ready from a stranger", outbox(r)+rec.take(), "")
	r.Receive(at(0), alice, game.Message{Framing: packet.Legacy, Type: game.ClientJoinRequest, Seq: 1, HasUser: true, Spectator: true, UserID: 7})
	check(t, "join request", outbox(r), "127.0.0.1:SERVER_JOIN_ACCEPT[1,0]")
	r.Receive(at(0), alice, legacyMsg(game.ClientHello, 0, 0))
	check(t, "hello after join", outbox(r)+" "+rec.take(), "127.0.0.1:SERVER_HELLO[0,0] +127.0.0.1")
	// A seated player speaks its framing: the other one is ignored.
	r.Receive(at(0), alice, game.Message{Type: game.ClientPing, Seq: 4, Token: 1})
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), alice, game.ClientDisconnect)
	check(t, "compact from a legacy player", outbox(r)+rec.take(), "")
}

func TestRoomLegacyDenies(t *testing.T) {
	r, _ := newTestRoom(t, 2, nil)
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), bob, game.ClientHello)
	outbox(r)
	r.Receive(at(0), carol, legacyMsg(game.ClientHello, 0, 0))
	r.Receive(at(0), carol, legacyMsg(game.ClientJoinRequest, 1, 0))
	r.Receive(at(0), carol, legacyMsg(game.ClientPing, 2, 0))
	check(t, "full", outbox(r), "127.0.0.3:SERVER_JOIN_DENY[0,0] 127.0.0.3:SERVER_JOIN_DENY[1,0]")
	say(r, at(0), bob, game.ClientDisconnect)
	say(r, at(0), alice, game.ClientReady)
	r.Receive(at(0), carol, legacyMsg(game.ClientJoinRequest, 3, 0))
	r.Receive(at(0), carol, legacyMsg(game.ClientReady, 1000, 0))
	outbox(r)
	if r.State() != packet.Countdown {
		t.Fatalf("state %v with both players ready", r.State())
	}
	r.Receive(at(0), bob, legacyMsg(game.ClientJoinRequest, 5, 0))
	check(t, "full in the countdown", outbox(r), "127.0.0.2:SERVER_JOIN_DENY[5,0]")
	// A seated legacy player's repeats are still welcome.
	r.Receive(at(0), carol, legacyMsg(game.ClientJoinRequest, 7, 0))
	check(t, "seated repeat", outbox(r), "127.0.0.3:SERVER_JOIN_ACCEPT[7,0]")
}

func TestRoomMixedFramingsPlayAMatch(t *testing.T) {
	r, rec := newTestRoom(t, 4, map[string]string{"countdown": "2s", "match_duration": "5s", "silence_timeout": "3s"})
	say(r, at(0), alice, game.ClientHello)
	var seq uint16
	welcomeRound(r, at(0), bob, &seq)
	outbox(r)
	say(r, at(0), alice, game.ClientReady)
	r.Receive(at(0), bob, legacyMsg(game.ClientReady, 1000, 0))
	by := outboxByPlayer(r)
	check(t, "compact countdown", by[alice], "127.0.0.1:COUNTDOWN_TICK(2)")
	check(t, "legacy countdown", by[bob], "127.0.0.2:ALL_READY[1,0] 127.0.0.2:COUNTDOWN_TICK[3,0](2)")
	r.Advance(at(time.Second))
	check(t, "tick", outbox(r), "127.0.0.1:COUNTDOWN_TICK(1) 127.0.0.2:COUNTDOWN_TICK[5,0](1)")
	r.Advance(at(2 * time.Second))
	check(t, "start", outbox(r), "127.0.0.1:GAME_START(5) 127.0.0.2:GAME_START[7,0]")
	// In the match the original client sends only the inputs of a player
	// who moves, and gives up on a room silent for 5 s: bob moves once,
	// then idles past silence_timeout and stays, hearing a keepalive every
	// second. Alice, compact, keeps herself seated.
	r.Receive(at(2500*time.Millisecond), bob, game.Message{Framing: packet.Legacy, Type: game.ClientInput, Seq: 1})
	for s := 3; s < 7; s++ {
		say(r, at(time.Duration(s)*time.Second), alice, game.ClientReady)
		r.Advance(at(time.Duration(s) * time.Second))
	}
	check(t, "keepalives", outboxByPlayer(r)[bob], "127.0.0.2:SERVER_PONG[8,0] 127.0.0.2:SERVER_PONG[9,0] 127.0.0.2:SERVER_PONG[10,0] 127.0.0.2:SERVER_PONG[11,0]")
	r.Advance(at(7 * time.Second))
	check(t, "end", outbox(r), "127.0.0.1:GAME_END(1) 127.0.0.2:GAME_END[13,0](1)")
	check(t, "events", rec.take(), "+127.0.0.1 +127.0.0.2 countdown playing finished")
}

func TestRoomLegacyZeroCountdownAndStop(t *testing.T) {
	r, _ := newTestRoom(t, 1, map[string]string{"countdown": "0s"})
	r.Receive(at(0), alice, legacyMsg(game.ClientJoinRequest, 1, 0))
	r.Receive(at(0), alice, legacyMsg(game.ClientReady, 2, 0))
	check(t, "start", outboxByPlayer(r)[alice], "127.0.0.1:SERVER_JOIN_ACCEPT[1,0] 127.0.0.1:ALL_READY[0,0] 127.0.0.1:GAME_START[1,0]")
	r.Stop()
	check(t, "stop", outbox(r), "127.0.0.1:GAME_END[2,0](3)")
}

func TestRoomAnswersAnEmptyCompactPing(t *testing.T) {
	r, _ := newTestRoom(t, 2, nil)
	say(r, at(0), alice, game.ClientHello)
	outbox(r)
	r.Receive(at(0), alice, game.Message{Type: game.ClientPing, Seq: 5, NoToken: true})
	check(t, "pong", outbox(r), "127.0.0.1:SERVER_PONG(seq=5,token=0)")
}

// A player that comes back from another address with its seat token
// keeps its slot and its readiness; one the room dropped for silence in a
// match is seated again, in its slot, where a newcomer would be denied.
func TestRoomFollowsReconnectedPlayers(t *testing.T) {
	r, rec := newTestRoom(t, 3, map[string]string{"countdown": "0s", "silence_timeout": "10s"})
	moved := netip.MustParseAddrPort("198.51.100.1:4000")
	say(r, at(0), alice, game.ClientHello)
	say(r, at(0), bob, game.ClientHello)
	say(r, at(0), bob, game.ClientReady)
	outbox(r)
	r.Reconnected(at(time.Second), bob, moved)
	say(r, at(time.Second), moved, game.ClientHello)
	check(t, "moved", outbox(r), "198.51.100.1:SERVER_HELLO(room=9,slot=1,max=3)")
	say(r, at(time.Second), alice, game.ClientReady)
	check(t, "ready carried over", outbox(r), "127.0.0.1:GAME_START(120) 198.51.100.1:GAME_START(120)")
	say(r, at(5*time.Second), moved, game.ClientPing)
	r.Advance(at(11 * time.Second))
	check(t, "alice went silent", rec.take(), "+127.0.0.1 +127.0.0.2 countdown playing -127.0.0.1")
	outbox(r)
	say(r, at(12*time.Second), carol, game.ClientHello)
	check(t, "a newcomer in the match", outbox(r), "127.0.0.3:SERVER_JOIN_DENY(2)")
	r.Reconnected(at(12*time.Second), alice, carol)
	say(r, at(12*time.Second), carol, game.ClientHello)
	check(t, "alice back from carol's address", outbox(r), "127.0.0.3:SERVER_HELLO(room=9,slot=0,max=3)")
	check(t, "events", rec.take(), "+127.0.0.3")
}

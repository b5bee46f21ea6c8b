package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/foyertest"
)

// Message types of the game protocol on a room's port, from
// docs/game-protocol.md; the wire is built by hand (encode, decode) so
// that these tests check the room against the document.
const (
	gameHello       = 0x01
	gameJoinRequest = 0x02
	gameReady       = 0x03
	gamePing        = 0x04
	gameDisconnect  = 0x07
	gameServerHello = 0x10
	gameJoinAccept  = 0x11
	gameJoinDeny    = 0x12
	gamePong        = 0x13
	gameStart       = 0x15
	gameEnd         = 0x16
	gameAllReady    = 0x1F
	gameTick        = 0x20
)

// roomPayloads is the payload size of every message a room sends, per
// framing; a type missing is one the framing does not have.
var roomPayloads = [2]map[byte]int{
	compact: {gameServerHello: 6, gameJoinDeny: 1, gamePong: 4, gameStart: 2, gameEnd: 1, gameTick: 1},
	legacy: {gameServerHello: 0, gameJoinAccept: 0, gameJoinDeny: 0, gamePong: 0, gameStart: 0, gameEnd: 2,
		gameAllReady: 0, gameTick: 1},
}

// roomMatch is a lobby whose rooms count down 2 s and play 7 s: longer
// than the 5 s the original client waits for a sign of life.
func roomMatch(t *testing.T) *foyertest.Lobby {
	return cliLobby(t, foyertest.MaxPlayers(4), foyertest.Countdown(2*time.Second), foyertest.MatchDuration(7*time.Second))
}

// originalLimit is how long the original client plays on without a
// datagram from the room before it gives up ("Server timeout").
const originalLimit = 5 * time.Second

// gamer is one player on a fresh socket of its own, as the original
// client opens one for the game. Its methods report errors instead of
// failing the test, so that players can play in goroutines.
type gamer struct {
	name string
	c    *client
	f    framing
	seq  uint16
}

func newGamer(t *testing.T, name string, f framing, room netip.AddrPort) *gamer {
	return gamerAt(t, name, "127.0.0.1", f, room)
}

// gamerAt is a player on a socket bound on ip.
func gamerAt(t testing.TB, name, ip string, f framing, room netip.AddrPort) *gamer {
	return &gamer{name: name, c: newClient(t, ip, room), f: f}
}

func (g *gamer) send(typ byte, seq uint16, tick uint32, payload []byte) error {
	_, err := g.c.conn.WriteToUDPAddrPort(encode(g.f, typ, seq, tick, payload), g.c.to)
	return err
}

// next waits up to wait for the room's next datagram and checks it is in
// the player's framing with the payload size its type has there; a zero
// reply means none came.
func (g *gamer) next(wait time.Duration) (reply, error) {
	r, err := g.c.tryRecv(wait)
	if err != nil || r.typ == 0 {
		return r, err
	}
	size, ok := roomPayloads[r.framing][r.typ]
	if r.framing != g.f || !ok || len(r.payload) != size {
		return r, fmt.Errorf("%s: the room sent %s type %#x with %d payload bytes %x", g.name, framingName(r.framing), r.typ, len(r.payload), r.payload)
	}
	if r.framing == legacy && r.typ != gamePong && r.tick != 0 {
		return r, fmt.Errorf("%s: %#x carries tick %d, want 0", g.name, r.typ, r.tick)
	}
	return r, nil
}

// must waits for the room's next datagram, which must come.
func (g *gamer) must() (reply, error) {
	r, err := g.next(15 * time.Second)
	if err == nil && r.typ == 0 {
		err = fmt.Errorf("%s: the room went silent", g.name)
	}
	return r, err
}

func framingName(f framing) string { return [...]string{"compact", "legacy"}[f] }

// greetLikeTheOriginal plays the original client's handshake on a fresh
// socket: every second, CLIENT_HELLO with sequence 0, then
// CLIENT_JOIN_REQUEST and CLIENT_PING with the next sequences, all empty,
// tick 0, until a SERVER_JOIN_ACCEPT. Every answer is checked: an empty
// SERVER_HELLO with sequence 0, the accept with a join request's sequence,
// an empty pong echoing a ping's sequence and tick. It returns once the
// room has accepted and answered the hello and a ping, or has denied the
// hello and the join request (denied true; a stranger's ping gets
// nothing).
func (g *gamer) greetLikeTheOriginal() (denied bool, err error) {
	joins, pings := map[uint16]bool{}, map[uint16]bool{}
	var hellos, accepts, pongs, denies int
	for range 20 {
		g.seq++
		joins[g.seq] = true
		g.seq++
		pings[g.seq] = true
		for _, m := range []struct {
			typ byte
			seq uint16
		}{{gameHello, 0}, {gameJoinRequest, g.seq - 1}, {gamePing, g.seq}} {
			if err := g.send(m.typ, m.seq, 0, nil); err != nil {
				return false, err
			}
		}
		for deadline := time.Now().Add(time.Second); ; {
			r, err := g.next(time.Until(deadline))
			if err != nil {
				return false, err
			}
			if r.typ == 0 {
				break // the second is over: the client says it all again
			}
			switch {
			case r.typ == gameServerHello && r.seq == 0:
				hellos++
			case r.typ == gameJoinAccept && joins[r.seq]:
				accepts++
			case r.typ == gameJoinDeny && (r.seq == 0 || joins[r.seq]):
				denies++
			case r.typ == gamePong && pings[r.seq] && r.tick == 0:
				pongs++
			default:
				return false, fmt.Errorf("%s: answer %#x seq %d tick %d to hellos 0, joins and pings up to %d", g.name, r.typ, r.seq, r.tick, g.seq)
			}
			switch {
			case denies > 0 && hellos+accepts+pongs > 0:
				return false, fmt.Errorf("%s: both denied and answered", g.name)
			case accepts > 0 && hellos > 0 && pongs > 0:
				return false, nil
			case denies >= 2:
				return true, nil
			}
		}
	}
	return false, fmt.Errorf("%s: never accepted", g.name)
}

// greetCompact says CLIENT_HELLO and returns the SERVER_HELLO's slot,
// checking the room's id and size.
func (g *gamer) greetCompact(room uint32, maxPlayers byte) (byte, error) {
	g.seq++
	if err := g.send(gameHello, g.seq, 0, nil); err != nil {
		return 0, err
	}
	r, err := g.must()
	if err != nil {
		return 0, err
	}
	if r.typ != gameServerHello || binary.BigEndian.Uint32(r.payload) != room || r.payload[5] != maxPlayers {
		return 0, fmt.Errorf("%s: hello answered %#x %x", g.name, r.typ, r.payload)
	}
	return r.payload[4], nil
}

// readyToStart gets ready and waits for the start, and returns what came
// before it. A legacy player says CLIENT_READY every half second, from
// sequence 1000, until ALL_READY, as the original client does; a compact
// one says it once. Then come COUNTDOWN_TICKs and GAME_START, whose
// sequences, the room's own, must increase.
func (g *gamer) readyToStart() ([]string, error) {
	var seen []string
	var last uint16
	readySeq := uint16(1000)
	waiting := true
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if waiting {
			if err := g.send(gameReady, readySeq, 0, nil); err != nil {
				return seen, err
			}
			readySeq++
		}
		wait := 15 * time.Second
		if waiting && g.f == legacy {
			wait = 500 * time.Millisecond
		}
		r, err := g.next(wait)
		if err != nil {
			return seen, err
		}
		if r.typ == 0 {
			if !waiting || g.f == compact {
				return seen, fmt.Errorf("%s: no start after %v", g.name, seen)
			}
			continue
		}
		if g.f == legacy && (r.typ == gameServerHello || r.typ == gameJoinAccept || r.typ == gamePong) {
			continue // a late answer to the handshake, which the client ignores by now
		}
		if len(seen) > 0 && r.seq <= last {
			return seen, fmt.Errorf("%s: %#x seq %d after seq %d", g.name, r.typ, r.seq, last)
		}
		last = r.seq
		waiting = false
		switch r.typ {
		case gameAllReady:
			seen = append(seen, "all ready")
		case gameTick:
			seen = append(seen, fmt.Sprintf("tick %d", r.payload[0]))
		case gameStart:
			if g.f == compact {
				return append(seen, fmt.Sprintf("start %d s", binary.BigEndian.Uint16(r.payload))), nil
			}
			return append(seen, "start"), nil
		default:
			return seen, fmt.Errorf("%s: %#x before the start, after %v", g.name, r.typ, seen)
		}
	}
	return seen, fmt.Errorf("%s: no ALL_READY within 30 s", g.name)
}

// waitEnd plays the match to its GAME_END and returns its payload. A
// legacy player does what the original client does in a match: one input
// (its controls, with originalSize left 0 as that client sends it), then
// nothing, giving up when the room is silent for originalLimit; the room's
// keepalive pongs must keep it. A compact player pings every 2 s.
func (g *gamer) waitEnd() ([]byte, error) {
	wait := 2 * time.Second
	if g.f == legacy {
		wait = originalLimit
		if _, err := g.c.conn.WriteToUDPAddrPort(originalInput(g.seq+1), g.c.to); err != nil {
			return nil, err
		}
	}
	for {
		r, err := g.next(wait)
		switch {
		case err != nil:
			return nil, err
		case r.typ == 0 && g.f == legacy:
			return nil, fmt.Errorf("%s: the room was silent for %v in the match: the original client quits", g.name, wait)
		case r.typ == 0:
			g.seq++
			if err := g.send(gamePing, g.seq, 0, nil); err != nil {
				return nil, err
			}
		case r.typ == gamePong:
		case r.typ == gameEnd:
			return r.payload, nil
		default:
			return nil, fmt.Errorf("%s: %#x in the match", g.name, r.typ)
		}
	}
}

// originalInput is a CLIENT_INPUT as the original client sends it: player
// 1 moving up at x 100, y 50, with originalSize 0.
func originalInput(seq uint16) []byte {
	b := []byte{0xA3, 0x5F, 0xC8, 0x1D, 1, 1, 0x05, byte(seq >> 8), byte(seq), 0, 0, 0, 0, 0, 18, 0, 0}
	b = append(b, 0, 0, 0, 1, 0, 1, 0x42, 0xc8, 0, 0, 0x42, 0x48, 0, 0, 0, 0, 0, 0)
	return appendChecksum(b)
}

// playAll runs f for every player at once and fails the test with the
// first error.
func playAll(t *testing.T, players []*gamer, f func(*gamer) error) {
	t.Helper()
	errs := make(chan error, len(players))
	for _, g := range players {
		go func() { errs <- f(g) }()
	}
	for range players {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// roomThroughLobby lists, creates and joins a room through the lobby in
// framing f from two lobby sockets, lists again, and returns the room.
func roomThroughLobby(t *testing.T, l *foyertest.Lobby, creator, joiner framing) (uint32, netip.AddrPort) {
	t.Helper()
	a, b := newClient(t, "127.0.0.1", l.Addr()), newClient(t, "127.0.0.1", l.Addr())
	a.request(creator, listRooms, 1, nil).rooms(t)
	id, port := a.request(creator, createRoom, 2, nil).roomPort(t)
	if jid, jport := b.request(joiner, joinRoom, 1, joinPayload(id)).roomPort(t); jid != id || jport != port {
		t.Fatalf("JOIN room %d answered room %d port %d, want port %d", id, jid, jport, port)
	}
	listed := b.request(joiner, listRooms, 2, nil).rooms(t)
	if !slices.ContainsFunc(listed, func(r room) bool { return r.id == id && r.port == port && r.state == 0 }) {
		t.Fatalf("room %d at port %d not listed as waiting: %+v", id, port, listed)
	}
	return id, netip.AddrPortFrom(l.Addr().Addr(), port)
}

// The original game's client, as its source sends it, plays a room that
// the lobby created, from two fresh sockets, to GAME_START and GAME_END; a
// third, who holds no seat, is kept out by the room's door: never
// accepted, never counted.
func TestOriginalClientPlaysARoom(t *testing.T) {
	l := roomMatch(t)
	_, addr := roomThroughLobby(t, l, legacy, legacy)
	players := []*gamer{newGamer(t, "alice", legacy, addr), newGamer(t, "bob", legacy, addr)}
	playAll(t, players, func(g *gamer) error {
		if denied, err := g.greetLikeTheOriginal(); err != nil || denied {
			return fmt.Errorf("%s: denied %v, %v", g.name, denied, err)
		}
		seen, err := g.readyToStart()
		if want := []string{"all ready", "tick 2", "tick 1", "start"}; err == nil && !slices.Equal(seen, want) {
			err = fmt.Errorf("%s saw %q, want %q", g.name, seen, want)
		}
		return err
	})

	carol := newGamer(t, "carol", legacy, addr)
	if denied, err := carol.greetLikeTheOriginal(); err == nil || denied {
		t.Fatalf("carol, without a seat: denied %v, %v; want no answer at all", denied, err)
	}

	playAll(t, players, func(g *gamer) error {
		if end, err := g.waitEnd(); err != nil || !bytes.Equal(end, []byte{1, 0}) {
			return fmt.Errorf("%s: GAME_END %x, %v; want victory 1, no scores", g.name, end, err)
		}
		return nil
	})
}

// A compact player and one of the original game's play one match, each
// in its own framing, while the room's port answers a Teeworlds browser
// too.
func TestMixedFramingsPlayAMatch(t *testing.T) {
	l := roomMatch(t)
	id, addr := roomThroughLobby(t, l, compact, legacy)
	alice, bob := newGamer(t, "alice", compact, addr), newGamer(t, "bob", legacy, addr)
	slot, err := alice.greetCompact(id, 4)
	if err != nil || slot != 0 {
		t.Fatalf("alice: slot %d, %v", slot, err)
	}
	if denied, err := bob.greetLikeTheOriginal(); err != nil || denied {
		t.Fatalf("bob: denied %v, %v", denied, err)
	}
	if slot, err := alice.greetCompact(id, 4); err != nil || slot != 0 {
		t.Fatalf("alice's second hello: slot %d, %v", slot, err)
	}

	// An empty compact ping is answered with token 0; a legacy pong echoes
	// any tick.
	if err := alice.send(gamePing, 77, 0, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := alice.must(); err != nil || r.typ != gamePong || r.seq != 77 || !bytes.Equal(r.payload, []byte{0, 0, 0, 0}) {
		t.Fatalf("alice's empty ping answered %+v, %v", r, err)
	}
	if err := bob.send(gamePing, 78, 0xA1B2C3D4, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := bob.must(); err != nil || r.typ != gamePong || r.seq != 78 || r.tick != 0xA1B2C3D4 {
		t.Fatalf("bob's ping answered %+v, %v", r, err)
	}

	if info, _ := teeInfo(t, addr); info.NumPlayers != 2 || info.MaxPlayers != 4 {
		t.Fatalf("the browser sees %d of %d players", info.NumPlayers, info.MaxPlayers)
	}

	want := map[*gamer][]string{
		alice: {"tick 2", "tick 1", "start 7 s"},
		bob:   {"all ready", "tick 2", "tick 1", "start"},
	}
	playAll(t, []*gamer{alice, bob}, func(g *gamer) error {
		seen, err := g.readyToStart()
		if err == nil && !slices.Equal(seen, want[g]) {
			err = fmt.Errorf("%s saw %q, want %q", g.name, seen, want[g])
		}
		return err
	})
	ends := map[*gamer][]byte{alice: {1}, bob: {1, 0}}
	playAll(t, []*gamer{alice, bob}, func(g *gamer) error {
		if end, err := g.waitEnd(); err != nil || !bytes.Equal(end, ends[g]) {
			return fmt.Errorf("%s: GAME_END %x, %v; want %x", g.name, end, err, ends[g])
		}
		return nil
	})
}

package tests

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/floodtest"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/game"
)

// The room door and the quotas, tried against the real binary as an
// attacker would: while the attack runs, a real player on another network
// creates a room, a friend on a third joins it, and the room admits both,
// every time.

// doorSeatTTL is the seat_ttl of the door tests: short, so that the rooms
// of creators who never come are seen to go.
const doorSeatTTL = 2 * time.Second

// doorConfig is the supervisor part of the door tests' lobby: 20 rooms at
// most (the pool), a quarter of them per network (the default share),
// seats and empty rooms short-lived. Nothing else is changed from the
// defaults: the quotas and budgets under test are the shipped ones.
var doorConfig = fmt.Sprintf("max_instances = 20\nrooms_per_network = 5\nseat_ttl = %q\nempty_timeout = \"1s\"\n", doorSeatTTL)

// rounds is how many times the real players try under each attack.
const rounds = 20

// The real players of round i: a creator and its friend, each on a
// network of its own, none of the attackers' (127.0.x.y).
func realCreator(i int) string { return fmt.Sprintf("127.1.%d.1", 1+i) }
func realFriend(i int) string  { return fmt.Sprintf("127.2.%d.1", 1+i) }

// roundPace is the least time between two rounds, so that the rounds'
// rooms, which end a second after their players leave, do not fill the
// host themselves.
const roundPace = 300 * time.Millisecond

// friendLate is how long after the CREATE the friend joins: the time to
// pass it the room's number, and for an attacker watching the list to
// find the room first.
const friendLate = 500 * time.Millisecond

// playRound is try i: the creator lists the rooms and creates one, the
// friend joins it a moment later, and both greet the room; both must be
// admitted. Then they leave, and their room ends a second later, empty.
func playRound(t testing.TB, s *server, w *roomWatch, i int) error {
	seq := uint16(100 + 10*i)
	cip, fip := realCreator(i), realFriend(i)
	creator, friend := newClient(t, cip, s.lobby), newClient(t, fip, s.lobby)
	if _, err := creator.exchange(compact, listRooms, seq, nil); err != nil {
		return fmt.Errorf("creator's LIST: %w", err)
	}
	r, err := creator.exchange(compact, createRoom, seq+1, nil)
	if err != nil || r.typ != roomCreated {
		return fmt.Errorf("CREATE answered %#x, %v", r.typ, err)
	}
	id, port := r.roomPortOf()
	if w != nil {
		w.ours(id)
	}
	time.Sleep(friendLate)
	if r, err := friend.exchange(compact, joinRoom, seq, joinPayload(id)); err != nil || r.typ != joinSuccess {
		return fmt.Errorf("the friend's JOIN answered %#x, %v", r.typ, err)
	}
	addr := netip.AddrPortFrom(s.lobby.Addr(), port)
	for _, g := range []*gamer{gamerAt(t, "creator", cip, compact, addr), gamerAt(t, "friend", fip, compact, addr)} {
		if _, err := g.greetCompact(id, 4); err != nil {
			return fmt.Errorf("room %d did not admit its %v", id, err)
		}
		defer g.send(gameDisconnect, g.seq+1, 0, nil)
	}
	return nil
}

// underAttack runs attack until the rounds are played, and fails the test
// unless every round's players got in; w, when set, learns their rooms.
func underAttack(t *testing.T, s *server, w *roomWatch, attack func(ctx context.Context)) {
	playUnder(t, s, w, attack, func(i int, err error) {
		t.Fatalf("round %d of %d under attack: %v", i+1, rounds, err)
	})
}

// playUnder runs attack while it plays the rounds, telling failed each
// round whose players did not get in.
func playUnder(t testing.TB, s *server, w *roomWatch, attack func(ctx context.Context), failed func(round int, err error)) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { attack(ctx) })
	defer func() { stop(); wg.Wait() }()
	time.Sleep(time.Second) // the attack takes hold
	for i := range rounds {
		next := time.Now().Add(roundPace)
		if err := playRound(t, s, w, i); err != nil {
			failed(i, err)
		}
		time.Sleep(time.Until(next))
	}
}

// poolPorts are the room ports of s, every one an attacker could aim at.
func poolPorts(s *server) []uint16 {
	var out []uint16
	for p := s.ports[0]; p <= s.ports[1]; p++ {
		out = append(out, uint16(p))
	}
	return out
}

// (a) Seatless HELLOs at every room port, from four sockets of one IP
// and from 1,000 forged sources at 100 a second: no room admits them, so
// none fills, and the real players get in every time. The door's refusals
// are counted.
func TestDoorKeepsSeatlessHellosOut(t *testing.T) {
	requiretest.RawSocket(t) // forged datagrams
	s := startServer(t, "", doorConfig)
	hello := encode(compact, gameHello, 1, 0, nil)
	underAttack(t, s, nil, func(ctx context.Context) {
		var wg sync.WaitGroup
		for i := range 4 {
			c := newClient(t, "127.0.9.1", s.lobby)
			wg.Go(func() {
				for ctx.Err() == nil {
					for _, p := range poolPorts(s) {
						c.conn.WriteToUDPAddrPort(hello, netip.AddrPortFrom(s.lobby.Addr(), p))
					}
					time.Sleep(time.Duration(50+i) * time.Millisecond)
				}
			})
		}
		for _, p := range poolPorts(s) {
			wg.Go(func() {
				floodtest.Run(ctx, floodtest.Config{To: netip.AddrPortFrom(s.lobby.Addr(), p), Payload: hello, Sources: 1000, Rate: 100 / len(poolPorts(s))})
			})
		}
		wg.Wait()
	})
	if n := s.metrics(t)["foyer_room_door_refused_total"]; n == 0 {
		t.Fatal("no datagram counted as refused by a room's door")
	}
}

// The creator of a room, warm or cold, may hear of it before the room
// hears of the creator's seat: its first HELLO, sent at once, is kept at
// the room's door until the seat comes, and answered, never turned away
// to wait for a resend.
func TestCreatorsFirstHelloAnswered(t *testing.T) {
	for _, warm := range []int{0, 1} {
		t.Run(fmt.Sprintf("warm=%d", warm), func(t *testing.T) {
			s := startServer(t, createsUnlimited, fmt.Sprintf("warm = %d\n", warm))
			c := newClient(t, "127.0.0.1", s.lobby)
			c.list(1) // a player lists first
			for i := range 3 {
				for deadline := time.Now().Add(20 * time.Second); s.metrics(t)["foyer_supervisor_warm_instances"] < float64(warm); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the warm pool never filled")
					}
				}
				id, port := c.request(compact, createRoom, uint16(2+i), nil).roomPort(t)
				g := dialGame(t, "127.0.0.1", netip.AddrPortFrom(s.lobby.Addr(), port))
				g.send(game.ClientHello)
				if _, ok := g.await(game.ServerHello, 2*time.Second); !ok {
					t.Fatalf("room %d did not answer its creator's first HELLO", id)
				}
			}
		})
	}
}

// (b) Forged CREATEs at 1,000 a second from a million sources: each is its
// source's first request, so they share one small budget, and the rooms
// they get are abandoned by creators who never come, within seat_ttl and
// a second.
func TestForgedCreatesCannotTakeTheHost(t *testing.T) {
	requiretest.RawSocket(t)
	s := startServer(t, "", doorConfig)
	w := watchRooms(t, s)
	underAttack(t, s, w, func(ctx context.Context) {
		floodtest.Run(ctx, floodtest.Config{To: s.lobby, Payload: encode(compact, createRoom, 3, 0, nil), Sources: 1_000_000, Rate: 1000})
	})
	w.stopAndCheck(t, doorSeatTTL+time.Second)
}

// (c) CREATEs within their rate from every address of one /24, each a
// source that listed first: the network holds a quarter of the rooms at
// most, and rooms nobody came to go within seat_ttl and a second.
func TestOneNetworkCannotTakeTheHost(t *testing.T) {
	s := startServer(t, "", doorConfig)
	w := watchRooms(t, s)
	underAttack(t, s, w, func(ctx context.Context) {
		var wg sync.WaitGroup
		for host := range 254 {
			c := newClient(t, fmt.Sprintf("127.0.5.%d", host+1), s.lobby)
			wg.Go(func() {
				for seq := uint16(1); ctx.Err() == nil; seq += 2 {
					c.exchange(compact, listRooms, seq, nil)
					c.exchange(compact, createRoom, seq+1, nil)
					time.Sleep(time.Second) // create_rate
				}
			})
		}
		wg.Wait()
	})
	w.stopAndCheck(t, doorSeatTTL+time.Second)
	if peak := w.peak(); peak > 5 {
		t.Errorf("one /24 held %d rooms at once, over a quarter of max_instances (5)", peak)
	}
}

// (d) JOINs from 64 ports of one IP at every room, as fast as its rate
// lets them through: it holds two seats of a room at most, so the friend
// always finds one.
func TestOneAddressCannotTakeARoom(t *testing.T) {
	s := startServer(t, "", doorConfig)
	underAttack(t, s, nil, func(ctx context.Context) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ids []uint32
		lister := newClient(t, "127.0.7.1", s.lobby)
		wg.Go(func() {
			for seq := uint16(1); ctx.Err() == nil; seq++ {
				if r, err := lister.exchange(compact, listRooms, seq, nil); err == nil {
					mu.Lock()
					ids = ids[:0]
					for _, rm := range r.rooms(t) {
						ids = append(ids, rm.id)
					}
					mu.Unlock()
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
		for range 64 {
			c := newClient(t, "127.0.7.1", s.lobby)
			wg.Go(func() {
				for seq := uint16(1); ctx.Err() == nil; seq++ {
					mu.Lock()
					for _, id := range ids {
						c.send(encode(compact, joinRoom, seq, 0, joinPayload(id)))
					}
					mu.Unlock()
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
		wg.Wait()
	})
	if m := s.metrics(t); m["foyer_supervisor_seats_over_quota_total"] == 0 {
		t.Fatal("no JOIN counted over its address's quota")
	}
}

// roomWatch follows the rooms a lobby lists, from a client of its own
// network, and when each was first and last seen.
type roomWatch struct {
	s    *server
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	seen  map[uint32][2]time.Time // first and last seen
	mine  map[uint32]bool         // the real players' rooms
	looks [][]uint32              // the rooms each look listed
}

// watchRooms lists s's rooms every 100 ms until stopAndCheck.
func watchRooms(t testing.TB, s *server) *roomWatch {
	ctx, stop := context.WithCancel(context.Background())
	w := &roomWatch{s: s, stop: stop, done: make(chan struct{}), seen: map[uint32][2]time.Time{}, mine: map[uint32]bool{}}
	c := newClient(t, "127.0.3.1", s.lobby)
	go func() {
		defer close(w.done)
		for seq := uint16(1); ctx.Err() == nil; seq++ {
			if r, err := c.exchange(compact, listRooms, seq, nil); err == nil {
				w.saw(r.rooms(t), time.Now())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-w.done })
	return w
}

func (w *roomWatch) saw(rooms []room, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]uint32, 0, len(rooms))
	for _, r := range rooms {
		at, ok := w.seen[r.id]
		if !ok {
			at[0] = now
		}
		at[1] = now
		w.seen[r.id] = at
		ids = append(ids, r.id)
	}
	w.looks = append(w.looks, ids)
}

// peak is the most rooms not the real players' listed in one look. It is
// counted once the rounds are over: a look may list a real player's room
// before its CREATE's answer marks it as theirs.
func (w *roomWatch) peak() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	most := 0
	for _, ids := range w.looks {
		most = max(most, len(slices.DeleteFunc(slices.Clone(ids), func(id uint32) bool { return w.mine[id] })))
	}
	return most
}

// ours marks room id as the real players'.
func (w *roomWatch) ours(id uint32) {
	w.mu.Lock()
	w.mine[id] = true
	w.mu.Unlock()
}

// stopAndCheck waits, once the attack is over, until every room the
// attackers got is gone, and fails the test if one was listed longer than
// within (and the watch's 100 ms between two looks).
func (w *roomWatch) stopAndCheck(t *testing.T, within time.Duration) {
	t.Helper()
	time.Sleep(within + time.Second) // the last ones go
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, at := range w.seen {
		if life := at[1].Sub(at[0]); !w.mine[id] && life > within+200*time.Millisecond {
			t.Errorf("room %d of a creator who never came was listed for %v, longer than %v", id, life.Round(time.Millisecond), within)
		}
	}
}

// Capacity is what the listing says: with every instance in use, a room
// killed and gone from the listing leaves its place free at once, for the
// very next CREATE (on another port if its own is resting), every time.
func TestCapacityFreedWithTheListing(t *testing.T) {
	s := startServer(t, pollLimits, "max_instances = 2\nrooms_per_network = 2\nseat_ttl = \"60s\"")
	c := newClient(t, "127.0.0.1", s.lobby)
	c.list(1)
	seq := uint16(2)
	ids := map[uint32]bool{}
	for range 2 {
		seq++
		id, _ := c.request(compact, createRoom, seq, nil).roomPort(t)
		ids[id] = true
	}
	for round := range 10 {
		var victim uint32
		for id := range ids {
			victim = id
			break
		}
		killAndAwaitUnlisted(t, c, victim, s.instancePID(victim), &seq)
		delete(ids, victim)
		seq++
		r := c.request(compact, createRoom, seq, nil)
		if r.typ != roomCreated {
			t.Fatalf("round %d: CREATE right after a room left the listing answered %#x", round, r.typ)
		}
		id, _ := r.roomPortOf()
		ids[id] = true
	}
}

// BenchmarkRoomDoorUnderFlood is the door at flood size (root: raw
// sockets): 50,000 forged CREATEs a second from a million sources and
// 20,000 seatless HELLOs a second at the room ports, 50 and 10 times the
// tests' rates, while the rounds of real players run. The real players
// talked to the lobby before the flood: a player first seen in the middle
// of a flood of forged sources cannot be told from them (docs/security.md).
// It reports the share of rounds whose two players got in
// (admitted-share, to be 1), the longest a forged creator's room stayed
// listed (forged-room-max-s, to be at most seat_ttl and a second) and the
// datagrams the doors refused.
func BenchmarkRoomDoorUnderFlood(b *testing.B) {
	requiretest.RawSocket(b)
	for b.Loop() {
		s := startServer(b, "", doorConfig)
		w := watchRooms(b, s)
		for i := range rounds {
			newClient(b, realCreator(i), s.lobby).list(1)
			newClient(b, realFriend(i), s.lobby).list(1)
		}
		ok := rounds
		hello := encode(compact, gameHello, 1, 0, nil)
		playUnder(b, s, w, func(ctx context.Context) {
			var wg sync.WaitGroup
			wg.Go(func() {
				floodtest.Run(ctx, floodtest.Config{To: s.lobby, Payload: encode(compact, createRoom, 3, 0, nil), Sources: 1_000_000, Rate: 50_000})
			})
			for _, p := range poolPorts(s) {
				wg.Go(func() {
					floodtest.Run(ctx, floodtest.Config{To: netip.AddrPortFrom(s.lobby.Addr(), p), Payload: hello, Sources: 1_000_000, Rate: 1000})
				})
			}
			wg.Wait()
		}, func(int, error) { ok-- })
		time.Sleep(doorSeatTTL + 2*time.Second)
		w.stop()
		<-w.done
		b.ReportMetric(float64(ok)/rounds, "admitted-share")
		b.ReportMetric(w.longestForeign().Seconds(), "forged-room-max-s")
		b.ReportMetric(s.metrics(b)["foyer_room_door_refused_total"], "door-refused")
	}
}

// longestForeign is the longest a room not the real players' was listed.
func (w *roomWatch) longestForeign() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for id, at := range w.seen {
		if !w.mine[id] {
			longest = max(longest, at[1].Sub(at[0]))
		}
	}
	return longest
}

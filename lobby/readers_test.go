package lobby

import (
	"bytes"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// delivered is how long a test waits for a reply the lobby has counted as
// sent: on loopback it is in the client's socket already.
const delivered = 20 * time.Millisecond

// readersConfig is the test config with n readers per listen address.
func readersConfig(n int) setup {
	cfg := testConfig()
	cfg.Readers = n
	return cfg
}

// Every reader of a listen address is a socket at the same address: one
// address is reported, and clients from many addresses, which the kernel
// spreads over the sockets, are all answered.
func TestReadersShareTheAddress(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 7, Port: 30007, MaxPlayers: 4, State: packet.Waiting})
	l, addr := start(t, readersConfig(4), rooms)
	if len(l.conns) != 4 || len(l.Addrs()) != 1 {
		t.Fatalf("%d sockets for the addresses %v, want 4 for one", len(l.conns), l.Addrs())
	}
	for _, c := range l.conns {
		if c.LocalAddr().String() != addr.String() {
			t.Fatalf("a reader's socket at %v, the lobby's at %v", c.LocalAddr(), addr)
		}
	}
	var wg sync.WaitGroup
	for i := range 64 {
		c := dial(t, fmt.Sprintf("127.4.%d.%d", i/200, 1+i%200), addr)
		wg.Go(func() {
			if m := c.roundTrip(hdr(packet.Compact, packet.ListRooms, uint16(i)), 0); m.Type != packet.RoomList || len(m.Rooms) != 1 {
				t.Errorf("client %d: %+v", i, m)
			}
		})
	}
	wg.Wait()
}

// JOINs racing from many sources through every reader get exactly the
// free seats: the readers share one table.
func TestReadersRacingJoinsGetTheFreeSeats(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 7, Port: 30007, MaxPlayers: 4, State: packet.Waiting, Seats: 1})
	_, addr := start(t, readersConfig(4), rooms)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 100 {
		c := dial(t, fmt.Sprintf("127.5.0.%d", i+1), addr)
		wg.Go(func() {
			m := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, uint16(i)), 7)
			mu.Lock()
			defer mu.Unlock()
			if m.Type == packet.JoinSuccess {
				won++
			}
		})
	}
	wg.Wait()
	if won != 3 {
		t.Errorf("%d JOINs won a seat, want the 3 free ones", won)
	}
}

// A source's budget is one whichever reader its datagrams reach: from 40
// ports of one address, which the kernel spreads over 4 sockets, exactly
// the burst is answered.
func TestReadersShareASourcesBudget(t *testing.T) {
	const burst = 10
	cfg := readersConfig(4)
	cfg.Rate, cfg.Burst = 0.001, burst
	l, addr := start(t, cfg, newMemRooms(t, 8))
	clients := make([]*client, 40)
	for i := range clients {
		clients[i] = dial(t, "127.6.0.1", addr)
		clients[i].send(hdr(packet.Compact, packet.ListRooms, uint16(i)), 0)
	}
	// Requests too: a snapshot reads one counter after another.
	s := statsOnce(t, l, func(s Stats) bool {
		return s.Requests["list"] == 40 && s.Replies["room_list"]+s.Drops["rate_limited"] == 40
	})
	answered := 0
	for _, c := range clients {
		if _, ok := c.recv(delivered); ok {
			answered++
		}
	}
	if s.Requests["list"] != 40 || answered != burst || s.Drops["rate_limited"] != 40-burst {
		t.Errorf("%d LISTs arrived, %d answered, %d dropped as rate limited; want 40, %d and %d",
			s.Requests["list"], answered, s.Drops["rate_limited"], burst, 40-burst)
	}
}

// A network's reply budget is one whichever reader its requests reach:
// LISTs from 150 sources of one /24 get no more bytes than the budget's
// burst and refill (and less than they asked for).
func TestReadersShareANetworksBudget(t *testing.T) {
	const clients = 150
	cfg := readersConfig(4)
	cfg.ReflectionLimit = 1024
	rooms := newMemRooms(t, 80)
	for i := range 60 {
		rooms.add(room.Room{ID: uint32(10 + i), Port: uint16(30010 + i), MaxPlayers: 4, State: packet.Waiting})
	}
	l, addr := start(t, cfg, rooms)
	began := time.Now()
	cs := make([]*client, clients)
	for i := range cs {
		cs[i] = dial(t, fmt.Sprintf("127.7.0.%d", i+1), addr)
		cs[i].send(hdr(packet.Compact, packet.ListRooms, uint16(i)), 0)
	}
	statsOnce(t, l, func(s Stats) bool { return s.Replies["room_list"]+s.Drops["reflection"] == clients })
	budget := limit.MaxDatagram + int(time.Since(began).Seconds()+1)*cfg.ReflectionLimit
	bytesSent, answered := 0, 0
	for _, c := range cs {
		if m, ok := c.recv(delivered); ok {
			b, _ := m.Append(nil)
			bytesSent += len(b)
			answered++
		}
	}
	if answered == 0 || answered == clients || bytesSent > budget {
		t.Errorf("%d of %d LISTs answered, %d bytes to one /24; budget %d", answered, clients, bytesSent, budget)
	}
}

// A retry is answered from the cache whichever reader it reaches: a JOIN
// handled by one reader's loop, then again by another's, runs once and
// gets the same reply.
func TestRetryAnsweredByAnotherReader(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 7, Port: 30007, MaxPlayers: 4, State: packet.Waiting})
	l := testConfig().newLobby(rooms)
	join, err := (&packet.Message{Header: hdr(packet.Compact, packet.JoinRoom, 9), RoomID: 7}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddrPort("192.0.2.1:4000")
	local := netip.MustParseAddr("127.0.0.1")
	var replies [2][]byte
	for reader := range replies {
		var os offers // each loop's own
		w := &recording{}
		l.handle(w, w, &os, join, from, arrival{to: local}, time.Now(), nil)
		replies[reader] = w.last
	}
	if s := l.Stats(); s.Granted["join"] != 1 || s.Retries != 1 || !bytes.Equal(replies[0], replies[1]) || len(replies[0]) == 0 {
		t.Errorf("granted %d, retries %d, replies %x and %x; want one JOIN run and its reply again",
			s.Granted["join"], s.Retries, replies[0], replies[1])
	}
}

// recording is a sender that keeps the last datagram sent.
type recording struct{ last []byte }

func (r *recording) WriteFrom(b []byte, _ netip.AddrPort, _ netip.Addr) (int, error) {
	r.last = append([]byte(nil), b...)
	return len(b), nil
}

package lobby

import (
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// TestKernelFilterDropsBeforeTheLoop sends a lobby malformed datagrams
// and then a LIST, with and without its socket filter. With it, the read
// loop never sees them: no drop of its own is counted, the kernel's count
// has each, and the lobby does not take them for a flood. Without it, the
// loop counts each by its reason.
func TestKernelFilterDropsBeforeTheLoop(t *testing.T) {
	list, err := (&packet.Message{Header: packet.Header{Type: packet.ListRooms, Seq: 1}}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	junk := [][]byte{append(slices.Clone(list), 0), {1, 2, 3}, make([]byte, 1400)}
	for _, filter := range []bool{true, false} {
		cfg := testConfig()
		cfg.Filter = filter
		rooms := newMemRooms(t, 4)
		rooms.add(room.Room{ID: 1, MaxPlayers: 4, Port: 30001})
		l, addr := start(t, cfg, rooms)
		c := dial(t, "127.0.0.1", addr)
		const rounds = 10
		for range rounds {
			for _, b := range junk {
				c.sendRaw(b)
			}
		}
		if m := c.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0); m.Type != packet.RoomList {
			t.Fatalf("filter %v: LIST answered %#x", filter, m.Type)
		}
		s := l.Stats()
		var loop uint64
		for _, n := range s.Drops {
			loop += n
		}
		want := uint64(rounds * len(junk))
		if filter && (loop != 0 || s.KernelDrops != want) {
			t.Errorf("filtered: the loop dropped %d (%v), the kernel %d; want 0 and %d", loop, s.Drops, s.KernelDrops, want)
		}
		if !filter && (loop != want || s.KernelDrops != 0) {
			t.Errorf("unfiltered: the loop dropped %d (%v), the kernel %d; want %d and 0", loop, s.Drops, s.KernelDrops, want)
		}
		if l.guard.UnderPressure(time.Now()) {
			t.Errorf("filter %v: malformed datagrams taken for a flood", filter)
		}
	}
}

// TestOverflowIsAFloodWithTheFilter: with the socket filter on, a
// receive buffer that runs over still tells the lobby it is flooded. A
// sender fills the socket of a lobby not yet reading, and keeps sending
// while it starts.
func TestOverflowIsAFloodWithTheFilter(t *testing.T) {
	cfg := testConfig()
	cfg.Readers = 1
	l, err := cfg.build(newMemRooms(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	list, err := (&packet.Message{Header: packet.Header{Type: packet.ListRooms, Seq: 1}}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, "127.0.0.1", l.Addrs()[0])
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.conn.WriteToUDPAddrPort(list, c.to)
		}
	}()
	defer func() { close(stop); <-sent }()
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().KernelDrops == 0 { // the buffer is full
		if time.Now().After(deadline) {
			t.Fatal("the kernel counted no drop while the buffer was flooded")
		}
		time.Sleep(time.Millisecond)
	}
	edgetest.Serve(t, l.Serve)
	deadline = time.Now().Add(10 * time.Second)
	for !l.guard.UnderPressure(time.Now()) {
		if time.Now().After(deadline) {
			t.Fatalf("a buffer that ran over (%d drops) was not taken for a flood", l.Stats().KernelDrops)
		}
		time.Sleep(time.Millisecond)
	}
}

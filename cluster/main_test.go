package cluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// memLocal is an in-memory local table with the supervisor's rules that
// matter here (ids from the cluster's range, seats up to MaxPlayers,
// capacity), so clusters of many hosts run in one test process over a
// real NATS server without spawning rooms.
type memLocal struct {
	mu       sync.Mutex
	next     uint32
	free     int
	version  uint64
	rooms    map[uint32]*room.Room
	seats    map[uint32]map[netip.AddrPort]bool
	watchers []chan room.Event
	snap     room.Snapshot
	snapOK   bool
}

func newMemLocal(free int) *memLocal {
	return &memLocal{free: free, rooms: map[uint32]*room.Room{}, seats: map[uint32]map[netip.AddrPort]bool{}}
}

func (m *memLocal) List() room.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.snapOK {
		rooms := make([]room.Room, 0, len(m.rooms))
		for _, r := range m.rooms {
			rooms = append(rooms, *r)
		}
		slices.SortFunc(rooms, func(a, b room.Room) int { return cmp.Compare(a.ID, b.ID) })
		m.snap, m.snapOK = room.Snapshot{Version: m.version, Rooms: rooms}, true
	}
	return m.snap
}

func (m *memLocal) Capacity() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.free
}

func (m *memLocal) Watch(ctx context.Context) <-chan room.Event {
	ch := make(chan room.Event, 4096)
	m.mu.Lock()
	m.watchers = append(m.watchers, ch)
	m.mu.Unlock()
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.watchers = slices.DeleteFunc(m.watchers, func(w chan room.Event) bool { return w == ch })
		close(ch)
	})
	return ch
}

// emit records a change. m.mu is held.
func (m *memLocal) emit(kind room.EventKind, r room.Room) {
	m.version++
	m.snapOK = false
	for _, ch := range m.watchers {
		select {
		case ch <- room.Event{Kind: kind, Room: r, Version: m.version}:
		default:
		}
	}
}

func (m *memLocal) Create(_ context.Context, creator netip.AddrPort) (room.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.free == 0 {
		return room.Room{}, fmt.Errorf("%w: none free", room.ErrCapacity)
	}
	m.free--
	r := m.add(packet.Waiting, 4)
	m.seats[r.ID][creator] = true
	r.Seats = 1
	m.emit(room.Created, *r)
	return *r, nil
}

// add makes a room without emitting. m.mu is held.
func (m *memLocal) add(state packet.RoomState, maxPlayers int) *room.Room {
	r := &room.Room{ID: m.next, Port: uint16(40000 + m.next%1000), State: state, MaxPlayers: maxPlayers,
		StartedAt: time.UnixMilli(time.Now().UnixMilli()), Source: room.Instance}
	m.next++
	m.rooms[r.ID] = r
	m.seats[r.ID] = map[netip.AddrPort]bool{}
	return r
}

func (m *memLocal) Join(_ context.Context, id uint32, player netip.AddrPort, _ room.Proof) (room.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rooms[id]
	if r == nil {
		return room.Room{}, room.ErrNoRoom
	}
	if m.seats[id][player] {
		return *r, nil
	}
	if err := r.JoinError(); err != nil {
		return room.Room{}, err
	}
	m.seats[id][player] = true
	r.Seats++
	m.emit(room.Changed, *r)
	return *r, nil
}

// setPlayers changes a room's players, as a status report would.
func (m *memLocal) setPlayers(id uint32, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rooms[id]
	r.Players = n
	m.emit(room.Changed, *r)
}

// remove reaps a room.
func (m *memLocal) remove(id uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rooms[id]
	delete(m.rooms, id)
	m.free++
	m.emit(room.Reaped, *r)
}

// natsServer runs a NATS server with JetStream on a free loopback port
// for the test, and returns it, its options (to restart it with) and its
// URL.
func natsServer(t testing.TB) (*server.Server, *server.Options, string) {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	s := restart(t, opts)
	opts.Port = s.Addr().(*net.TCPAddr).Port
	return s, opts, s.ClientURL()
}

// restart starts a NATS server with opts, shut down at the end of the test.
func restart(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// testConfig is a host of the test's cluster at url, with the public
// address addr and timings short enough for a test.
func testConfig(url, name string, addr netip.Addr) Config {
	c := DefaultConfig()
	c.NATS, c.Host, c.PublicAddr = []string{url}, name, addr
	c.HostTTL = 2 * time.Second
	c.Heartbeat = 200 * time.Millisecond
	return c
}

// join starts host name with local as its table, and leaves at the end
// of the test.
func join(t testing.TB, cfg Config, local *memLocal) *Cluster {
	t.Helper()
	c, err := Start(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	first, _, next := c.IDs()
	local.mu.Lock()
	local.next = next
	local.mu.Unlock()
	if next < first {
		t.Fatalf("next id %d below the range's first %d", next, first)
	}
	if err := c.Attach(local); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// eventually polls cond until it holds, failing after a generous limit.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lists reports whether c lists room id, run by node.
func lists(c *Cluster, id uint32, node string) bool {
	for _, r := range c.List().Rooms {
		if r.ID == id {
			return r.Node == node
		}
	}
	return false
}

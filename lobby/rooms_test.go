package lobby

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// memRooms is an in-memory room.Table with the supervisor's JOIN
// rules, so the lobby can be tested over real sockets without spawning
// processes.
type memRooms struct {
	mu           sync.Mutex
	version      uint64
	rooms        []room.Room
	seats        map[uint32]map[netip.AddrPort]bool
	maxInstances int
	gate         chan struct{} // when set, Create waits for it
	joinGate     chan struct{} // when set, Join waits for it
	creates      atomic.Int64
	joins        atomic.Int64
	proofs       *[]room.Proof // when set, the proof of every Join, in order
	watchers     []chan room.Event
}

func newMemRooms(maxInstances int) *memRooms {
	return &memRooms{seats: map[uint32]map[netip.AddrPort]bool{}, maxInstances: maxInstances}
}

// add puts a room in the table directly.
func (m *memRooms) add(r room.Room) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rooms = append(m.rooms, r)
	m.seats[r.ID] = map[netip.AddrPort]bool{}
	m.changed(room.Created, r)
}

// changed bumps the version and tells the watchers; m.mu is held.
func (m *memRooms) changed(kind room.EventKind, r room.Room) {
	m.version++
	for _, w := range m.watchers {
		select {
		case w <- room.Event{Kind: kind, Room: r, Version: m.version}:
		default:
		}
	}
}

func (m *memRooms) List() room.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return room.Snapshot{Version: m.version, Rooms: slices.Clone(m.rooms)}
}

func (m *memRooms) Create(ctx context.Context, creator netip.AddrPort) (room.Room, error) {
	m.creates.Add(1)
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return room.Room{}, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.rooms) >= m.maxInstances {
		return room.Room{}, room.ErrCapacity
	}
	id := uint32(len(m.rooms) + 1)
	r := room.Room{ID: id, Port: uint16(30000 + id), MaxPlayers: 4, Seats: 1, State: packet.Waiting}
	m.rooms = append(m.rooms, r)
	m.seats[id] = map[netip.AddrPort]bool{creator: true}
	m.changed(room.Created, r)
	return r, nil
}

func (m *memRooms) Join(ctx context.Context, id uint32, player netip.AddrPort, proof room.Proof) (room.Room, error) {
	m.joins.Add(1)
	if m.joinGate != nil {
		<-m.joinGate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proofs != nil {
		*m.proofs = append(*m.proofs, proof)
	}
	i := slices.IndexFunc(m.rooms, func(r room.Room) bool { return r.ID == id })
	if i < 0 {
		return room.Room{}, room.ErrNoRoom
	}
	r := &m.rooms[i]
	switch {
	case m.seats[id][player]:
		return *r, nil
	case r.State != packet.Waiting && r.State != packet.Countdown:
		return room.Room{}, room.ErrNotJoinable
	case r.Players+r.Seats >= r.MaxPlayers:
		return room.Room{}, room.ErrFull
	}
	m.seats[id][player] = true
	r.Seats++
	m.changed(room.Changed, *r)
	return *r, nil
}

// JoinNeverWaits is true, as for the supervisor, whose Join only takes its
// table's lock, unless the test makes Join wait.
func (m *memRooms) JoinNeverWaits() bool { return m.joinGate == nil }

func (m *memRooms) Watch(ctx context.Context) <-chan room.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan room.Event, 64)
	m.watchers = append(m.watchers, ch)
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.watchers = slices.DeleteFunc(m.watchers, func(w chan room.Event) bool { return w == ch })
		close(ch)
	}()
	return ch
}

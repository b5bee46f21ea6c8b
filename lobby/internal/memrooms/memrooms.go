// Package memrooms is an in-memory room table implementing
// room.Table and room.Registry, for the front-ends' tests: the
// sockets under test are real, the supervisor behind them is this table.
package memrooms

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// Table is a room table. The zero value is not usable; call New.
type Table struct {
	mu       sync.Mutex
	version  uint64
	next     uint32
	rooms    map[uint32]room.Room
	keys     map[string]uint32
	watchers room.Watchers
	snap     *room.Snapshot // List's answer until the next change
}

// New returns an empty table.
func New() *Table {
	return &Table{
		next:  1,
		rooms: make(map[uint32]room.Room),
		keys:  make(map[string]uint32),
	}
}

// emit records a change; t.mu is held. Slow watchers miss events, as the
// Rooms contract allows.
func (t *Table) emit(kind room.EventKind, r room.Room) {
	t.version++
	t.snap = nil
	t.watchers.Send(room.Event{Kind: kind, Room: r, Version: t.version})
}

// Add puts r in the table under a new id (its Source defaults to
// "instance") and returns it as stored.
func (t *Table) Add(r room.Room) room.Room {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.ID = t.next
	t.next++
	if r.Source == "" {
		r.Source = "instance"
	}
	t.rooms[r.ID] = r
	t.emit(room.Created, r)
	return r
}

// Update replaces the room with r's id.
func (t *Table) Update(r room.Room) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.rooms[r.ID]; ok {
		t.rooms[r.ID] = r
		t.emit(room.Changed, r)
	}
}

// Reap removes room id.
func (t *Table) Reap(id uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.rooms[id]; ok {
		delete(t.rooms, id)
		t.emit(room.Reaped, r)
	}
}

// List returns the rooms ordered by id. Like a supervisor's, the slice is
// shared between callers until the table changes: callers must not modify
// it.
func (t *Table) List() room.Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.snap == nil {
		s := room.Snapshot{Version: t.version}
		for _, r := range t.rooms {
			s.Rooms = append(s.Rooms, r)
		}
		slices.SortFunc(s.Rooms, func(a, b room.Room) int { return cmp.Compare(a.ID, b.ID) })
		t.snap = &s
	}
	return *t.snap
}

// Create adds a Waiting room of four seats on port 40000+id.
func (t *Table) Create(ctx context.Context, creator netip.AddrPort) (room.Room, error) {
	t.mu.Lock()
	port := uint16(40000 + t.next)
	t.mu.Unlock()
	return t.Add(room.Room{Port: port, State: packet.Waiting, Seats: 1, MaxPlayers: 4, StartedAt: time.Now()}), nil
}

// Join holds a seat in room id if one is free.
func (t *Table) Join(ctx context.Context, id uint32, player netip.AddrPort, _ room.Proof) (room.Room, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.rooms[id]
	switch {
	case !ok:
		return r, room.ErrNoRoom
	}
	if err := r.JoinError(); err != nil {
		return r, err
	}
	r.Seats++
	t.rooms[id] = r
	t.emit(room.Changed, r)
	return r, nil
}

// Watch delivers events until ctx is done.
func (t *Table) Watch(ctx context.Context) <-chan room.Event {
	return t.watchers.Watch(ctx, 64)
}

// Register adds or updates the room registered under key.
func (t *Table) Register(key string, l room.Listing) (room.Room, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.keys[key]
	if !ok {
		id = t.next
		t.next++
		t.keys[key] = id
	}
	r := room.Room{
		ID: id, Port: l.Addr.Port(), State: packet.Waiting, Players: l.Players,
		MaxPlayers: l.MaxPlayers, Source: room.GG2, Name: l.Name, Game: l.Game, Map: l.Map,
		Host: l.Addr.Addr(), Password: l.Password, Unchecked: l.Unchecked,
	}
	t.rooms[id] = r
	kind := room.Changed
	if !ok {
		kind = room.Created
	}
	t.emit(kind, r)
	return r, nil
}

// Unregister removes the room registered under key.
func (t *Table) Unregister(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.keys[key]
	if !ok {
		return
	}
	delete(t.keys, key)
	r := t.rooms[id]
	delete(t.rooms, id)
	t.emit(room.Reaped, r)
}

// Registered returns the room registered under key.
func (t *Table) Registered(key string) (room.Room, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.keys[key]
	return t.rooms[id], ok
}

// Keys returns the registered keys, sorted.
func (t *Table) Keys() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.keys))
	for k := range t.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

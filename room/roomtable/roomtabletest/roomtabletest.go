// Package roomtabletest gives tests a real room table (package roomtable)
// with no processes behind it: the rooms are rows a test enters, changes
// and removes, and every List, Create, Join and Register runs under the
// table's own rules, exactly as it does in front of a supervisor.
package roomtabletest

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
)

// Unlimited is the capacity of a table that creates as many rooms as it
// is asked for.
const Unlimited = -1

// Rooms is a room table whose Create makes a Waiting room of MaxPlayers
// places on port BasePort+id, without a process, while it has capacity.
type Rooms struct {
	*roomtable.Table

	mu       sync.Mutex
	capacity int
	delay    time.Duration // how long a Spawn takes
	draining bool          // Spawn refuses, as a drained host's does
}

// Defaults of the rooms Create makes.
const (
	MaxPlayers = 4
	BasePort   = 40000
)

// New returns an empty table of Unlimited capacity with cfg's rules, closed
// at the end of the test. Zero SeatTTL, SeatsPerAddress, ReconnectGrace and
// RoomsPerNetwork take roomtable.DefaultConfig's, so that a test says only
// what it is about.
func New(t testing.TB, cfg roomtable.Config) *Rooms {
	t.Helper()
	d := roomtable.DefaultConfig()
	cfg.SeatTTL = cmp.Or(cfg.SeatTTL, d.SeatTTL)
	cfg.SeatsPerAddress = cmp.Or(cfg.SeatsPerAddress, d.SeatsPerAddress)
	cfg.RoomsPerNetwork = cmp.Or(cfg.RoomsPerNetwork, d.RoomsPerNetwork)
	cfg.ReconnectGrace = cmp.Or(cfg.ReconnectGrace, d.ReconnectGrace)
	r := &Rooms{capacity: Unlimited}
	table, err := roomtable.New(cfg, r, zerolog.Nop())
	if err != nil {
		t.Fatalf("roomtabletest: %v", err)
	}
	r.Table = table
	t.Cleanup(table.Close)
	return r
}

// SetCapacity sets how many more rooms Create makes (Unlimited: any
// number).
func (r *Rooms) SetCapacity(n int) {
	r.mu.Lock()
	r.capacity = n
	r.mu.Unlock()
}

// SetDraining, on, makes the table a drained host's: Capacity is 0 and
// every Create is refused with room.ErrDraining, until it is set off.
func (r *Rooms) SetDraining(on bool) {
	r.mu.Lock()
	r.draining = on
	r.mu.Unlock()
}

// Capacity is how many more rooms Create makes, or Unlimited.
func (r *Rooms) Capacity() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draining {
		return 0
	}
	return r.capacity
}

// SetSpawnDelay makes every Spawn take d, as a real room's start does, so
// that a test sees what happens meanwhile.
func (r *Rooms) SetSpawnDelay(d time.Duration) {
	r.mu.Lock()
	r.delay = d
	r.mu.Unlock()
}

// RoomSize is MaxPlayers, the places of every room Create makes.
func (r *Rooms) RoomSize() int { return MaxPlayers }

// Spawn makes the room a Create asks for and hands it to creator: the
// table's Spawner.
func (r *Rooms) Spawn(_ context.Context, creator netip.AddrPort, h roomtable.Handout) (room.Room, error) {
	r.mu.Lock()
	delay := r.delay
	r.mu.Unlock()
	time.Sleep(delay)
	r.mu.Lock()
	if r.draining {
		r.mu.Unlock()
		return room.Room{}, fmt.Errorf("%w: the test table drains", room.ErrDraining)
	}
	if r.capacity == 0 {
		r.mu.Unlock()
		return room.Room{}, fmt.Errorf("%w: no room left in the test table", room.ErrCapacity)
	}
	if r.capacity > 0 {
		r.capacity--
	}
	r.mu.Unlock()
	id := r.NewID()
	r.Enter(room.Room{ID: id, Port: port(id), State: packet.Waiting, MaxPlayers: MaxPlayers,
		StartedAt: time.Now(), Source: room.Instance}, false, nil, nil)
	row, ok := r.Hand(id, creator, h)
	if !ok {
		return room.Room{}, room.ErrClosed
	}
	return row, nil
}

// port is the port of a room Create makes.
func port(id uint32) uint16 { return uint16(BasePort + id%10000) }

// Add lists row under a new id, as a room adopted with the given state,
// players and metadata would be (Source "instance" when it has none; port
// BasePort+id when it has none; a row's Seats are ignored: seats are held
// by Join), and returns it as listed.
func (r *Rooms) Add(row room.Room) room.Room {
	row.ID = r.NewID()
	if row.Source == "" {
		row.Source = room.Instance
	}
	if row.Port == 0 {
		row.Port = port(row.ID)
	}
	if row.StartedAt.IsZero() {
		row.StartedAt = time.Now()
	}
	// Enter lists the row as given, with no seat held: that is the row
	// listed, without a List per room, which would make a table of
	// thousands of rooms take seconds to fill.
	row.Seats = 0
	r.Enter(row, true, nil, nil)
	return row
}

// Update reports row's state, players and metadata for the room of its id,
// as the room's process would.
func (r *Rooms) Update(row room.Room) {
	r.Report(row.ID, roomtable.Report{State: row.State, Players: row.Players, Details: &roomtable.Details{
		MaxPlayers: row.MaxPlayers, Name: row.Name, Game: row.Game, Map: row.Map, Password: row.Password}})
}

// Reap removes room id, as if its process exited cleanly.
func (r *Rooms) Reap(id uint32) { r.Remove(id, room.Exited, 0, "") }

// Room returns the listed room id.
func (r *Rooms) Room(id uint32) (room.Room, bool) {
	for _, row := range r.List().Rooms {
		if row.ID == id {
			return row, true
		}
	}
	return room.Room{}, false
}

package roomtable

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// Register lists a room that runs elsewhere, or updates the one already
// registered under key in place (same id; the table version moves only
// when something changed). The room is Waiting while listed and has no
// process behind it. Its seats work as for spawned rooms; a registration
// reports no player addresses, so when one reports k more players than the
// last, the k oldest seats are taken to be those players (see fillSeats).
//
// Register never calls back into an edge, so an edge may call it under
// its own lock. Errors wrap room.ErrClosed or room.ErrListing.
func (t *Table) Register(key string, l room.Listing) (room.Room, error) {
	if !l.Addr.IsValid() || l.Addr.Port() == 0 || l.Players < 0 || l.MaxPlayers < 0 ||
		l.Players > math.MaxUint16 || l.MaxPlayers > math.MaxUint16 {
		return room.Room{}, fmt.Errorf("%w: %q at %v with %d of %d players", room.ErrListing, key, l.Addr, l.Players, l.MaxPlayers)
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return room.Room{}, room.ErrClosed
	}
	if e := t.registered[key]; e != nil {
		old, before := e.view(), e.row.Players
		applyListing(&e.row, l)
		fillSeats(e, before)
		row := e.view()
		if row != old {
			t.emit(room.Event{Kind: room.Changed, Room: row})
		}
		t.mu.Unlock()
		return row, nil
	}
	id := t.newID()
	e := &entry{
		row:    room.Room{ID: id, StartedAt: time.Now(), Source: room.GG2, State: packet.Waiting},
		listed: true,
		key:    key,
	}
	applyListing(&e.row, l)
	t.registered[key] = e
	t.rooms[id] = e
	row := e.view()
	t.emit(room.Event{Kind: room.Created, Room: row})
	t.mu.Unlock()
	t.log.Info().Uint32("id", id).Stringer("addr", l.Addr).Str("source", string(row.Source)).Msg("room registered")
	return row, nil
}

// Unregister removes the room registered under key, if any, with the
// cause "unregistered".
func (t *Table) Unregister(key string) {
	t.mu.Lock()
	e := t.registered[key]
	if e == nil {
		t.mu.Unlock()
		return
	}
	row := t.drop(e, room.Unregistered)
	t.mu.Unlock()
	t.log.Info().Uint32("id", row.ID).Str("key", key).Str("cause", string(room.Unregistered)).Msg("room reaped")
}

// drop removes registered room e from the table. t.mu is held.
func (t *Table) drop(e *entry, cause room.Cause) room.Room {
	delete(t.registered, e.key)
	delete(t.rooms, e.row.ID)
	t.stats.Reaped[cause]++
	row := e.view()
	t.emit(room.Event{Kind: room.Reaped, Room: row, Cause: cause})
	return row
}

// applyListing copies what a registration says into a table row.
func applyListing(row *room.Room, l room.Listing) {
	row.Host, row.Port = l.Addr.Addr().Unmap(), l.Addr.Port()
	row.Players, row.MaxPlayers = l.Players, l.MaxPlayers
	row.Name, row.Game, row.Map, row.Password = l.Name, l.Game, l.Map, l.Password
	row.Unchecked = l.Unchecked
}

// Registered returns the room registered under key.
func (t *Table) Registered(key string) (room.Room, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.registered[key]; e != nil {
		return e.view(), true
	}
	return room.Room{}, false
}

// RegisteredKeys returns the keys rooms are registered under, sorted.
func (t *Table) RegisteredKeys() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.registered))
}

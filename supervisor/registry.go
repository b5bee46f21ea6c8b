package supervisor

import (
	"fmt"
	"math"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

var _ room.Registry = (*Supervisor)(nil)

// Register lists a room that runs elsewhere, or updates the one already
// registered under key in place (same id; the table version moves only
// when something changed). The room is Waiting while listed, takes no
// port from the pool and no process, and counts no instance against
// MaxInstances. Its seats work as for spawned rooms; a registration
// reports no player addresses, so when one reports k more players than the
// last, the k oldest seats are taken to be those players (see fillSeats).
//
// Register never calls back into an edge, so an edge may call it under
// its own lock. Errors wrap room.ErrClosed or room.ErrListing.
func (s *Supervisor) Register(key string, l room.Listing) (room.Room, error) {
	if !l.Addr.IsValid() || l.Addr.Port() == 0 || l.Players < 0 || l.MaxPlayers < 0 ||
		l.Players > math.MaxUint16 || l.MaxPlayers > math.MaxUint16 {
		return room.Room{}, fmt.Errorf("%w: %q at %v with %d of %d players", room.ErrListing, key, l.Addr, l.Players, l.MaxPlayers)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return room.Room{}, room.ErrClosed
	}
	r := s.registered[key]
	if r != nil {
		old, before := r.view(), r.row.Players
		applyListing(&r.row, l)
		s.fillSeats(r, before)
		row := r.view()
		if row != old {
			s.emit(room.Event{Kind: room.Changed, Room: row})
		}
		s.mu.Unlock()
		return row, nil
	}
	id := s.ids.take()
	r = &record{
		row:    room.Room{ID: id, StartedAt: time.Now(), Source: room.GG2, State: packet.Waiting},
		listed: true,
		key:    key,
	}
	applyListing(&r.row, l)
	s.registered[key] = r
	s.live[id] = r
	row := r.view()
	s.emit(room.Event{Kind: room.Created, Room: row})
	s.mu.Unlock()
	s.log.Info().Uint32("id", id).Stringer("addr", l.Addr).Str("source", string(row.Source)).Msg("room registered")
	return row, nil
}

// Unregister removes the room registered under key, if any, with the
// cause "unregistered".
func (s *Supervisor) Unregister(key string) {
	s.mu.Lock()
	r := s.registered[key]
	if r == nil {
		s.mu.Unlock()
		return
	}
	row := s.dropRegistered(r, room.Unregistered)
	s.mu.Unlock()
	s.log.Info().Uint32("id", row.ID).Str("key", key).Str("cause", "unregistered").Msg("room reaped")
}

// dropRegistered removes registered room r from the table. s.mu is held.
func (s *Supervisor) dropRegistered(r *record, cause room.Cause) room.Room {
	delete(s.registered, r.key)
	delete(s.live, r.row.ID)
	s.stats.Reaped[cause]++
	row := r.view()
	s.emit(room.Event{Kind: room.Reaped, Room: row, Cause: cause})
	return row
}

// applyListing copies what a registration says into a table row.
func applyListing(row *room.Room, l room.Listing) {
	row.Host, row.Port = l.Addr.Addr().Unmap(), l.Addr.Port()
	row.Players, row.MaxPlayers = l.Players, l.MaxPlayers
	row.Name, row.Game, row.Map, row.Password = l.Name, l.Game, l.Map, l.Password
}

// fillSeats turns seats into players for a room whose status carries no
// player addresses (registered and probed rooms): when the players grew
// from before, that many seats, the oldest first, are taken to be the
// newcomers. A seat whose player never came expires after SeatTTL as
// usual, so a wrong guess costs at most one SeatTTL of a seat. s.mu is held.
func (s *Supervisor) fillSeats(r *record, before int) {
	if n := r.row.Players - before; n > 0 {
		r.seats.dropOldest(n)
	}
}

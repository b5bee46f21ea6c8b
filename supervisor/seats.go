package supervisor

import (
	"context"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// Every room's instance keeps the seats its room holds: its door admits
// the players the lobby seated and no one else, and a lobby that adopts
// the room after a crash or an upgrade finds the seats there. The table
// tells the supervisor of every change (remember); one goroutine sends
// them, off every lock a request waits on.

// keepLazy is how often the keeper sends the rooms whose seats were only
// refreshed: a refresh of a seat that has more than twice this left waits
// for the next round, so that a flood of repeated JOINs costs a room one
// Keep a round, not one each.
const keepLazy = time.Second

// remember marks room id's seats for its instance to keep, and to admit
// its players by, at once or, for a change its instance needs only by by
// (a refresh), within keepLazy: the table's SeatsChanged hook, called
// under the table's lock.
func (s *Supervisor) remember(id uint32, by time.Time) {
	s.dirtyMu.Lock()
	if !by.IsZero() && time.Until(by) > 2*keepLazy {
		s.lazy[id] = struct{}{}
		s.dirtyMu.Unlock()
		return
	}
	s.dirty[id] = struct{}{}
	s.dirtyMu.Unlock()
	select {
	case s.keepWake <- struct{}{}:
	default:
	}
}

// keepSeats sends the seats of every changed room to its instance, off
// every lock a request waits on: one Keep per room however many changes
// came since the last, and the refreshed ones every keepLazy.
func (s *Supervisor) keepSeats() {
	defer s.wg.Done()
	tick := time.NewTicker(keepLazy)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.keepWake:
			s.flushSeats(false)
		case <-tick.C:
			s.flushSeats(true)
		}
	}
}

// flushSeats sends what remember marked to send at once, and with lazy
// what it marked for the next round too.
func (s *Supervisor) flushSeats(lazy bool) {
	s.dirtyMu.Lock()
	batch := s.dirty
	s.dirty = make(map[uint32]struct{})
	for id := range s.lazy {
		if _, ok := batch[id]; ok || lazy {
			batch[id] = struct{}{} // the Keep sends the refreshes too
			delete(s.lazy, id)
		}
	}
	s.dirtyMu.Unlock()
	s.mu.Lock()
	rs := make([]*record, 0, len(batch))
	for id := range batch {
		// A room still starting gets its seats once it is ready (boot).
		if r := s.live[id]; r != nil && !r.booting {
			rs = append(rs, r)
		}
	}
	s.mu.Unlock()
	for _, r := range rs {
		s.keep(r)
	}
}

// seatKeys are room id's keys of this host's seat tokens (ext.RoomKey):
// each room gets its own, so that it can check the tokens of its own seats
// and make none for another room.
func (s *Supervisor) seatKeys(id uint32) []instance.SeatKey {
	k := s.table.SeatKeys()
	return []instance.SeatKey{{Epoch: k.Epoch, Key: ext.RoomKey(k.Key, id)}}
}

// keep sends r's instance the room's present seats and listed flag. Calls
// for one room are sent one at a time, each with the present as it is
// when its turn comes, so the instance never ends up with an older state.
func (s *Supervisor) keep(r *record) {
	r.keepMu.Lock()
	defer r.keepMu.Unlock()
	kp, ok := s.table.Keeping(r.row.ID)
	if !ok {
		return // reaped meanwhile
	}
	s.keepDoor(r, kp.Seats)
	k := host.Kept{Listed: kp.Listed, Seats: kp.Seats, Keys: s.seatKeys(r.row.ID), Meta: kp.Row.Meta(),
		Code: kp.Row.Code, Private: kp.Row.Private, Password: kp.Password}
	ctx, cancel := context.WithTimeout(context.Background(), keepTimeout)
	defer cancel()
	if err := r.proc.Keep(ctx, k); err != nil {
		s.log.Debug().Uint32("id", r.row.ID).Err(err).Msg("room seats not kept")
	}
}

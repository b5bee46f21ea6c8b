package supervisor

import (
	"context"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// Every room's instance keeps the seats its room holds: its door admits
// the players the lobby seated and no one else, and a lobby that adopts
// the room after a crash or an upgrade finds the seats there. The table
// tells the supervisor of every change (remember); one goroutine sends
// them, off every lock a request waits on.

// remember marks room id's seats for its instance to keep, and to admit
// its players by: the table's SeatsChanged hook, called under the table's
// lock.
func (s *Supervisor) remember(id uint32) {
	s.dirtyMu.Lock()
	s.dirty[id] = struct{}{}
	s.dirtyMu.Unlock()
	select {
	case s.keepWake <- struct{}{}:
	default:
	}
}

// keepSeats sends the seats of every changed room to its instance, off
// every lock a request waits on: one Keep per room however many changes
// came since the last.
func (s *Supervisor) keepSeats() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.keepWake:
			s.flushSeats()
		}
	}
}

// flushSeats sends what remember marked, now.
func (s *Supervisor) flushSeats() {
	s.dirtyMu.Lock()
	batch := s.dirty
	s.dirty = make(map[uint32]struct{})
	s.dirtyMu.Unlock()
	s.mu.Lock()
	rs := make([]*record, 0, len(batch))
	for id := range batch {
		if r := s.live[id]; r != nil {
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

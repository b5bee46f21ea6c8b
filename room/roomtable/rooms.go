package roomtable

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// This file is the table's side for whatever runs the rooms (a Spawner):
// ids for new rooms, rooms entered and handed out, what they report, and
// their end.

// NewID returns an id for a new room: never 0, never one handed out
// before (see Config.IDFile), within Config.IDs, and never one a room in
// the table has, even after the ids wrapped.
func (t *Table) NewID() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.newID()
}

// newID is NewID. t.mu is held. Of any len(t.rooms)+1 ids in a row one
// is free, however the ids wrap, as long as a range confining them holds
// more ids than the table holds rooms.
func (t *Table) newID() uint32 {
	id := t.ids.take()
	for range len(t.rooms) {
		if t.rooms[id] == nil {
			break
		}
		id = t.ids.take()
	}
	return id
}

// AwaitID waits, within ctx, until id is covered by the mark on disk, so
// that no room is announced under an id a crash could hand out again. That
// wait is rare (a burst of rooms faster than one write of the mark); it
// returns ctx's error when the mark is not written in time.
func (t *Table) AwaitID(ctx context.Context, id uint32) error {
	for ch := t.ids.durable(id); ch != nil; ch = t.ids.durable(id) {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Enter puts a room into the table under row.ID: listed at once (a room
// adopted as it was handed out), or kept ready until Hand lists it. seats
// are those the room held before (an adopted room's), as Seats gave them;
// expired ones are dropped; password is the salted hash of its password,
// as Keeping gave it (nil: none). An adopted room keeps its code, unless
// another room has it. The id is never handed out again. An id comes
// from NewID or from an adopted room, which no other room has: Enter
// panics on an id of 0 or one the table has.
func (t *Table) Enter(row room.Room, listed bool, seats []room.Seat, password []byte) {
	t.ids.above(row.ID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.rooms[row.ID]; ok || row.ID == 0 {
		panic(fmt.Sprintf("room table: room id %d entered twice", row.ID))
	}
	e := &entry{row: row, listed: listed}
	e.row.Seats = 0
	if len(password) == saltLen+hashLen {
		e.password = password
	}
	e.row.Password = e.password != nil
	if _, taken := t.codes[e.row.Code]; e.row.Code == "" || taken {
		e.row.Code = t.newCode()
	}
	t.codes[e.row.Code] = row.ID
	e.seats.restore(seats, time.Now())
	// An adopted room's creator is on its way only while its seat is
	// held; a room kept ready waits for its creator's seat (Hand).
	e.arrived = listed && !e.seats.holdsCreator()
	if c, ok := e.seats.creator(); ok && listed {
		e.net = limit.PrefixOf(c.Addr())
		t.nets[e.net]++
	}
	t.rooms[row.ID] = e
	if listed {
		t.emit(room.Event{Kind: room.Created, Room: e.view()})
	}
}

// Hand lists room id, which was kept ready, with a seat for creator and
// what h asks of it, and returns its row; false if the room is no longer
// there, is on its way out or was handed out already. A CREATE proves
// nothing of its sender: the seat is an unproven one.
func (t *Table) Hand(id uint32, creator netip.AddrPort, h Handout) (room.Room, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.rooms[id]
	if e == nil || e.listed || e.stopping || t.closed {
		return room.Room{}, false
	}
	if h.Meta != (room.Meta{}) {
		e.row.SetMeta(h.Meta)
	}
	e.row.Private, e.password = h.Private, h.hash
	e.row.Password = h.hash != nil
	e.listed = true
	e.net = limit.PrefixOf(creator.Addr())
	t.nets[e.net]++
	e.seats.hold(creator, time.Now().Add(t.cfg.SeatTTL), seatKind{creator: true})
	t.seatsChanged(e, time.Time{})
	t.stats.Created++
	row := e.view()
	t.emit(room.Event{Kind: room.Created, Room: row})
	return row, true
}

// Report is what a room's process says of it.
type Report struct {
	State   packet.RoomState
	Players int // connected players
	// Connected is the address of a player that just connected, if one
	// did: it takes up its seat, ConnectedSeat when the room says which
	// (the player showed its seat token), else the oldest held from its
	// IP.
	Connected     netip.Addr
	ConnectedSeat uint32
	// Away is the seat of a player the room lost who holds a token, at
	// its last address: the table keeps a place for it ReconnectGrace.
	Away     uint32
	AwayFrom netip.AddrPort
	// Meta, when set, is what the room now says describes it.
	Meta *room.Meta
	// Details is what a server that knows nothing of Foyer says of
	// itself; nil for a room that reports its own players.
	Details *Details
}

// Details is what a probed server or a registration says of its room.
type Details struct {
	MaxPlayers      int
	Name, Game, Map string
	Password        bool
}

// Report takes what room id's process reports into the table and returns
// the room's state before and its row after; false if the room is not in
// the table. A reporter that carries no player addresses (Details set)
// has its growing player count fill the oldest seats (fillSeats).
func (t *Table) Report(id uint32, r Report) (from packet.RoomState, row room.Room, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.rooms[id]
	if e == nil {
		return 0, room.Room{}, false
	}
	old, before, seats := e.view(), e.row.Players, e.seats.len()
	switch {
	case r.ConnectedSeat != 0:
		e.seats.dropSerial(r.ConnectedSeat)
	case r.Connected.IsValid():
		e.seats.dropOldestOf(r.Connected)
	}
	if r.Away != 0 && r.AwayFrom.IsValid() && r.State != packet.Finished {
		e.seats.hold(r.AwayFrom, time.Now().Add(t.cfg.ReconnectGrace), seatKind{proven: true, serial: r.Away})
	}
	metaChanged := r.Meta != nil && *r.Meta != e.row.Meta()
	if metaChanged {
		e.row.SetMeta(*r.Meta)
	}
	e.row.Players = r.Players
	e.arrived = e.arrived || r.Players > 0
	if r.Details != nil {
		e.row.MaxPlayers = r.Details.MaxPlayers
		e.row.Name, e.row.Game, e.row.Map, e.row.Password = r.Details.Name, r.Details.Game, r.Details.Map, r.Details.Password
		fillSeats(e, before)
	}
	from = e.row.State
	e.row.State = r.State
	if e.seats.len() != seats || metaChanged {
		t.seatsChanged(e, time.Time{})
	}
	row = e.view()
	if row != old && e.listed {
		t.emit(room.Event{Kind: room.Changed, Room: row})
	}
	return from, row, true
}

// fillSeats turns seats into players for a room whose status carries no
// player addresses (registered and probed rooms): when the players grew
// from before, that many seats, the oldest first, are taken to be the
// newcomers. A seat whose player never came expires after SeatTTL as
// usual, so a wrong guess costs at most one SeatTTL of a seat. t.mu is
// held.
func fillSeats(e *entry, before int) {
	if n := e.row.Players - before; n > 0 {
		e.seats.dropOldest(n)
	}
}

// Stopping marks room id as on its way out: no one joins it any more.
func (t *Table) Stopping(id uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.rooms[id]; e != nil {
		e.stopping = true
	}
}

// Remove takes room id out of the table for cause (its process's exit
// status with it) and returns its last row and whether it was listed;
// false if it was not in the table.
func (t *Table) Remove(id uint32, cause room.Cause, exitCode int, signal string) (row room.Room, listed, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.rooms[id]
	if e == nil || e.key != "" {
		return room.Room{}, false, false
	}
	delete(t.rooms, id)
	if t.codes[e.row.Code] == id {
		delete(t.codes, e.row.Code)
	}
	if e.net.IsValid() {
		t.forget(e.net)
	}
	t.stats.Reaped[cause]++
	row = e.view()
	if e.listed {
		t.emit(room.Event{Kind: room.Reaped, Room: row, Cause: cause, ExitCode: exitCode, Signal: signal})
	}
	return row, e.listed, true
}

// Expire drops the seats whose player did not come by now, and returns the
// rooms nobody came to: handed out, their creator's seat expired, and no
// player yet. A room's process that keeps its seats drops them by their
// expiry too: the hook is not told.
func (t *Table) Expire(now time.Time) (abandoned []uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.rooms {
		if e.seats.expire(now) == 0 || !e.listed {
			continue
		}
		t.emit(room.Event{Kind: room.Changed, Room: e.view()})
		if e.key == "" && !e.arrived && !e.stopping && !e.seats.holdsCreator() {
			abandoned = append(abandoned, e.row.ID)
		}
	}
	return abandoned
}

// Keeping is what the process of a room keeps of it: its seats, whether
// it is listed, its row, and its password's salted hash.
type Keeping struct {
	Seats    []room.Seat // oldest first
	Listed   bool
	Row      room.Room
	Password []byte
}

// Keeping returns what room id's process keeps of it; false if it is not
// in the table.
func (t *Table) Keeping(id uint32) (Keeping, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.rooms[id]
	if e == nil {
		return Keeping{}, false
	}
	return Keeping{Seats: e.seats.list(), Listed: e.listed, Row: e.view(), Password: e.password}, true
}

// Seats returns the seats held in room id, oldest first, and whether it
// is listed, for the room's process to keep; false if it is not in the
// table.
func (t *Table) Seats(id uint32) (seats []room.Seat, listed, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.rooms[id]
	if e == nil {
		return nil, false, false
	}
	return e.seats.list(), e.listed, true
}

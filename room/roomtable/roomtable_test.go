package roomtable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

var ctx = context.Background()

func ep(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// open returns a test table and the contract's view of it.
func open(t *testing.T) roomtabletest.Subject {
	r := roomtabletest.New(t, roomtable.Config{})
	return roomtabletest.Subject{Table: r, Report: func(id uint32, state packet.RoomState) {
		r.Report(id, roomtable.Report{State: state})
	}}
}

// TestContract: the table keeps the contract every edge relies on.
func TestContract(t *testing.T) { roomtabletest.Contract(t, open) }

// watchBuffer is how many events a watcher may fall behind.
const watchBuffer = 256

func TestSlowWatcherMissesEvents(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{SeatsPerAddress: 1000})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slow := rooms.Watch(wctx) // never read until the end
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 1000})
	for i := range watchBuffer + 50 {
		if _, err := rooms.Join(ctx, r.ID, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(20000+i)), room.Unproven); err != nil {
			t.Fatal(err)
		}
	}
	if st := rooms.Stats(); st.WatchDrops != 51 || st.Version != watchBuffer+51 {
		t.Fatalf("drops %d at version %d", st.WatchDrops, st.Version)
	}
	n := 0
	cancel()
	for range slow {
		n++
	}
	if n != watchBuffer {
		t.Fatalf("slow watcher got %d events, want %d", n, watchBuffer)
	}
}

// TestBadIDRangesRefused: a range without 0, in order, holding its
// start.
func TestBadIDRangesRefused(t *testing.T) {
	for _, r := range []roomtable.IDRange{{First: 0, Last: 10, Next: 1}, {First: 10, Last: 5, Next: 10},
		{First: 10, Last: 20, Next: 9}, {First: 10, Last: 20, Next: 21}} {
		cfg := roomtable.DefaultConfig()
		cfg.IDs = r
		if table, err := roomtable.New(cfg, nil, zerolog.Nop()); err == nil {
			table.Close()
			t.Errorf("New accepted the id range %+v", r)
		}
	}
}

// TestIDRangesAtTheirEdgesTaken: a range of one id, and ranges that
// start at their first or last id, are ranges.
func TestIDRangesAtTheirEdgesTaken(t *testing.T) {
	for _, r := range []roomtable.IDRange{{First: 10, Last: 10, Next: 10}, {First: 10, Last: 20, Next: 10}, {First: 10, Last: 20, Next: 20}} {
		cfg := roomtable.DefaultConfig()
		cfg.IDs = r
		table, err := roomtable.New(cfg, nil, zerolog.Nop())
		if err != nil {
			t.Errorf("the id range %+v refused: %v", r, err)
			continue
		}
		table.Close()
	}
}

// TestAdoptedIDsNeverHandedOutAgain: the ids after an adopted room's come
// after it, even once it is gone; an adopted id outside the host's range
// leaves the range be.
func TestAdoptedIDsNeverHandedOutAgain(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	adopted := rooms.NewID() + 1 // the id the table would hand out next
	rooms.Enter(room.Room{ID: adopted, Port: 1, State: packet.Waiting, MaxPlayers: 4}, true, nil, nil)
	rooms.Remove(adopted, room.Exited, 0, "")
	if id := rooms.NewID(); id != adopted+1 {
		t.Errorf("id %d after adopting %d, want %d", id, adopted, adopted+1)
	}
	ranged := roomtabletest.New(t, roomtable.Config{IDs: roomtable.IDRange{First: 100, Last: 103, Next: 100}})
	ranged.Enter(room.Room{ID: 50, Port: 1, State: packet.Waiting, MaxPlayers: 4}, true, nil, nil)
	if id := ranged.NewID(); id != 100 {
		t.Errorf("id %d after adopting 50 outside the range 100-103, want 100", id)
	}
}

// TestIDsStayInTheirRange: ids wrap within the range and skip those of
// rooms still in the table, entered or adopted.
func TestIDsStayInTheirRange(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{IDs: roomtable.IDRange{First: 100, Last: 103, Next: 102}})
	rooms.Enter(room.Room{ID: 103, Port: 1, State: packet.Waiting, MaxPlayers: 4}, true, nil, nil) // adopted
	var got []uint32
	for range 3 {
		got = append(got, rooms.NewID())
	}
	if want := []uint32{100, 101, 102}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ids %v, want %v: after the adopted 103, round the range", got, want)
	}
	reg, err := rooms.Register("k", room.Listing{Addr: ep("192.0.2.1:4000"), MaxPlayers: 4})
	if err != nil || reg.ID != 100 {
		t.Fatalf("registered %+v, %v; want id 100: 103 is taken", reg, err)
	}
}

// TestHandListsAWarmRoomOnce: a room kept ready is not listed until it is
// handed out, with its creator's seat, and is handed out once.
func TestHandListsAWarmRoomOnce(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	id := rooms.NewID()
	rooms.Enter(room.Room{ID: id, Port: 30000, State: packet.Waiting, MaxPlayers: 2}, false, nil, nil)
	if n := len(rooms.List().Rooms); n != 0 {
		t.Fatalf("%d rooms listed before the hand-out", n)
	}
	if _, err := rooms.Join(ctx, id, ep("192.0.2.1:1"), room.Unproven); !errors.Is(err, room.ErrNoRoom) {
		t.Fatalf("JOIN of a warm room: %v, want room.ErrNoRoom", err)
	}
	r, ok := rooms.Hand(id, ep("192.0.2.9:9"), roomtable.Handout{})
	if !ok || r.Seats != 1 || len(rooms.List().Rooms) != 1 {
		t.Fatalf("handed %+v %v", r, ok)
	}
	if _, ok := rooms.Hand(id, ep("192.0.2.8:8"), roomtable.Handout{}); ok {
		t.Fatal("a room was handed out twice")
	}
}

// TestStoppingRoomRefusesJoins: a room on its way out is listed until it
// is removed, and joined by no one.
func TestStoppingRoomRefusesJoins(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	rooms.Stopping(r.ID)
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.1:1"), room.SawListing); !errors.Is(err, room.ErrNotJoinable) {
		t.Fatalf("JOIN of a stopping room: %v", err)
	}
	row, listed, ok := rooms.Remove(r.ID, room.Stopped, 0, "")
	if !ok || !listed || row.ID != r.ID || len(rooms.List().Rooms) != 0 || rooms.Stats().Reaped[room.Stopped] != 1 {
		t.Fatalf("removed %+v listed %v ok %v; stats %+v", row, listed, ok, rooms.Stats())
	}
}

// TestReportTakesUpSeats: a connecting player takes up the oldest seat of
// its IP; a server that reports no addresses has its growing count take
// up the oldest seats; a room's state moves as reported.
func TestReportTakesUpSeats(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 8})
	for _, p := range []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.1:2"} {
		if _, err := rooms.Join(ctx, r.ID, ep(p), room.Unproven); err != nil {
			t.Fatal(err)
		}
	}
	from, row, ok := rooms.Report(r.ID, roomtable.Report{State: packet.Countdown, Players: 1, Connected: netip.MustParseAddr("192.0.2.1")})
	if !ok || from != packet.Waiting || row.State != packet.Countdown || row.Players != 1 || row.Seats != 2 {
		t.Fatalf("after a connect: from %v, %+v", from, row)
	}
	seats, _, _ := rooms.Seats(r.ID)
	if len(seats) != 2 || seats[0].Player != ep("192.0.2.2:1") || seats[1].Player != ep("192.0.2.1:2") {
		t.Fatalf("seats %+v: want 192.0.2.1's oldest taken up", seats)
	}
	_, row, _ = rooms.Report(r.ID, roomtable.Report{State: packet.Countdown, Players: 2, Details: &roomtable.Details{MaxPlayers: 8, Name: "n"}})
	if row.Seats != 1 || row.Name != "n" {
		t.Fatalf("after a probed count grew by one: %+v", row)
	}
}

// TestSeatsExpire: a seat whose player does not come is dropped after
// SeatTTL, and the hook hears of every other change of seats.
func TestSeatsExpire(t *testing.T) {
	var changed []uint32
	cfg := roomtable.Config{SeatTTL: time.Minute, SeatsChanged: func(id uint32, _ time.Time) { changed = append(changed, id) }}
	rooms := roomtabletest.New(t, cfg)
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.1:1"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	rooms.Expire(time.Now().Add(59 * time.Second))
	if row, _ := rooms.Room(r.ID); row.Seats != 1 {
		t.Fatalf("seat gone before its time: %+v", row)
	}
	rooms.Expire(time.Now().Add(61 * time.Second))
	if row, _ := rooms.Room(r.ID); row.Seats != 0 {
		t.Fatalf("seat kept past its time: %+v", row)
	}
	if len(changed) != 1 || changed[0] != r.ID {
		t.Fatalf("hook heard %v, want the JOIN of room %d", changed, r.ID)
	}
}

// TestSeatRefreshCanWait: the hook says a new seat, and a seat proven,
// must reach the room's process at once, and a seat merely refreshed by
// the moment it would have expired; a JOIN repeated within a tenth of the
// seat's time finds the seat as it is, and changes nothing.
func TestSeatRefreshCanWait(t *testing.T) {
	const ttl = 500 * time.Millisecond // refreshed after 50ms
	var by []time.Time
	cfg := roomtable.Config{SeatTTL: ttl, SeatsPerAddress: 2,
		SeatsChanged: func(_ uint32, b time.Time) { by = append(by, b) }}
	rooms := roomtabletest.New(t, cfg)
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	p := ep("192.0.2.1:1")
	expires := func() time.Time {
		seats, _, _ := rooms.Seats(r.ID)
		return seats[0].Expires
	}
	var last time.Time
	for i, step := range []struct {
		proof   room.Proof
		wait    bool // past the tenth of the seat's time
		changed bool
		at      bool // must reach the process at once
	}{
		{room.Unproven, false, true, true},     // taken
		{room.Unproven, false, false, false},   // repeated at once: as it is
		{room.Unproven, true, true, false},     // refreshed
		{room.SawListing, false, true, true},   // proven
		{room.SawListing, false, false, false}, // repeated at once
		{room.Unproven, true, true, false},     // refreshed, proven still
	} {
		if step.wait {
			time.Sleep(ttl / 5)
		}
		n := len(by)
		if _, err := rooms.Join(ctx, r.ID, p, step.proof); err != nil {
			t.Fatal(err)
		}
		switch {
		case step.changed != (len(by) == n+1) || step.changed != expires().After(last):
			t.Fatalf("JOIN %d: hook heard %v, expiry %v after %v; want a change %v", i, by[n:], expires(), last, step.changed)
		case step.changed && by[n].IsZero() != step.at:
			t.Fatalf("JOIN %d: hook heard %v; want at once %v", i, by[n], step.at)
		case step.changed && !step.at && !by[n].Equal(last):
			t.Fatalf("JOIN %d: hook heard %v; want the former expiry %v", i, by[n], last)
		}
		last = expires()
	}
}

// TestJoinAtSaysWhatTheTableLists: what JoinAt returns of a room is its
// port and its count of places taken as the JOIN left them, players and
// seats both, whether the JOIN took a seat or refreshed one; a refused
// JOIN returns nothing.
func TestJoinAtSaysWhatTheTableLists(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	r := rooms.Add(room.Room{State: packet.Waiting, Players: 1, MaxPlayers: 3})
	ctx := context.Background()
	for i, step := range []struct {
		player   string
		occupied int
		err      error
	}{
		{"192.0.2.1:1", 2, nil},
		{"192.0.2.1:1", 2, nil}, // refreshed
		{"192.0.2.2:1", 3, nil},
		{"192.0.2.3:1", 0, room.ErrFull},
	} {
		h, err := rooms.JoinAt(ctx, r.ID, ep(step.player), room.Unproven, time.Now())
		if err != step.err {
			t.Fatalf("JOIN %d: %v, want %v", i, err, step.err)
		}
		want := room.Held{}
		if err == nil {
			want = room.Held{Port: r.Port, Occupied: step.occupied}
		}
		if h != want {
			t.Fatalf("JOIN %d: %+v, want %+v", i, h, want)
		}
		if listed := rooms.List().Rooms; len(listed) != 1 || err == nil && listed[0].Occupied() != h.Occupied {
			t.Fatalf("JOIN %d: %+v, but the table lists %+v", i, h, listed)
		}
	}
}

// TestJoinAtHoldsFromItsTime: a seat JoinAt holds lasts SeatTTL from the
// time it is given, not from when the table ran it, and a refresh counts
// from its own time too.
func TestJoinAtHoldsFromItsTime(t *testing.T) {
	const ttl = 10 * time.Second
	rooms := roomtabletest.New(t, roomtable.Config{SeatTTL: ttl})
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	p := ep("192.0.2.1:1")
	at := time.Now().Add(time.Hour)
	for i, step := range []struct {
		after   time.Duration // since at
		expires time.Duration // since at
	}{
		{0, ttl},
		{ttl / 20, ttl},         // within a tenth of its time: as it is
		{ttl / 2, ttl/2 + ttl},  // refreshed from its own time
		{-ttl / 2, ttl/2 + ttl}, // an earlier time refreshes nothing
		{2 * ttl, 2*ttl + ttl},  // and a later one refreshes it again
	} {
		if _, err := rooms.JoinAt(ctx, r.ID, p, room.Unproven, at.Add(step.after)); err != nil {
			t.Fatalf("JoinAt %d: %v", i, err)
		}
		seats, _, _ := rooms.Seats(r.ID)
		if len(seats) != 1 || !seats[0].Expires.Equal(at.Add(step.expires)) {
			t.Fatalf("JoinAt %d at +%v: seats %+v, want one expiring at +%v", i, step.after, seats, step.expires)
		}
	}
}

// TestClosedTableTakesNothing: after Close, registered rooms are gone and
// nothing new is taken; rooms with a process stay until removed.
func TestClosedTableTakesNothing(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	own := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	if _, err := rooms.Register("k", room.Listing{Addr: ep("192.0.2.1:4000"), MaxPlayers: 4}); err != nil {
		t.Fatal(err)
	}
	rooms.Close()
	if l := rooms.List().Rooms; len(l) != 1 || l[0].ID != own.ID {
		t.Fatalf("listed after Close: %+v", l)
	}
	if _, err := rooms.Create(ctx, ep("192.0.2.1:1")); !errors.Is(err, room.ErrClosed) {
		t.Errorf("Create after Close: %v", err)
	}
	if _, err := rooms.Join(ctx, own.ID, ep("192.0.2.1:1"), room.Unproven); !errors.Is(err, room.ErrClosed) {
		t.Errorf("Join after Close: %v", err)
	}
	if _, err := rooms.Register("j", room.Listing{Addr: ep("192.0.2.1:4001"), MaxPlayers: 4}); !errors.Is(err, room.ErrClosed) {
		t.Errorf("Register after Close: %v", err)
	}
}

// TestHoldStopsCreateAndJoin: while held (a handover), Create and Join
// fail, List answers, and registrations go on.
func TestHoldStopsCreateAndJoin(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	rooms.Hold(true)
	if _, err := rooms.Create(ctx, ep("192.0.2.1:1")); !errors.Is(err, room.ErrClosed) {
		t.Errorf("Create while held: %v", err)
	}
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.1:1"), room.Unproven); !errors.Is(err, room.ErrClosed) {
		t.Errorf("Join while held: %v", err)
	}
	if _, err := rooms.Register("k", room.Listing{Addr: ep("192.0.2.1:4000"), MaxPlayers: 4}); err != nil {
		t.Errorf("Register while held: %v", err)
	}
	rooms.Hold(false)
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.1:1"), room.Unproven); err != nil {
		t.Errorf("Join after the hold: %v", err)
	}
}

// TestSeatsPerAddress: one IP holds SeatsPerAddress seats of a room at
// once, from as many ports as it likes, proven or not; a seat its player
// takes up frees the place; another IP is not held back.
func TestSeatsPerAddress(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{SeatsPerAddress: 2})
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 64})
	for port := range 64 {
		proof := []room.Proof{room.Unproven, room.SawListing}[port%2]
		_, err := rooms.Join(ctx, r.ID, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), uint16(1000+port)), proof)
		if want := port >= 2; errors.Is(err, room.ErrQuota) != want {
			t.Fatalf("JOIN from port %d: %v; over quota %v", port, err, want)
		}
	}
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.1:1000"), room.Unproven); err != nil {
		t.Fatalf("a seated address's JOIN again: %v", err)
	}
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.2:1000"), room.Unproven); err != nil {
		t.Fatalf("another IP: %v", err)
	}
	rooms.Report(r.ID, roomtable.Report{State: packet.Waiting, Players: 1, Connected: netip.MustParseAddr("192.0.2.1")})
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.1:2000"), room.Unproven); err != nil {
		t.Fatalf("after one of the IP's players came: %v", err)
	}
	if n := rooms.Stats().SeatsOverQuota; n != 62 {
		t.Fatalf("%d JOINs counted over quota, want 62", n)
	}
}

// TestCreatorSeatNeverDisplaced: in a room full of unproven seats, a
// proven JOIN takes the place of a JOIN's seat, never the creator's.
func TestCreatorSeatNeverDisplaced(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	r := fullOfUnproven(t, rooms)
	for i := range r.MaxPlayers {
		_, err := rooms.Join(ctx, r.ID, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 1), room.SawListing)
		if wantFull := i == r.MaxPlayers-1; errors.Is(err, room.ErrFull) != wantFull {
			t.Fatalf("proven JOIN %d: %v; want full %v (only the JOINs' seats give way)", i, err, wantFull)
		}
	}
	seats, _, _ := rooms.Seats(r.ID)
	if !slices.ContainsFunc(seats, func(s room.Seat) bool { return s.Creator && s.Player == ep("192.0.2.9:9") }) {
		t.Fatalf("the creator's seat is gone: %+v", seats)
	}
}

// TestRoomsPerNetwork: one network's creators hold RoomsPerNetwork rooms at
// once, from any of its addresses; a room that ends gives its place back;
// other networks are not held back.
func TestRoomsPerNetwork(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{RoomsPerNetwork: 3})
	var ids []uint32
	for i := range 5 {
		r, err := rooms.Create(ctx, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i)}), 1))
		if wantQuota := i >= 3; errors.Is(err, room.ErrQuota) != wantQuota {
			t.Fatalf("CREATE %d from the /24: %v; over quota %v", i, err, wantQuota)
		}
		if err == nil {
			ids = append(ids, r.ID)
		}
	}
	if _, err := rooms.Create(ctx, ep("[2001:db8:1::1]:1")); err != nil {
		t.Fatalf("another network: %v", err)
	}
	rooms.Reap(ids[0])
	if _, err := rooms.Create(ctx, ep("198.51.100.200:1")); err != nil {
		t.Fatalf("after one of the network's rooms ended: %v", err)
	}
	for i := range 2 { // a /56 is one network; the next /56 another
		if _, err := rooms.Create(ctx, ep(fmt.Sprintf("[2001:db8:1:%x::1]:1", i+1))); err != nil {
			t.Fatalf("IPv6 CREATE %d: %v", i, err)
		}
	}
	if _, err := rooms.Create(ctx, ep("[2001:db8:1:ff::1]:1")); !errors.Is(err, room.ErrQuota) {
		t.Fatalf("fourth CREATE from one /56: %v", err)
	}
	if _, err := rooms.Create(ctx, ep("[2001:db8:1:100::1]:1")); err != nil {
		t.Fatalf("the next /56: %v", err)
	}
}

// TestRoomNobodyCameTo: a room whose creator's seat expires before any
// player came is reported abandoned; one its creator came to, or another
// player, is not.
func TestRoomNobodyCameTo(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{SeatTTL: time.Minute})
	empty, _ := rooms.Create(ctx, ep("192.0.2.1:1"))
	came, _ := rooms.Create(ctx, ep("192.0.2.2:1"))
	joined, _ := rooms.Create(ctx, ep("192.0.2.3:1"))
	rooms.Report(came.ID, roomtable.Report{State: packet.Waiting, Players: 1, Connected: netip.MustParseAddr("192.0.2.2")})
	rooms.Report(empty.ID, roomtable.Report{State: packet.Waiting}) // a status without players is no arrival
	if _, err := rooms.Join(ctx, joined.ID, ep("192.0.2.4:1"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	rooms.Report(joined.ID, roomtable.Report{State: packet.Waiting, Players: 1, Connected: netip.MustParseAddr("192.0.2.4")})
	if got := rooms.Expire(time.Now().Add(59 * time.Second)); len(got) != 0 {
		t.Fatalf("abandoned before the seats expired: %v", got)
	}
	if got := rooms.Expire(time.Now().Add(61 * time.Second)); !slices.Equal(got, []uint32{empty.ID}) {
		t.Fatalf("abandoned %v, want [%d]", got, empty.ID)
	}
}

// The table's counters (what /metrics shows of it) count what happened:
// rooms handed out, seats held and given way, rooms listed and
// registered, and rooms removed by cause.
func TestStatsCountWhatHappened(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	r := fullOfUnproven(t, rooms)
	if _, err := rooms.Join(ctx, r.ID, ep("203.0.113.1:1"), room.SawListing); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"k", "j"} {
		if _, err := rooms.Register(key, room.Listing{Addr: ep("192.0.2.1:4000"), MaxPlayers: 4}); err != nil {
			t.Fatal(err)
		}
	}
	rooms.Unregister("j")
	s := rooms.Stats()
	want := roomtable.Stats{Version: s.Version, Rooms: 2, Registered: 1, Created: 1,
		SeatsHeld: uint64(r.MaxPlayers), SeatsDisplaced: 1, Reaped: map[room.Cause]uint64{room.Unregistered: 1}}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
}

// A listing's player counts are taken up to the wire's bound, 65535, and
// from 0: a server that does not say its capacity lists 0.
func TestRegisterTakesCountsToTheirBounds(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	for _, l := range []room.Listing{
		{Addr: ep("192.0.2.1:4000"), Players: 65535, MaxPlayers: 65535},
		{Addr: ep("192.0.2.1:4001")},
	} {
		if _, err := rooms.Register(l.Addr.String(), l); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	for _, l := range []room.Listing{
		{Addr: ep("192.0.2.1:4002"), Players: 65536},
		{Addr: ep("192.0.2.1:4003"), MaxPlayers: 65536},
		{Addr: ep("192.0.2.1:4004"), Players: -1},
		{Addr: ep("192.0.2.1:4005"), MaxPlayers: -1},
	} {
		if _, err := rooms.Register(l.Addr.String(), l); !errors.Is(err, room.ErrListing) {
			t.Errorf("%+v: %v, want ErrListing", l, err)
		}
	}
}

// A room's report changes the table only when it says something new: a
// changed row is a new version, a seat its player took up is told to the
// SeatsChanged hook, and the same report again is neither.
func TestReportTellsWhatChanged(t *testing.T) {
	var told atomic.Int32
	rooms := roomtabletest.New(t, roomtable.Config{SeatsChanged: func(uint32, time.Time) { told.Add(1) }})
	r := rooms.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	if _, err := rooms.Join(ctx, r.ID, ep("192.0.2.4:1"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	v, n := rooms.Stats().Version, told.Load()
	came := roomtable.Report{State: packet.Waiting, Players: 1, Connected: netip.MustParseAddr("192.0.2.4")}
	rooms.Report(r.ID, came)
	if got := rooms.Stats().Version; got != v+1 || told.Load() != n+1 {
		t.Fatalf("a player came: version %d, want %d; SeatsChanged told %d times, want 1", got, v+1, told.Load()-n)
	}
	rooms.Report(r.ID, roomtable.Report{State: packet.Waiting, Players: 1})
	if got := rooms.Stats().Version; got != v+1 || told.Load() != n+1 {
		t.Fatalf("the same report again: version %d, want %d; SeatsChanged told %d times, want 1", got, v+1, told.Load()-n)
	}
}

// fullOfUnproven creates a room at 192.0.2.9:9 and fills its other seats
// with unproven JOINs from 198.51.100.1, .2, ...
func fullOfUnproven(t *testing.T, rooms room.Table) room.Room {
	t.Helper()
	r, err := rooms.Create(ctx, ep("192.0.2.9:9"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < r.MaxPlayers; i++ {
		if _, err := rooms.Join(ctx, r.ID, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 1), room.Unproven); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// stalledLog is a log sink that blocks every write until released, as a
// pipe whose reader stopped does, and then keeps what it was given.
type stalledLog struct {
	release chan struct{}
	logtest.Buffer
}

func (w *stalledLog) Write(p []byte) (int, error) {
	<-w.release
	return w.Buffer.Write(p)
}

// counts are how many "room joined" lines w has been given, and how many
// such lines its "room joined lines dropped" lines say were dropped.
func (w *stalledLog) counts(t *testing.T) (joined, dropped int) {
	for _, l := range strings.Split(strings.TrimSpace(w.String()), "\n") {
		var line struct {
			Message string
			Lines   int
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch line.Message {
		case "room joined":
			joined++
		case "room joined lines dropped":
			dropped += line.Lines
		}
	}
	return joined, dropped
}

// At debug level a seat taken writes a "room joined" line, but never
// under the table's lock: with the log writer stalled, JOINs still take
// their seats and the table still answers. Once the writer moves again
// the lines come, as many as the queue held, and a line says how many
// more were dropped: by the time Close returns, every seat is accounted
// for.
func TestStalledLogWriterNeverHoldsTheTable(t *testing.T) {
	const players = 1500 // more than the table queues
	w := &stalledLog{release: make(chan struct{})}
	table, err := roomtable.New(roomtable.DefaultConfig(), nil, zerolog.New(w).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(table.Close)
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(w.release) }) }) // before Close
	table.Enter(room.Room{ID: 50, Port: 1, State: packet.Waiting, MaxPlayers: players}, true, nil, nil)
	done := make(chan error)
	go func() {
		for i := range players {
			player := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 9000)
			if _, err := table.JoinAt(ctx, 50, player, room.Unproven, time.Now()); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("JOINs waited for the stalled log writer")
	}
	if seats, _, ok := table.Seats(50); !ok || len(seats) != players {
		t.Fatalf("%d seats held (%v), want %d", len(seats), ok, players)
	}
	release.Do(func() { close(w.release) })
	table.Close() // writes what is still queued
	if joined, dropped := w.counts(t); joined+dropped != players || dropped == 0 {
		t.Fatalf("%d \"room joined\" lines written and %d said dropped, want %d in all, some dropped", joined, dropped, players)
	}
}

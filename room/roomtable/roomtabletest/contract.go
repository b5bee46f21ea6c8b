package roomtabletest

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// Subject is a room table under the contract every room.Table keeps
// (Contract): the supervisor's own, a test's, a cluster's.
type Subject struct {
	Table room.Table
	// Report makes room id report state, as its process would, wherever
	// it runs.
	Report func(id uint32, state packet.RoomState)
}

// Contract checks that what open returns keeps the rules every edge
// relies on: a created room is listed with its creator's seat; a JOIN
// holds one seat per player, refreshes it when repeated, fails with
// room.ErrFull once every place is taken or held, and room.ErrNotJoinable
// once the match has begun; a proven JOIN takes the place of an unproven
// seat in a full room, and an unproven one never does; racing JOINs
// never seat more players than there are places; every change is watched,
// in order. Each check runs on a table of its own from open, whose rooms
// have at least two places.
func Contract(t *testing.T, open func(t *testing.T) Subject) {
	for _, c := range []struct {
		name  string
		check func(*testing.T, Subject)
	}{
		{"CreateListsWithTheCreatorsSeat", createListsWithTheCreatorsSeat},
		{"JoinHoldsOneSeatPerPlayer", joinHoldsOneSeatPerPlayer},
		{"JoinRefusedOnceBegun", joinRefusedOnceBegun},
		{"ProvenJoinDisplacesUnprovenSeat", provenJoinDisplacesUnprovenSeat},
		{"RacingJoinsFillExactly", racingJoinsFillExactly},
		{"ChangesAreWatchedInOrder", changesAreWatchedInOrder},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, open(t)) })
	}
}

var ctx = context.Background()

// player is a client address of the contract's: one IP per i.
func player(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(100 + i/250), byte(1 + i%250)}), 5000)
}

func create(t *testing.T, s Subject) room.Room {
	t.Helper()
	r, err := s.Table.Create(ctx, player(0))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if r.MaxPlayers < 2 {
		t.Fatalf("created a room of %d places; the contract needs two at least", r.MaxPlayers)
	}
	return r
}

// listed returns room id as List shows it, waiting for a table that
// shows changes a moment after they happen.
func listed(t *testing.T, s Subject, id uint32, cond func(room.Room) bool) room.Room {
	t.Helper()
	var last room.Room
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, r := range s.Table.List().Rooms {
			if r.ID == id {
				if last = r; cond(r) {
					return r
				}
			}
		}
	}
	t.Fatalf("room %d never listed as expected; last seen %+v", id, last)
	return last
}

func createListsWithTheCreatorsSeat(t *testing.T, s Subject) {
	r := create(t, s)
	if r.ID == 0 || r.State != packet.Waiting || r.Seats != 1 || r.Occupied() != 1 {
		t.Fatalf("created %+v: want a Waiting room with one seat, its creator's", r)
	}
	listed(t, s, r.ID, func(l room.Room) bool { return l.Port == r.Port && l.Occupied() == 1 })
}

func joinHoldsOneSeatPerPlayer(t *testing.T, s Subject) {
	r := create(t, s)
	for i := 1; i < r.MaxPlayers; i++ {
		got, err := s.Table.Join(ctx, r.ID, player(i), room.Unproven)
		if err != nil || got.ID != r.ID || got.Port != r.Port || got.Occupied() != i+1 {
			t.Fatalf("join %d: %+v, %v; want room %d with %d taken", i, got, err, r.ID, i+1)
		}
	}
	again, err := s.Table.Join(ctx, r.ID, player(1), room.Unproven)
	if err != nil || again.Occupied() != r.MaxPlayers {
		t.Fatalf("a seated player's JOIN again: %+v, %v; want its seat refreshed in the full room", again, err)
	}
	if _, err := s.Table.Join(ctx, r.ID, player(r.MaxPlayers), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("JOIN of a full room: %v, want room.ErrFull", err)
	}
	for _, id := range []uint32{0, r.ID + 1_000_000} {
		if _, err := s.Table.Join(ctx, id, player(1), room.Unproven); !errors.Is(err, room.ErrNoRoom) {
			t.Fatalf("JOIN of room %d: %v, want room.ErrNoRoom", id, err)
		}
	}
	listed(t, s, r.ID, func(l room.Room) bool { return l.Occupied() == r.MaxPlayers })
}

func joinRefusedOnceBegun(t *testing.T, s Subject) {
	r := create(t, s)
	s.Report(r.ID, packet.Countdown)
	listed(t, s, r.ID, func(l room.Room) bool { return l.State == packet.Countdown })
	if _, err := s.Table.Join(ctx, r.ID, player(1), room.Unproven); err != nil {
		t.Fatalf("JOIN in the countdown: %v", err)
	}
	s.Report(r.ID, packet.Playing)
	listed(t, s, r.ID, func(l room.Room) bool { return l.State == packet.Playing })
	if _, err := s.Table.Join(ctx, r.ID, player(2), room.SawListing); !errors.Is(err, room.ErrNotJoinable) {
		t.Fatalf("JOIN of a room in play: %v, want room.ErrNotJoinable", err)
	}
}

func provenJoinDisplacesUnprovenSeat(t *testing.T, s Subject) {
	r := create(t, s)
	for i := 1; i < r.MaxPlayers; i++ {
		if _, err := s.Table.Join(ctx, r.ID, player(i), room.Unproven); err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
	}
	if _, err := s.Table.Join(ctx, r.ID, player(100), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("unproven JOIN of a full room: %v, want room.ErrFull", err)
	}
	got, err := s.Table.Join(ctx, r.ID, player(101), room.SawListing)
	if err != nil || got.Occupied() != r.MaxPlayers {
		t.Fatalf("proven JOIN of a room full of unproven seats: %+v, %v; want a seat in place of one", got, err)
	}
}

func racingJoinsFillExactly(t *testing.T, s Subject) {
	r := create(t, s)
	var seated atomic.Int64
	var wg sync.WaitGroup
	for i := 1; i <= 100; i++ {
		wg.Go(func() {
			if _, err := s.Table.Join(ctx, r.ID, player(i), room.Unproven); err == nil {
				seated.Add(1)
			} else if !errors.Is(err, room.ErrFull) {
				t.Errorf("racing JOIN: %v", err)
			}
		})
	}
	wg.Wait()
	if n := seated.Load(); n != int64(r.MaxPlayers-1) {
		t.Fatalf("100 racing JOINs seated %d, want %d (the creator holds a place)", n, r.MaxPlayers-1)
	}
	listed(t, s, r.ID, func(l room.Room) bool { return l.Occupied() == r.MaxPlayers })
}

func changesAreWatchedInOrder(t *testing.T, s Subject) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := s.Table.Watch(wctx)
	r := create(t, s)
	if _, err := s.Table.Join(ctx, r.ID, player(1), room.Unproven); err != nil {
		t.Fatal(err)
	}
	var last uint64
	var created, joined bool
	timeout := time.After(10 * time.Second)
	for !created || !joined {
		select {
		case ev := <-events:
			if ev.Version <= last {
				t.Fatalf("event version %d after %d", ev.Version, last)
			}
			last = ev.Version
			created = created || ev.Kind == room.Created && ev.Room.ID == r.ID
			joined = joined || created && ev.Kind == room.Changed && ev.Room.ID == r.ID && ev.Room.Occupied() == 2
		case <-timeout:
			t.Fatalf("watched created %v, joined %v", created, joined)
		}
	}
	if snap := s.Table.List(); snap.Version < last {
		t.Fatalf("List at version %d after an event of version %d", snap.Version, last)
	}
}

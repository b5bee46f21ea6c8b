package room_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

func TestJoinRule(t *testing.T) {
	for _, tc := range []struct {
		r    room.Room
		want error
	}{
		{room.Room{State: packet.Waiting, MaxPlayers: 4}, nil},
		{room.Room{State: packet.Countdown, Players: 2, Seats: 1, MaxPlayers: 4}, nil},
		{room.Room{State: packet.Waiting, Players: 3, Seats: 1, MaxPlayers: 4}, room.ErrFull},
		{room.Room{State: packet.Waiting, Seats: 4, MaxPlayers: 4}, room.ErrFull},
		{room.Room{State: packet.Waiting, MaxPlayers: 0}, room.ErrFull},
		{room.Room{State: packet.Playing, MaxPlayers: 4}, room.ErrNotJoinable},
		{room.Room{State: packet.Finished, MaxPlayers: 4}, room.ErrNotJoinable},
		{room.Room{State: packet.Playing, Players: 4, MaxPlayers: 4}, room.ErrNotJoinable},
	} {
		err := tc.r.JoinError()
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%+v: JoinError = %v, want %v", tc.r, err, tc.want)
		}
		if got := tc.r.Joinable(); got != (tc.want == nil) {
			t.Errorf("%+v: Joinable = %v, want %v", tc.r, got, tc.want == nil)
		}
	}
}

func TestOccupiedCountsSeats(t *testing.T) {
	r := room.Room{Players: 2, Seats: 1, MaxPlayers: 4}
	if r.Occupied() != 3 {
		t.Errorf("Occupied = %d, want 3", r.Occupied())
	}
}

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("wrapped: %w", room.ErrFull), "full"},
		{room.ErrNoRoom, "no_room"},
		{room.ErrNotJoinable, "not_joinable"},
		{room.ErrCapacity, "capacity"},
		{room.ErrQuota, "quota"},
		{room.ErrNoPorts, "no_ports"},
		{room.ErrSpawn, "spawn"},
		{room.ErrClosed, "closed"},
		{room.ErrListing, "listing"},
		{room.ErrUnreachable, "unreachable"},
		{room.ErrDraining, "draining"},
		{context.Canceled, "canceled"},
		{context.DeadlineExceeded, "canceled"},
		{errors.New("something else"), "other"},
	} {
		if got := room.Reason(tc.err); got != tc.want {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestSourceOwn(t *testing.T) {
	if !room.Instance.Own() || !room.Exec.Own() || room.GG2.Own() {
		t.Error("Instance and Exec rooms are this host's own, GG2 rooms are not")
	}
}

// TestReasonError checks that every reason name comes back as the very
// error it names, so a refusal carried by name between hosts compares
// equal to the sentinel.
func TestReasonError(t *testing.T) {
	for _, err := range []error{room.ErrNoRoom, room.ErrFull, room.ErrNotJoinable, room.ErrCapacity, room.ErrQuota,
		room.ErrNoPorts, room.ErrSpawn, room.ErrClosed, room.ErrListing, room.ErrUnreachable, room.ErrDraining, context.Canceled} {
		if got := room.ReasonError(room.Reason(err)); got != err {
			t.Errorf("ReasonError(%q) = %v, want %v", room.Reason(err), got, err)
		}
	}
	for _, name := range []string{"other", "", "nonsense"} {
		if got := room.ReasonError(name); got != nil {
			t.Errorf("ReasonError(%q) = %v, want nil", name, got)
		}
	}
}

// TestCodes pins every refusal's code, the number a wire carries, and
// its name: neither may ever change. A drained host's refusal is a
// draining one, like a stopping host's.
func TestCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code room.Code
		name string
	}{
		{nil, 0, "none"},
		{room.ErrNoRoom, 1, "not_found"},
		{fmt.Errorf("room 7: %w", room.ErrFull), 2, "full"},
		{room.ErrNotJoinable, 3, "started"},
		{room.ErrWrongPassword, 4, "wrong_password"},
		{room.ErrQuota, 5, "quota"},
		{room.ErrRateLimited, 6, "rate_limited"},
		{room.ErrCapacity, 7, "no_capacity"},
		{room.ErrNoPorts, 7, "no_capacity"},
		{room.ErrSpawn, 7, "no_capacity"},
		{room.ErrUnreachable, 7, "no_capacity"},
		{room.ErrClosed, 8, "draining"},
		{room.ErrDraining, 8, "draining"},
		{context.Canceled, 8, "draining"},
		{room.ErrDenied, 9, "denied"},
		{room.ErrListing, 9, "denied"},
		{errors.New("something else"), 7, "no_capacity"},
	} {
		if code := room.CodeOf(tc.err); code != tc.code || code.String() != tc.name {
			t.Errorf("CodeOf(%v) = %d %q, want %d %q", tc.err, code, code, tc.code, tc.name)
		}
	}
	if got := room.Code(200).String(); got != "code 200" || room.Code(200).Known() {
		t.Errorf("an unknown code reads %q", got)
	}
}

// TestWatchers: every watcher gets the events it has room for, in the
// order they were sent; what a full one misses is counted; a watcher's
// channel is closed once its context is done, and sends go on to the
// others.
func TestWatchers(t *testing.T) {
	var w room.Watchers
	ctx, cancel := context.WithCancel(context.Background())
	slow := w.Watch(ctx, 1)
	fast := w.Watch(context.Background(), 3)
	for v := uint64(1); v <= 3; v++ {
		w.Send(room.Event{Kind: room.Changed, Version: v})
	}
	if w.Drops() != 2 {
		t.Fatalf("drops %d, want 2: the slow watcher had room for one event of three", w.Drops())
	}
	if ev := <-slow; ev.Version != 1 {
		t.Fatalf("slow watcher got version %d, want 1", ev.Version)
	}
	for v := uint64(1); v <= 3; v++ {
		if ev := <-fast; ev.Version != v {
			t.Fatalf("fast watcher got version %d, want %d", ev.Version, v)
		}
	}
	cancel()
	if _, open := <-slow; open {
		t.Fatal("the slow watcher's channel is open after its context is done")
	}
	w.Send(room.Event{Kind: room.Reaped, Version: 4})
	if ev := <-fast; ev.Version != 4 || w.Drops() != 2 {
		t.Fatalf("after a watcher left: got version %d, drops %d; want 4 and 2", ev.Version, w.Drops())
	}
}

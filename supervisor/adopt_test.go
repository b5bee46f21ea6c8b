package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// newKept starts a supervisor of test instances that outlive it, in a
// state directory of its own.
func newKept(t *testing.T, tune func(*Config)) (*Supervisor, *logSink) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return newTest(t, "game", 8, func(c *Config) {
		c.StateDir, c.ReattachGrace = dir, 20*time.Second
		if tune != nil {
			tune(c)
		}
	})
}

// adoptFrom starts a second supervisor on the state directory of s, which
// has released its rooms, and stops it at the end of the test.
func adoptFrom(t *testing.T, s *Supervisor) (*Supervisor, *logSink) {
	t.Helper()
	sink := &logSink{t: t}
	b, err := New(s.cfg, zerolog.New(sink).With().Timestamp().Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if t.Failed() {
			sink.dump()
		}
	})
	return b, sink
}

// rowsOf is a table's rows as a second supervisor must show them.
func rowsOf(snap room.Snapshot, adopted bool) []room.Room {
	out := slices.Clone(snap.Rooms)
	for i := range out {
		out[i].Adopted = adopted
		out[i].StartedAt = out[i].StartedAt.Truncate(time.Millisecond)
	}
	return out
}

// A supervisor that releases its rooms leaves them to the next one on the
// same state directory, which lists them exactly as they were (ids,
// ports, processes, states, players, seats with their expiry and proof,
// start times), keeps the warm one warm, takes their ports out of its pool
// and hands out ids above theirs.
func TestAdoptedRoomsAreTheSame(t *testing.T) {
	a, _ := newKept(t, func(c *Config) { c.Warm = 1 })
	var ids []uint32
	for i := range 3 {
		r, err := a.Table().Create(context.Background(), ep("127.0.0.1:5000"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		_ = i
	}
	rows := a.Table().List().Rooms
	port := func(id uint32) uint16 { r, _ := listed(a, id); return r.Port }
	if _, err := a.Table().Join(context.Background(), ids[0], ep("127.0.0.2:6000"), room.SawListing); err != nil {
		t.Fatal(err)
	}
	send(t, loopback, port(ids[1]), "hello") // the creator's seat becomes the player
	send(t, loopback, port(ids[2]), "state 1")
	eventually(t, "the reports", func() bool {
		r1, _ := listed(a, ids[1])
		r2, _ := listed(a, ids[2])
		return r1.Players == 1 && r1.Seats == 0 && r2.State == packet.Countdown
	})
	eventually(t, "a warm room", func() bool { return a.Stats().Warm == 1 })
	_ = rows
	seats := func(s *Supervisor, id uint32) []room.Seat {
		seats, _, _ := s.Table().Seats(id)
		return seats
	}
	seats0 := seats(a, ids[0])

	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Table().Create(context.Background(), ep("127.0.0.1:5000")); err != room.ErrClosed {
		t.Fatalf("create after Release: %v", err)
	}
	want := rowsOf(a.Table().List(), true)
	b, sink := adoptFrom(t, a)
	if got := rowsOf(b.Table().List(), true); !slices.Equal(got, want) {
		t.Fatalf("adopted\n%+v\nwant\n%+v", got, want)
	}
	got := seats(b, ids[0])
	if len(got) != 2 || len(seats0) != 2 {
		t.Fatalf("seats %+v, had %+v", got, seats0)
	}
	for i := range got {
		if got[i].Player != seats0[i].Player || got[i].Proven != seats0[i].Proven ||
			!got[i].Expires.Equal(seats0[i].Expires.Truncate(time.Millisecond)) {
			t.Errorf("seat %d: %+v, had %+v", i, got[i], seats0[i])
		}
	}
	st := b.Stats()
	if st.Warm != 1 || st.Rooms != 3 || st.PortsInUse != 4 {
		t.Fatalf("adopted stats: %+v", st)
	}
	sink.await(t, "rooms adopted", `"adopted":4`)
	// The adopted rooms report to their new supervisor.
	send(t, loopback, port(ids[2]), "state 2")
	eventually(t, "the adopted room's report", func() bool {
		r, _ := listed(b, ids[2])
		return r.State == packet.Playing
	})
	// New rooms get new ids and free ports: the warm one first.
	r, err := b.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if err != nil || slices.Contains(ids, r.ID) || !r.Adopted {
		t.Fatalf("create from the adopted warm pool: %+v, %v", r, err)
	}
	r, err = b.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if err != nil || r.ID <= ids[2] || r.Adopted || slices.ContainsFunc(want, func(w room.Room) bool { return w.Port == r.Port }) {
		t.Fatalf("a new room %+v, %v; adopted %+v", r, err, want)
	}
}

// A handover that fails gives the rooms back: Resume watches them again
// and takes rooms again.
func TestResumeAfterRelease(t *testing.T) {
	a, _ := newKept(t, nil)
	r, err := a.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Another supervisor adopts the room (its status stream with it) and
	// fails to serve: it lets go without stopping anything.
	b, err := New(a.cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Table().List().Rooms) != 1 {
		t.Fatal("not adopted")
	}
	if err := b.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	if err := a.Resume(); err != nil {
		t.Fatal(err)
	}
	send(t, loopback, r.Port, "state 2")
	eventually(t, "the report to the first supervisor again", func() bool {
		got, _ := listed(a, r.ID)
		return got.State == packet.Playing
	})
	if _, err := a.Table().Create(context.Background(), ep("127.0.0.1:5000")); err != nil {
		t.Fatalf("create after Resume: %v", err)
	}
}

// A state directory with garbage is reported and tidied, never fatal.
func TestAdoptDamagedStateDir(t *testing.T) {
	dir, err := os.MkdirTemp("", "sv")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rooms := filepath.Join(dir, "rooms")
	for _, d := range []string{"7", "0", "x"} {
		os.MkdirAll(filepath.Join(rooms, d), 0o700)
	}
	os.WriteFile(filepath.Join(rooms, "8"), nil, 0o600)
	os.WriteFile(filepath.Join(rooms, "7", "plugin1"), []byte("not a socket"), 0o600)
	s, sink := newTest(t, "game", 2, func(c *Config) { c.StateDir = dir })
	if len(s.Table().List().Rooms) != 0 {
		t.Fatal("adopted garbage")
	}
	sink.await(t, "room not adopted, its directory removed", `"id":7`)
	if _, err := os.Stat(filepath.Join(rooms, "7")); !os.IsNotExist(err) {
		t.Fatalf("room directory 7: %v", err)
	}
	for _, name := range []string{"0", "x", "8"} {
		sink.await(t, "state_dir: not a room directory, ignored", filepath.Join(rooms, name)+`"`)
	}
	// And a second supervisor on the same directory is refused.
	if _, err := New(s.cfg, zerolog.Nop()); err == nil {
		t.Fatal("two supervisors on one state directory")
	}
}

package supervisor

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/room"
)

// TestEmptyRoomEndsIdle: a room of a game that reports its players ends
// once nobody has been in it for empty_timeout, and is reaped as idle; a
// room with a player in it plays on.
func TestEmptyRoomEndsIdle(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) { c.EmptyTimeout = time.Second })
	events, left := watchAndCreate(t, s)
	send(t, loopback, left.Port, "hello") // the creator comes...
	send(t, loopback, left.Port, "bye")   // ...and goes
	stays, err := s.Table().Create(context.Background(), ep("127.0.0.2:5000"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, netip.MustParseAddr("127.0.0.2"), stays.Port, "hello")
	if ev := reapedEvent(t, events, left.ID); ev.Cause != room.Idle {
		t.Fatalf("reaped %+v, want cause idle", ev)
	}
	if s.Stats().Reaped[room.Idle] != 1 {
		t.Fatalf("reaped %v, want one idle", s.Stats().Reaped)
	}
	// Twice the timeout after the first went, the room with a player is
	// still there.
	time.Sleep(2 * time.Second)
	if _, ok := listed(s, stays.ID); !ok {
		t.Fatal("the room with a player in it ended")
	}
}

// TestEmptyProbedRoomEndsIdle: a foreign server whose probe counts its
// players is empty when it says nobody plays and no seat is held.
func TestEmptyProbedRoomEndsIdle(t *testing.T) {
	s, _ := newExec(t, []string{testroomBin, "tee", "{port}", "4"}, "teeworlds", func(c *Config) {
		c.EmptyTimeout = time.Second
	})
	events, r := watchAndCreate(t, s)
	send(t, loopback, r.Port, "players 1") // the creator's seat turns into the player
	eventually(t, "the player", func() bool { got, _ := listed(s, r.ID); return got.Players == 1 && got.Seats == 0 })
	send(t, loopback, r.Port, "players 0")
	if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Idle {
		t.Fatalf("reaped %+v, want cause idle", ev)
	}
}

// TestUnprobedRoomEndsAtItsLifetime: a server without a probe cannot be
// seen empty, so empty_timeout does not end it; max_lifetime does.
func TestUnprobedRoomEndsAtItsLifetime(t *testing.T) {
	argv := []string{"sh", "-c", "exec sleep 60"}
	s, _ := newExec(t, argv, "none", func(c *Config) {
		c.SeatTTL = 200 * time.Millisecond
		c.EmptyTimeout = time.Second
		c.MaxLifetime = 4 * time.Second
	})
	events, r := watchAndCreate(t, s)
	time.Sleep(3 * time.Second) // its seat gone, three times empty_timeout
	if _, ok := listed(s, r.ID); !ok {
		t.Fatal("a room that cannot be seen empty ended before its lifetime")
	}
	if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Lifetime {
		t.Fatalf("reaped %+v, want cause lifetime", ev)
	}
}

// TestRoomEndsAtItsLifetime: max_lifetime ends a room with players in it.
func TestRoomEndsAtItsLifetime(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) { c.MaxLifetime = 2 * time.Second })
	events, r := watchAndCreate(t, s)
	send(t, loopback, r.Port, "hello")
	send(t, loopback, r.Port, "state 2") // playing
	if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Lifetime {
		t.Fatalf("reaped %+v, want cause lifetime", ev)
	}
}

// TestNothingEndsBeforeItsTime: through the sweeps, a room empty for
// less than empty_timeout plays on, max_lifetime 0 sets no limit, and a
// warm instance younger than warm_max_age stays ready.
func TestNothingEndsBeforeItsTime(t *testing.T) {
	s, _ := newTest(t, "game", 3, func(c *Config) {
		c.EmptyTimeout, c.MaxLifetime, c.Warm = time.Minute, 0, 1
	})
	_, r := watchAndCreate(t, s)
	send(t, loopback, r.Port, "hello") // the creator comes...
	send(t, loopback, r.Port, "bye")   // ...and goes
	eventually(t, "the room empty and a warm instance", func() bool {
		got, _ := listed(s, r.ID)
		return got.Occupied() == 0 && s.Stats().Warm == 1
	})
	time.Sleep(3 * time.Second) // two sweeps at least
	if got, ok := listed(s, r.ID); !ok || !got.Joinable() {
		t.Errorf("the room is %+v (listed %v) after two sweeps; want it playing on", got, ok)
	}
	if st := s.Stats(); st.Warm != 1 || len(st.Reaped) != 0 {
		t.Errorf("after two sweeps: %d warm, reaped %v; want the one warm instance, nothing reaped", st.Warm, st.Reaped)
	}
}

// TestStopRoom: an operator's stop ends a room gracefully, reaped as
// "operator", and leaves the warm pool as it is; a room with no process
// here cannot be stopped.
func TestStopRoom(t *testing.T) {
	s, sink := newTest(t, "game", 3, func(c *Config) { c.Warm = 1 })
	events, r := watchAndCreate(t, s)
	send(t, loopback, r.Port, "hello")
	eventually(t, "a warm room", func() bool { return s.Stats().Warm == 1 })
	if err := s.StopRoom(r.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.StopRoom(r.ID); err != nil { // on its way out already
		t.Fatalf("a second stop: %v", err)
	}
	if n := s.Stats().Warm; n != 1 {
		t.Errorf("%d warm rooms after a room was stopped, want 1", n)
	}
	if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Operator || ev.ExitCode != 0 {
		t.Fatalf("reaped %+v, want cause operator, exit 0", ev)
	}
	if err := s.StopRoom(r.ID); !errors.Is(err, room.ErrNoRoom) {
		t.Fatalf("stop of a reaped room: %v, want no_room", err)
	}
	if !sink.has("room stopping") {
		t.Fatal("the stop was not logged")
	}
}

// TestDrain: a draining host starts no room (and says why), has no
// capacity and retires its warm rooms, while the rooms it runs play on
// and take players; undrained, it starts rooms again.
func TestDrain(t *testing.T) {
	s, _ := newTest(t, "game", 4, func(c *Config) { c.Warm = 1 })
	eventually(t, "a warm room", func() bool { return s.Stats().Warm == 1 })
	events, r := watchAndCreate(t, s)
	eventually(t, "the warm room taken, and another", func() bool { return s.Stats().Warm == 1 })
	s.Drain(true)
	if _, err := s.Table().Create(context.Background(), ep("127.0.0.2:5000")); !errors.Is(err, room.ErrDraining) {
		t.Fatalf("create while draining: %v, want draining", err)
	}
	if c := s.Capacity(); c != 0 {
		t.Fatalf("capacity %d while draining", c)
	}
	eventually(t, "the warm room retired", func() bool { st := s.Stats(); return st.Warm == 0 && st.Live == 1 })
	if !s.Stats().Draining {
		t.Fatal("Stats does not say draining")
	}
	if _, err := s.Table().Join(context.Background(), r.ID, ep("127.0.0.3:5000"), room.Unproven); err != nil {
		t.Fatalf("join while draining: %v", err)
	}
	send(t, loopback, r.Port, "state 3") // its match ends
	if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Finished {
		t.Fatalf("reaped %+v", ev)
	}
	s.Drain(false)
	if _, err := s.Table().Create(context.Background(), ep("127.0.0.2:5000")); err != nil {
		t.Fatalf("create once undrained: %v", err)
	}
}

// TestRoomLog: a room's output is its log, which the lobby reads while
// the room runs and keeps once it ended; what a room leaves in place of
// its log (a link, a second name of another file, a FIFO) is refused, never
// read nor waited on.
func TestRoomLog(t *testing.T) {
	s, _ := newTest(t, "refroom", 2, nil)
	events, r := watchAndCreate(t, s)
	eventually(t, "the room's own line in its log", func() bool {
		log, err := s.RoomLog(r.ID, 10)
		return err == nil && bytes.Contains(log, []byte(`"message":"room open"`))
	})
	if log, _ := s.RoomLog(r.ID, 1); bytes.Count(log, []byte("\n")) != 1 {
		t.Fatalf("one line asked, got %q", log)
	}
	path := s.dirs.logPath(r.ID)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the lobby's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func() error{
		"a link":        func() error { return os.Symlink(secret, path) },
		"a second name": func() error { return os.Link(secret, path) },
		"a FIFO":        func() error { return unix.Mkfifo(path, 0o600) },
	} {
		os.Rename(path, path+".real")
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		log, err := s.RoomLog(r.ID, 10)
		if err == nil || bytes.Contains(log, []byte("secret")) {
			t.Errorf("%s in place of the log: read %q, %v", name, log, err)
		}
		os.Remove(path)
		os.Rename(path+".real", path)
	}
	if err := s.StopRoom(r.ID); err != nil {
		t.Fatal(err)
	}
	ev := reapedEvent(t, events, r.ID)
	log, err := s.RoomLog(r.ID, 10)
	if err != nil || !bytes.Contains(log, []byte(`"message":"room finished"`)) {
		t.Fatalf("after the room (%v) ended, its log: %q, %v", ev.Cause, log, err)
	}
	if _, err := s.RoomLog(12345, 10); !errors.Is(err, room.ErrNoRoom) {
		t.Fatalf("log of a room never here: %v", err)
	}
}

// TestLastLines: a log is shown as text, its last lines, each cut to a
// bounded length; nothing a room wrote reaches a terminal as a control
// character.
func TestLastLines(t *testing.T) {
	in := "one\ntwo\x1b[31m red\r\nthree\xff\n" + strings.Repeat("x", maxLogLine+10) + "\n"
	want := "two\uFFFD[31m red\nthree\uFFFD\n" + strings.Repeat("x", maxLogLine) + "\n"
	if got := string(lastLines([]byte(in), 3)); got != want {
		t.Fatalf("lastLines = %q, want %q", got, want)
	}
	if got := lastLines(nil, 3); len(got) != 0 {
		t.Fatalf("lastLines of nothing = %q", got)
	}
}

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

var loopback = netip.MustParseAddr("127.0.0.1")

func TestCreateListJoin(t *testing.T) {
	s, sink := newTest(t, "game", 4, func(c *Config) { c.MaxPlayers = 3 })
	ctx := context.Background()
	v0 := s.Table().List().Version
	r, err := s.Table().Create(ctx, ep("127.0.0.1:5000"))
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == 0 || r.PID <= 0 || r.State != packet.Waiting || r.Seats != 1 || r.Players != 0 ||
		r.MaxPlayers != 3 || r.Source != "instance" || r.StartedAt.IsZero() {
		t.Fatalf("created %+v", r)
	}
	if r.Port < s.cfg.FirstPort || r.Port > s.cfg.LastPort {
		t.Fatalf("port %d outside the pool", r.Port)
	}
	snap := s.Table().List()
	if snap.Version <= v0 || len(snap.Rooms) != 1 || snap.Rooms[0] != r {
		t.Fatalf("List after Create: %+v", snap)
	}
	if again := s.Table().List(); again.Version != snap.Version {
		t.Fatalf("version moved without a change: %d -> %d", snap.Version, again.Version)
	}
	// The creator joining again takes no second seat.
	if j, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5000"), room.Unproven); err != nil || j.Seats != 1 {
		t.Fatalf("creator rejoin: %+v %v", j, err)
	}
	if j, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5001"), room.Unproven); err != nil || j.Seats != 2 {
		t.Fatalf("second player: %+v %v", j, err)
	}
	if j, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5001"), room.Unproven); err != nil || j.Seats != 2 {
		t.Fatalf("duplicate join: %+v %v", j, err)
	}
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5002"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5003"), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("fourth seat of three: %v", err)
	}
	for _, id := range []uint32{0, r.ID + 1000} {
		if _, err := s.Table().Join(ctx, id, ep("127.0.0.1:5004"), room.Unproven); !errors.Is(err, room.ErrNoRoom) {
			t.Fatalf("join %d: %v", id, err)
		}
	}
	if !sink.has("room created", fmt.Sprintf(`"pid":%d`, r.PID), `"spawn_ms"`) {
		t.Fatal("no room created line")
	}
}

func TestConcurrentJoinsAreExact(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) { c.MaxPlayers = 4 })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			_, err := s.Table().Join(context.Background(), r.ID, netip.AddrPortFrom(loopback, uint16(7000+i)), room.Unproven)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, room.ErrFull):
				full.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 3 || full.Load() != 97 {
		t.Fatalf("%d joins succeeded and %d were full; want 3 and 97", ok.Load(), full.Load())
	}
	if row, _ := listed(s, r.ID); row.Seats != 4 {
		t.Fatalf("seats %d, want 4", row.Seats)
	}
}

func TestSeatExpires(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) { c.SeatTTL = time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	r, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, loopback, r.Port, "hello") // the creator comes
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.2:6000"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	// The creator may come before the JOIN (players 1, seats 0, then 1)
	// or after it (seats 2, then players 1 and seats 1): the expiry is the
	// change to no seat after one.
	for held := false; ; {
		ev := nextEvent(t, events)
		if ev.Room.ID != r.ID || ev.Kind != room.Changed || ev.Room.Players != 1 {
			continue
		}
		if ev.Room.Seats == 1 {
			held = true
		}
		if held && ev.Room.Seats == 0 {
			break
		}
	}
	// The seat of 127.0.0.2, whose player never came, is free again: the
	// room holds MaxPlayers-1 new ones beside its creator.
	for i := range s.cfg.MaxPlayers - 1 {
		if _, err := s.Table().Join(ctx, r.ID, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + i)}), 8000), room.Unproven); err != nil {
			t.Fatalf("join %d after expiry: %v", i, err)
		}
	}
}

// A room whose creator never comes, nor anyone else, is stopped once the
// creator's seat expires, and reaped as abandoned.
func TestRoomNobodyCameToIsAbandoned(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) { c.SeatTTL = 500 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	r, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Abandoned {
		t.Fatalf("reaped %+v, want cause abandoned", ev)
	}
}

func TestSeatBecomesPlayer(t *testing.T) {
	s, _ := newTest(t, "game", 2, nil)
	ctx := context.Background()
	r, err := s.Table().Create(ctx, ep("127.0.0.2:6000"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.3:6000"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	// The player from 127.0.0.2 arrives: its seat turns into a player, the
	// seat of 127.0.0.3 stays.
	send(t, netip.MustParseAddr("127.0.0.2"), r.Port, "hello")
	eventually(t, "the seat to turn into a player", func() bool {
		row, _ := listed(s, r.ID)
		return row.Players == 1 && row.Seats == 1
	})
	// A player with no seat is kept out by the room's door: the game never
	// hears of it, and the table counts no one more.
	if sendFrom(t, netip.MustParseAddr("127.0.0.4"), r.Port, "hello", 3) {
		t.Fatal("the room answered a player without a seat")
	}
	// The player of the other seat arrives in turn.
	send(t, netip.MustParseAddr("127.0.0.3"), r.Port, "hello")
	eventually(t, "the second player", func() bool {
		row, _ := listed(s, r.ID)
		return row.Players == 2 && row.Seats == 0
	})
}

func TestNotJoinableAndFinished(t *testing.T) {
	s, sink := newTest(t, "game", 2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	events := s.Table().Watch(ctx)
	send(t, loopback, r.Port, "state 1")
	eventually(t, "countdown", func() bool { row, _ := listed(s, r.ID); return row.State == packet.Countdown })
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:6001"), room.Unproven); err != nil {
		t.Fatalf("join in countdown: %v", err)
	}
	send(t, loopback, r.Port, "state 2")
	eventually(t, "playing", func() bool { row, _ := listed(s, r.ID); return row.State == packet.Playing })
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:6002"), room.Unproven); !errors.Is(err, room.ErrNotJoinable) {
		t.Fatalf("join while playing: %v", err)
	}
	send(t, loopback, r.Port, "state 3")
	var states []packet.RoomState
	var last uint64
	for {
		ev := nextEvent(t, events)
		if ev.Version <= last {
			t.Fatalf("event version %d after %d", ev.Version, last)
		}
		last = ev.Version
		if ev.Room.ID != r.ID {
			continue
		}
		if ev.Kind == room.Reaped {
			if ev.Cause != "finished" || ev.ExitCode != 0 || ev.Signal != "" {
				t.Fatalf("reaped %+v", ev)
			}
			break
		}
		if len(states) == 0 || states[len(states)-1] != ev.Room.State {
			states = append(states, ev.Room.State)
		}
	}
	want := []packet.RoomState{packet.Countdown, packet.Playing, packet.Finished}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	if _, ok := listed(s, r.ID); ok {
		t.Fatal("finished room still listed")
	}
	// The start and end of a match are lifecycle lines; the countdown,
	// which players can flip on and off at will, is a debug line.
	sink.await(t, "room state changed", `"level":"info"`, `"to":"`+packet.Playing.String()+`"`)
	sink.await(t, "room state changed", `"level":"info"`, `"to":"`+packet.Finished.String()+`"`)
	sink.await(t, "room state changed", `"level":"debug"`, `"to":"`+packet.Countdown.String()+`"`)
	sink.await(t, "room reaped", `"cause":"finished"`)
}

// TestExitAndCrashAreReaped: a room that exits 0 of itself is reaped as
// exited; one that exits otherwise, or is killed, as crashed.
func TestExitAndCrashAreReaped(t *testing.T) {
	s, sink := newTest(t, "game", 3, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	a, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Table().Create(ctx, ep("127.0.0.1:6001"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Table().Create(ctx, ep("127.0.0.1:6002"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, loopback, a.Port, "exit 3")
	if err := syscall.Kill(b.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	send(t, loopback, c.Port, "exit 0")
	got := map[uint32]room.Event{}
	for {
		ev := nextEvent(t, events)
		if ev.Kind == room.Reaped {
			got[ev.Room.ID] = ev
			if len(got) == 3 {
				break
			}
		}
	}
	if ev := got[c.ID]; ev.Cause != "exited" || ev.ExitCode != 0 || ev.Signal != "" {
		t.Fatalf("exit 0 reaped as %+v", ev)
	}
	if ev := got[a.ID]; ev.Cause != "crashed" || ev.ExitCode != 3 {
		t.Fatalf("exit 3 reaped as %+v", ev)
	}
	if ev := got[b.ID]; ev.Cause != "crashed" || ev.ExitCode != -1 || ev.Signal != "killed" && ev.Signal != "SIGKILL" {
		t.Fatalf("kill -9 reaped as %+v", ev)
	}
	sink.await(t, "room reaped", `"exit_code":3`)
	if proc.Alive(a.PID) || proc.Alive(b.PID) {
		t.Fatal("reaped process still alive")
	}
}

// TestCapacity: max_instances counts the rooms still starting too: of
// CREATEs at once, exactly max_instances get a room, the others are
// refused for capacity.
func TestCapacity(t *testing.T) {
	s, _ := newTest(t, "game", 6, func(c *Config) { c.MaxInstances = 2 })
	var granted, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			_, err := s.Table().Create(context.Background(), ep("127.0.0.1:"+strconv.Itoa(6000+i)))
			switch {
			case err == nil:
				granted.Add(1)
			case errors.Is(err, room.ErrCapacity):
				refused.Add(1)
			default:
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	if granted.Load() != 2 || refused.Load() != 4 {
		t.Fatalf("6 CREATEs at once with max_instances 2: %d rooms, %d refused for capacity; want 2 and 4", granted.Load(), refused.Load())
	}
}

func TestPoolExhaustedAndCooldown(t *testing.T) {
	ctx := context.Background()
	s2, _ := newTest(t, "game", 1, func(c *Config) { c.MaxInstances = 2; c.PortCooldown = time.Hour })
	r, err := s2.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Table().Create(ctx, ep("127.0.0.1:6001")); !errors.Is(err, room.ErrNoPorts) {
		t.Fatalf("create with the pool empty: %v", err)
	}
	syscall.Kill(r.PID, syscall.SIGKILL)
	eventually(t, "the reap", func() bool { return s2.Stats().Reaped["crashed"] == 1 })
	// The port cools down for an hour: still none free.
	if _, err := s2.Table().Create(ctx, ep("127.0.0.1:6001")); !errors.Is(err, room.ErrNoPorts) {
		t.Fatalf("create during the cooldown: %v", err)
	}
}

func TestHeldPortIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		bind netip.Addr // instances' address; the holder squats it
	}{
		{"pre-check", netip.Addr{}},                         // holder on loopback, found before a spawn
		{"instance bind", netip.MustParseAddr("127.0.0.2")}, // holder on the instance's address only
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, sink := newTest(t, "game", 3, func(c *Config) { c.Bind = tc.bind })
			holderAddr := tc.bind
			if !holderAddr.IsValid() {
				holderAddr = loopback
			}
			holder, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(holderAddr, s.cfg.FirstPort)))
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			r, err := s.Table().Create(context.Background(), ep("127.0.0.1:6000"))
			if err != nil {
				t.Fatal(err)
			}
			if r.Port == s.cfg.FirstPort {
				t.Fatalf("room got the held port %d", r.Port)
			}
			if !sink.has("port quarantined", fmt.Sprintf(`"port":%d`, s.cfg.FirstPort)) {
				t.Fatal("no quarantine line")
			}
			if st := s.Stats(); st.PortsQuarantined != 1 || st.Quarantines != 1 || st.SpawnFailures != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestWarmPool(t *testing.T) {
	s, sink := newTest(t, "game", 6, func(c *Config) { c.Warm = 2; c.MaxInstances = 3 })
	eventually(t, "two warm instances", func() bool { return s.Stats().Warm == 2 })
	if n := len(s.Table().List().Rooms); n != 0 {
		t.Fatalf("warm instances listed: %d", n)
	}
	ctx := context.Background()
	r, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.WarmHits != 1 || st.Rooms != 1 {
		t.Fatalf("after a warm create: %+v", st)
	}
	if row, ok := listed(s, r.ID); !ok || row.Seats != 1 || row.State != packet.Waiting {
		t.Fatalf("warm room listed as %+v %v", row, ok)
	}
	// Refilled up to max_instances: one room and two warm.
	eventually(t, "the refill", func() bool { return s.Stats().Warm == 2 })
	if _, err := s.Table().Create(ctx, ep("127.0.0.1:6001")); err != nil {
		t.Fatal(err)
	}
	if !sink.has("room created", `"warm":true`) {
		t.Fatal("no warm create line")
	}
	// Two rooms and one warm instance fill max_instances.
	eventually(t, "the refill", func() bool { return s.Stats().Warm == 1 })
	if _, err := s.Table().Create(ctx, ep("127.0.0.1:6002")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Table().Create(ctx, ep("127.0.0.1:6003")); !errors.Is(err, room.ErrCapacity) {
		t.Fatalf("create over max_instances with warm instances counted: %v", err)
	}
	time.Sleep(time.Second) // time for a refill, which max_instances does not allow
	if st := s.Stats(); st.Live != 3 || st.Warm != 0 {
		t.Fatalf("with max_instances rooms listed: %d processes, %d warm; want 3 and none", st.Live, st.Warm)
	}
}

func TestDeadWarmInstanceIsReplaced(t *testing.T) {
	s, _ := newTest(t, "game", 3, func(c *Config) { c.Warm = 1 })
	eventually(t, "a warm instance", func() bool { return s.Stats().Warm == 1 })
	warmPID := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.warm) == 0 {
			return 0
		}
		return s.warm[0].row.PID
	}
	pid := warmPID()
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, "a new warm instance", func() bool { p := warmPID(); return p != 0 && p != pid })
	if st := s.Stats(); st.Reaped["crashed"] != 1 || st.Version != 0 || st.Rooms != 0 {
		t.Fatalf("a warm instance's death showed in the table: %+v", st)
	}
}

func TestOldWarmInstanceIsRetired(t *testing.T) {
	s, sink := newTest(t, "game", 3, func(c *Config) { c.Warm = 1; c.WarmMaxAge = 300 * time.Millisecond })
	eventually(t, "a retirement", func() bool { return s.Stats().Reaped["retired"] >= 1 })
	eventually(t, "a fresh warm instance", func() bool { return s.Stats().Warm == 1 })
	sink.await(t, "room reaped", `"cause":"retired"`, `"exit_code":0`)
}

func TestShutdownDeadlineKills(t *testing.T) {
	s, _ := newTest(t, "hang-stop", 2, func(c *Config) { c.StopGrace = time.Minute })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown past its deadline: %v", err)
	}
	if proc.Alive(r.PID) {
		t.Fatal("instance alive after Shutdown returned")
	}
}

func TestShutdownRefusesAndStops(t *testing.T) {
	s, _ := newTest(t, "game", 4, nil)
	ctx := context.Background()
	var pids []int
	for i := range 3 {
		r, err := s.Table().Create(ctx, netip.AddrPortFrom(loopback, uint16(6000+i)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, r.PID)
	}
	deadline, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := s.Shutdown(deadline); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Fatalf("pid %d alive after Shutdown", pid)
		}
	}
	if _, err := s.Table().Create(ctx, ep("127.0.0.1:6000")); !errors.Is(err, room.ErrClosed) {
		t.Fatalf("create after Shutdown: %v", err)
	}
	if st := s.Stats(); st.Reaped["stopped"] != 3 {
		t.Fatalf("reaped %v, want 3 stopped", st.Reaped)
	}
}

// TestTableContract: the supervisor's table, with real instances behind
// its rooms reporting their state over their own stream, keeps the
// contract every edge relies on.
func TestTableContract(t *testing.T) {
	roomtabletest.Contract(t, func(t *testing.T) roomtabletest.Subject {
		s, _ := newTest(t, "game", 2, func(c *Config) { c.MaxPlayers = 4 })
		return roomtabletest.Subject{Table: s.Table(), Report: func(id uint32, state packet.RoomState) {
			// The game hears commands from seated players only: the
			// test's socket holds a seat, refreshed every time.
			if _, err := s.Table().Join(context.Background(), id, ep("127.0.0.1:9"), room.Unproven); err != nil {
				t.Fatal(err)
			}
			r, _ := listed(s, id)
			send(t, loopback, r.Port, "state "+strconv.Itoa(int(state)))
		}}
	})
}

// A room whose match has not begun max_waiting after it was handed out
// ends, players or not; one whose match began does not.
func TestRoomWaitingTooLongEnds(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) { c.MaxWaiting = time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	waiting, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	playing, err := s.Table().Create(ctx, ep("127.0.0.2:6000"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, loopback, waiting.Port, "hello") // a player, pinging: still waiting
	send(t, netip.MustParseAddr("127.0.0.2"), playing.Port, "state 2")
	if ev := reapedEvent(t, events, waiting.ID); ev.Cause != room.WaitedOut {
		t.Fatalf("reaped %+v, want cause waited_out", ev)
	}
	if _, ok := listed(s, playing.ID); !ok {
		t.Fatal("the room whose match began was ended too")
	}
}

package supervisor

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"

	"github.com/foyerlobby/foyer/room"
)

// createParallel is how many rooms createN starts at once: hundreds
// starting together on a small machine outlast the spawn timeout, which
// is not what the tests that start them measure.
const createParallel = 32

// createN creates n rooms in parallel, createParallel at a time.
func createN(t testing.TB, s *Supervisor, n int) []room.Room {
	t.Helper()
	rooms := make([]room.Room, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	slots := make(chan struct{}, createParallel)
	for i := range n {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			rooms[i], errs[i] = s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, uint16(10000+i)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return rooms
}

// killAndAwaitReap kill -9s the rooms and waits until each is reaped as a
// crash by SIGKILL.
func killAndAwaitReap(t testing.TB, s *Supervisor, events <-chan room.Event, victims []room.Room) {
	t.Helper()
	want := make(map[uint32]bool)
	for _, r := range victims {
		want[r.ID] = true
		if err := syscall.Kill(r.PID, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", r.PID, err)
		}
	}
	timeout := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-events:
			if ev.Kind != room.Reaped || !want[ev.Room.ID] {
				continue
			}
			if ev.Cause != "crashed" || ev.Signal != "SIGKILL" || ev.ExitCode != -1 {
				t.Fatalf("room %d reaped as %+v", ev.Room.ID, ev)
			}
			delete(want, ev.Room.ID)
		case <-timeout:
			t.Fatalf("rooms %v not reaped", want)
		}
	}
}

// churnCycles is how many create/kill cycles TestKillReapReuse runs after
// its first round.
const churnCycles = 1000

func TestKillReapReuse(t *testing.T) {
	// A few spare ports: a port some other process holds for a moment is
	// quarantined and skipped, as it would be in production, instead of
	// failing the test with an empty pool.
	const rooms, victims, spare = 50, 12, 4
	s, _ := newTest(t, "game", rooms+spare, func(c *Config) { c.PortCooldown = time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	live := createN(t, s, rooms)

	// Every port freed by a reaped room must come back: count how often
	// each is handed out, and check no two live rooms ever share one.
	used := make(map[uint16]int)
	for _, r := range live {
		used[r.Port]++
	}
	cycles := 0
	var killT, createT time.Duration
	defer func() { t.Logf("%d cycles: %v killing and reaping, %v creating", cycles, killT, createT) }()
	for cycles < churnCycles {
		rand.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		k := min(victims, churnCycles-cycles)
		dead := live[:k]
		t1 := time.Now()
		killAndAwaitReap(t, s, events, dead)
		killT += time.Since(t1)
		for _, r := range dead {
			if proc.Alive(r.PID) {
				t.Fatalf("pid %d of reaped room %d alive", r.PID, r.ID)
			}
			if _, ok := listed(s, r.ID); ok {
				t.Fatalf("reaped room %d listed", r.ID)
			}
		}
		time.Sleep(2 * time.Millisecond) // the cooldown
		t2 := time.Now()
		fresh := createN(t, s, k)
		createT += time.Since(t2)
		live = append(fresh, live[k:]...)
		if p := ports(live); len(slices.Compact(p)) != rooms {
			t.Fatalf("live rooms share ports: %v", ports(live))
		}
		for _, r := range fresh {
			used[r.Port]++
		}
		cycles += k
	}
	// 1,050 rooms over 54 ports: every port not quarantined was reused.
	quarantined := s.Stats().Quarantines
	for port := s.cfg.FirstPort; port <= s.cfg.LastPort; port++ {
		if used[port] < 2 && quarantined == 0 {
			t.Errorf("port %d handed out %d times in %d rooms", port, used[port], rooms+churnCycles)
		}
	}

	// No leak: exactly the listed rooms' processes run, and every port is
	// either in use by one of them or free to bind.
	var pids []int
	for _, r := range s.Table().List().Rooms {
		pids = append(pids, r.PID)
	}
	kids := childPIDs(t)
	slices.Sort(pids)
	slices.Sort(kids)
	if !slices.Equal(pids, kids) {
		t.Fatalf("children %v, listed rooms' pids %v", kids, pids)
	}
	if st := s.Stats(); st.Reaped["crashed"] != churnCycles || st.PortsInUse != rooms || st.Rooms != rooms {
		t.Fatalf("stats after the churn: %+v", st)
	}
	deadline, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := s.Shutdown(deadline); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.PortsInUse != 0 {
		t.Fatalf("%d ports in use after Shutdown", st.PortsInUse)
	}
	for port := s.cfg.FirstPort; port <= s.cfg.LastPort; port++ {
		if !portFree(port) {
			t.Fatalf("port %d still bound after Shutdown", port)
		}
	}
}

func ports(rooms []room.Room) []uint16 {
	var p []uint16
	for _, r := range rooms {
		p = append(p, r.Port)
	}
	slices.Sort(p)
	return p
}

func TestInstancesDieWithTheSupervisor(t *testing.T) {
	for _, driver := range []string{"plugin", "exec"} {
		t.Run(driver, func(t *testing.T) { dieWithTheSupervisor(t, driver) })
	}
}

// dieWithTheSupervisor kill -9s a supervisor of rooms run by driver and
// checks that its rooms die with it.
func dieWithTheSupervisor(t *testing.T, driver string) {
	const n = 5
	first, _ := portRange(n)
	cmd := exec.Command(testroomBin, "host", strconv.Itoa(n), strconv.Itoa(int(first)), driver)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		line := sc.Text()
		pid, err := strconv.Atoi(strings.TrimPrefix(line, "pid "))
		if err != nil {
			t.Fatalf("host said %q", line)
		}
		pids = append(pids, pid)
	}
	if len(pids) != n {
		t.Fatalf("host started %d instances, want %d", len(pids), n)
	}
	for _, pid := range pids {
		if !proc.Alive(pid) {
			t.Fatalf("instance %d not running before the kill", pid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	cmd.Wait()
	eventually(t, "the instances to die with their host", func() bool {
		return !slices.ContainsFunc(pids, proc.Alive)
	})
	sweepDoors(t) // the host's, which it had no time to remove
	// The requirement is 2 s; the parent-death signal makes it immediate.
	t.Logf("all %d instances gone %v after the host's kill -9", n, time.Since(t0))
}

func TestGarbageOutputIsHarmless(t *testing.T) {
	s, _ := newTest(t, "garbage", 2, nil)
	r, err := s.Table().Create(context.Background(), ep("127.0.0.2:6000"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, netip.MustParseAddr("127.0.0.2"), r.Port, "hello")
	eventually(t, "the player", func() bool { row, _ := listed(s, r.ID); return row.Players == 1 && row.Seats == 0 })
}

func TestBrokenInstancesFailTheSpawn(t *testing.T) {
	for _, mode := range []string{"garbage-handshake", "silent"} {
		t.Run(mode, func(t *testing.T) {
			s, sink := newTest(t, mode, 2, func(c *Config) { c.SpawnTimeout = 2 * time.Second })
			created := make(chan error, 1)
			go func() {
				_, err := s.Table().Create(context.Background(), ep("127.0.0.1:6000"))
				created <- err
			}()
			if mode == "silent" {
				// While the spawn hangs, the table answers.
				eventually(t, "the spawn to start", func() bool { return s.Stats().Spawning == 1 })
				s.Table().List()
				if _, err := s.Table().Join(context.Background(), 1, ep("127.0.0.1:6001"), room.Unproven); !errors.Is(err, room.ErrNoRoom) {
					t.Fatalf("join during a spawn: %v", err)
				}
				if s.Stats().Spawning != 1 {
					t.Fatal("the table waited for the spawn")
				}
			}
			if err := <-created; !errors.Is(err, room.ErrSpawn) {
				t.Fatalf("create: %v", err)
			}
			if !sink.has("spawn failed") {
				t.Fatal("no spawn failed line")
			}
			// Launch kills a process that failed the handshake but does
			// not wait for it, so its end is awaited here.
			eventually(t, "the failed instance to die", func() bool { return len(childPIDs(t)) == 0 })
			if st := s.Stats(); st.SpawnFailures != 1 || st.PortsInUse != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestHangingStopIsKilled(t *testing.T) {
	s, _ := newTest(t, "hang-stop", 2, func(c *Config) { c.StopGrace = 300 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	r, err := s.Table().Create(ctx, ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	deadline, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if err := s.Shutdown(deadline); err != nil {
		t.Fatal(err)
	}
	if proc.Alive(r.PID) {
		t.Fatal("instance alive after Shutdown")
	}
	for {
		ev := nextEvent(t, events)
		if ev.Kind == room.Reaped {
			if ev.Cause != "stopped" || ev.Signal != "SIGKILL" {
				t.Fatalf("reaped %+v", ev)
			}
			break
		}
	}
}

func TestSilentInstanceIsUnhealthy(t *testing.T) {
	s, sink := newTest(t, "game", 2, func(c *Config) { c.HealthTimeout = 500 * time.Millisecond })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:6000"))
	if err != nil {
		t.Fatal(err)
	}
	// A stopped process sends no heartbeat.
	if err := syscall.Kill(r.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reap", func() bool { return s.Stats().Reaped["unhealthy"] == 1 })
	if _, ok := listed(s, r.ID); ok || proc.Alive(r.PID) {
		t.Fatal("unhealthy room still there")
	}
	sink.await(t, "room unhealthy, killing", `"pid":`+strconv.Itoa(r.PID))
	sink.await(t, "room reaped", `"cause":"unhealthy"`, `"signal":"SIGKILL"`)
}

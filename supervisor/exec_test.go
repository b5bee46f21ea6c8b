package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/proc"

	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/teeinfo"
	"github.com/foyerlobby/foyer/room"
)

// ddnetServer is the DDNet server binary, on PATH or where Debian puts
// it; the tests that need it call it first (make test installs Debian's
// ddnet-server).
func ddnetServer(t testing.TB) string {
	t.Helper()
	return requiretest.Command(t, "DDNet-Server", "/usr/games/DDNet-Server")
}

// ddnetCommand runs DDNet-Server on the room's port on [::1] (it cannot
// bind 127.0.0.1 alone), with the room's maximum as its client slots.
func ddnetCommand(t testing.TB) []string {
	return []string{ddnetServer(t),
		"sv_port {port}; sv_name Room {room_id}; sv_register 0; bindaddr ::1; sv_max_clients {max_players}; sv_map Tutorial"}
}

// newExec starts a supervisor of the exec driver running argv.
func newExec(t testing.TB, argv []string, probe string, tune func(*Config)) (*Supervisor, *logSink) {
	t.Helper()
	return newTest(t, "", 4, func(c *Config) {
		c.Command, c.Probe = argv, probe
		if tune != nil {
			tune(c)
		}
	})
}

// askInfo asks the server on [::1]:port for its extended info and
// assembles the reply.
func askInfo(t *testing.T, port uint16) teeinfo.Info {
	t.Helper()
	return askInfoAt(t, netip.AddrPortFrom(netip.IPv6Loopback(), port))
}

// askInfoAt is askInfo of the server at addr.
func askInfoAt(t *testing.T, addr netip.AddrPort) teeinfo.Info {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := teeinfo.Request{Extended: true, ExtraToken: 0x1234, Token: 0x56}
	buf := make([]byte, 2048)
	for range 20 {
		c.Write(req.Append(nil))
		var a teeinfo.Assembler
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		for {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			rep, err := teeinfo.ParseReply(buf[:n])
			if err != nil {
				t.Fatalf("reply %q: %v", buf[:n], err)
			}
			if rep.Info.Token != req.ReplyToken() {
				continue
			}
			if done, err := a.Add(&rep); err != nil {
				t.Fatal(err)
			} else if done {
				return a.Info()
			}
		}
	}
	t.Fatalf("no info from %v", addr)
	return teeinfo.Info{}
}

// reapedEvent waits for the reaping of room id.
func reapedEvent(t *testing.T, events <-chan room.Event, id uint32) room.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, events); ev.Kind == room.Reaped && ev.Room.ID == id {
			return ev
		}
	}
}

// homeOf reads a process's HOME from its environment.
func homeOf(t *testing.T, pid int) string {
	t.Helper()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	home := ""
	for v := range bytes.SplitSeq(env, []byte{0}) {
		if h, ok := strings.CutPrefix(string(v), "HOME="); ok {
			home = h // the last one wins, as in getenv
		}
	}
	return home
}

// watchAndCreate watches s for the rest of the test and creates one
// room in it.
func watchAndCreate(t *testing.T, s *Supervisor) (<-chan room.Event, room.Room) {
	t.Helper()
	events := s.Table().Watch(t.Context())
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if err != nil {
		t.Fatal(err)
	}
	return events, r
}

// serverPID is the pid of the foreign server a room's keeper runs: the
// keeper's one child.
func serverPID(t *testing.T, keeper int) int {
	t.Helper()
	var pid int
	eventually(t, "the keeper's server", func() bool {
		// The child of whichever thread forked it.
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", keeper))
		var kids []string
		for _, f := range files {
			b, _ := os.ReadFile(f)
			kids = append(kids, strings.Fields(string(b))...)
		}
		if len(kids) != 1 {
			return false
		}
		var err error
		pid, err = strconv.Atoi(kids[0])
		return err == nil
	})
	return pid
}

// signal sends sig to a room's process.
func signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

func TestExecDDNetCreateProbeKill(t *testing.T) {
	s, _ := newExec(t, ddnetCommand(t), "teeworlds", func(c *Config) {
		c.MaxPlayers = 5
		c.HealthTimeout = 3 * time.Second // a heartbeat carries the details at least every 1.9 s
	})
	events, r := watchAndCreate(t, s)
	name := fmt.Sprintf("Room %d", r.ID)
	if r.Source != "exec" || r.State != packet.Waiting || r.MaxPlayers != 5 || r.Players != 0 || r.Seats != 1 ||
		r.Name != name || r.Map != "Tutorial" || r.Game == "" || r.PID <= 0 || r.Port < s.cfg.FirstPort || r.Port > s.cfg.LastPort {
		t.Fatalf("created %+v", r)
	}
	if ev := nextEvent(t, events); ev.Kind != room.Created || ev.Room.ID != r.ID {
		t.Fatalf("event %+v", ev)
	}
	// The server is the one on the room's port, as the room says.
	if in := askInfo(t, r.Port); in.Name != name || in.MaxClients != 5 || in.NumClients != 0 {
		t.Fatalf("server info %+v", in)
	}
	// It runs under its keeper (the room's process), in a private
	// directory in the room's, its HOME, and its output reaches the log.
	server := serverPID(t, r.PID)
	home := homeOf(t, server)
	if want := filepath.Join(s.dirs.path(r.ID), "home"); home != want || !strings.Contains(home, "foyer-lobby-") {
		t.Fatalf("HOME %q, want %q", home, want)
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", server)); err != nil || cwd != home {
		t.Fatalf("working directory %q (%v), want its HOME %q", cwd, err, home)
	}
	// Its output goes to the room's log as it prints it: DDNet's own
	// lines, not wrapped in anything.
	eventually(t, "the server's output in the room's log", func() bool {
		log, err := s.RoomLog(r.ID, 100)
		return err == nil && bytes.Contains(log, []byte("I server: server name is '"+name+"'"))
	})
	// Answered probes keep it healthy well past the health timeout.
	for range 3 {
		if _, err := s.Table().Join(context.Background(), r.ID, ep("127.0.0.1:5001"), room.Unproven); err != nil {
			t.Fatalf("join: %v", err)
		}
		time.Sleep(time.Second)
	}
	if got, ok := listed(s, r.ID); !ok || got.State != packet.Waiting || got.MaxPlayers != 5 {
		t.Fatalf("after probing: %+v %v", got, ok)
	}

	// The server's end, as its keeper reports it, is the room's.
	signal(t, server, syscall.SIGKILL)
	ev := reapedEvent(t, events, r.ID)
	if ev.Cause != "crashed" || ev.Signal != "SIGKILL" || ev.ExitCode != -1 {
		t.Fatalf("reaped %+v", ev)
	}
	if _, ok := listed(s, r.ID); ok {
		t.Fatal("reaped room listed")
	}
	eventually(t, "the private HOME to be removed", func() bool {
		_, err := os.Stat(home)
		return errors.Is(err, os.ErrNotExist)
	})
	// The port goes back to the pool: a new room runs fine after it.
	r2, err := s.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if err != nil || r2.ID <= r.ID {
		t.Fatalf("second room %+v %v", r2, err)
	}
}

// A kept server's answers to the probe are its signs of life: a DDNet
// room nobody plays in, whose server answers every probe, lives on
// through four health timeouts and the 16 sweeps in them. Its keeper's
// heartbeats alone would not keep it: a server that stops answering is
// reaped, TestExecDDNetSilentIsUnhealthy.
func TestExecDDNetAnsweredProbesKeepItAlive(t *testing.T) {
	const health = 3 * time.Second // a heartbeat carries the details at least every 1.9 s
	s, _ := newExec(t, ddnetCommand(t), "teeworlds", func(c *Config) { c.HealthTimeout = health })
	events, r := watchAndCreate(t, s)
	end := time.After(4 * health)
	for done := false; !done; {
		select {
		case ev := <-events:
			if ev.Kind == room.Reaped && ev.Room.ID == r.ID {
				t.Fatalf("the room of a server that answers its probes was reaped: %+v", ev)
			}
		case <-end:
			done = true
		}
	}
	if got, ok := listed(s, r.ID); !ok || got.State != packet.Waiting || got.Name != fmt.Sprintf("Room %d", r.ID) {
		t.Fatalf("after four health timeouts: %+v, listed %v", got, ok)
	}
	if in := askInfo(t, r.Port); in.Name != fmt.Sprintf("Room %d", r.ID) {
		t.Fatalf("server info %+v", in)
	}
}

func TestExecDDNetSilentIsUnhealthy(t *testing.T) {
	s, sink := newExec(t, ddnetCommand(t), "teeworlds", func(c *Config) { c.HealthTimeout = 3 * time.Second })
	events, r := watchAndCreate(t, s)
	// A stopped server answers nothing, but its process (and its keeper,
	// heartbeats and all) lives on.
	server := serverPID(t, r.PID)
	signal(t, server, syscall.SIGSTOP)
	ev := reapedEvent(t, events, r.ID)
	if ev.Cause != "unhealthy" || ev.Signal != "SIGKILL" {
		t.Fatalf("reaped %+v", ev)
	}
	sink.await(t, "room unhealthy, killing", fmt.Sprintf(`"pid":%d`, r.PID))
	eventually(t, "the server to be gone with its keeper", func() bool { return !proc.Alive(server) && !proc.Alive(r.PID) })
}

func TestExecDDNetShutdownStopsGracefully(t *testing.T) {
	// This one is told where to bind, and probed only there.
	argv := []string{ddnetServer(t), "sv_port {port}; sv_register 0; bindaddr {bind}"}
	s, _ := newExec(t, argv, "teeworlds", func(c *Config) { c.Bind = netip.IPv6Loopback() })
	events, r := watchAndCreate(t, s)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// SIGTERM ends DDNet by itself, well within the grace period.
	if ev := reapedEvent(t, events, r.ID); ev.Cause != "stopped" || ev.Signal == "SIGKILL" {
		t.Fatalf("reaped %+v", ev)
	}
}

func TestExecProbeNone(t *testing.T) {
	dir := t.TempDir()
	argv := []string{"sh", "-c", `echo "{port} {room_id} {max_players} [{bind}]" > "$0/{room_id}"; exec sleep 60`, dir}
	s, _ := newExec(t, argv, "none", func(c *Config) {
		c.MaxPlayers = 2
		c.HealthTimeout = 100 * time.Millisecond
	})
	events, r := watchAndCreate(t, s)
	if r.Source != "exec" || r.State != packet.Waiting || r.MaxPlayers != 2 || r.Seats != 1 || r.Players != 0 {
		t.Fatalf("created %+v", r)
	}
	got, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(r.ID)))
	if want := fmt.Sprintf("%d %d 2 []\n", r.Port, r.ID); err != nil || string(got) != want {
		t.Fatalf("arguments %q (%v), want %q", got, err, want)
	}
	// Seats come from reservations only.
	if _, err := s.Table().Join(context.Background(), r.ID, ep("127.0.0.1:5001"), room.Unproven); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Table().Join(context.Background(), r.ID, ep("127.0.0.1:5002"), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("third seat of two: %v", err)
	}
	// Without status there is no health to miss: the room outlives many
	// health timeouts.
	time.Sleep(5 * s.cfg.HealthTimeout)
	if _, ok := listed(s, r.ID); !ok {
		t.Fatal("unprobed room reaped while running")
	}
	signal(t, serverPID(t, r.PID), syscall.SIGTERM)
	if ev := reapedEvent(t, events, r.ID); ev.Cause != "crashed" || ev.Signal != "SIGTERM" {
		t.Fatalf("reaped %+v", ev)
	}
}

func TestExecExitCauses(t *testing.T) {
	// The server exits when the test says, not after a while: one that
	// exited before the settle time would fail the create instead.
	dir := t.TempDir()
	argv := []string{"sh", "-c", `while [ ! -e "$0/exit" ]; do sleep 0.01; done; exit {max_players}`, dir}
	s, _ := newExec(t, argv, "none", func(c *Config) { c.MaxPlayers = 3 })
	events, r := watchAndCreate(t, s)
	if err := os.WriteFile(filepath.Join(dir, "exit"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ev := reapedEvent(t, events, r.ID); ev.Cause != "crashed" || ev.ExitCode != 3 || ev.Signal != "" {
		t.Fatalf("reaped %+v", ev)
	}
}

// A spawn whose deadline has passed failed for want of time, even while
// its context's timer is still to run: the instance, which has the same
// deadline, may end the call first, and gRPC then says DeadlineExceeded
// from the clock alone. A spawn ended earlier failed for its own reason.
func TestSpawnErrorReadsTheDeadlineFromTheClock(t *testing.T) {
	s := &Supervisor{ctx: context.Background(), cfg: Config{SpawnTimeout: 2 * time.Second}}
	cause := errors.New("DeadlineExceeded: stream terminated by RST_STREAM with error code: CANCEL")
	for when, want := range map[time.Duration]bool{-time.Millisecond: true, time.Minute: false} {
		err := s.spawnError(timerLate{context.Background(), time.Now().Add(when)}, cause)
		if !errors.Is(err, room.ErrSpawn) || strings.Contains(err.Error(), "not ready within 2s") != want {
			t.Errorf("deadline %v from now: %v, want ErrSpawn, timed out %v", when, err, want)
		}
	}
	// And one whose timer ran, as most do.
	ended, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ended.Done()
	if err := s.spawnError(ended, cause); !errors.Is(err, room.ErrSpawn) || !strings.Contains(err.Error(), "not ready within 2s") {
		t.Errorf("a spawn whose context ended at its deadline: %v, want ErrSpawn, timed out", err)
	}
}

// timerLate is a context whose deadline is d and whose timer has not run.
type timerLate struct {
	context.Context
	d time.Time
}

func (c timerLate) Deadline() (time.Time, bool) { return c.d, true }

func TestExecSpawnFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		argv  []string
		probe string
		says  string // in the error
	}{
		"exits at once":     {[]string{"false"}, "none", "exited with status 1 before it was ready; it printed nothing"},
		"says why it fails": {[]string{"sh", "-c", "echo no map >&2; exit 4"}, "none", `exited with status 4 before it was ready; its last lines: "no map"`},
		"never answers":     {[]string{"sleep", "60"}, "teeworlds", "not ready within"},
		"exits unanswering": {[]string{"sh", "-c", "sleep 0.1"}, "teeworlds", "exited with status 0 before it was ready"},
	} {
		t.Run(name, func(t *testing.T) {
			s, sink := newExec(t, tc.argv, tc.probe, func(c *Config) { c.SpawnTimeout = 2 * time.Second })
			_, err := s.Table().Create(context.Background(), ep("127.0.0.1:5000"))
			if !errors.Is(err, room.ErrSpawn) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("create: %v, want ErrSpawn saying %q", err, tc.says)
			}
			st := s.Stats()
			if st.SpawnFailures != 1 || st.PortsInUse != 0 || len(s.Table().List().Rooms) != 0 {
				t.Fatalf("after a failed spawn: %+v", st)
			}
			// A server that exits before it is ready is tried on three
			// ports, no more.
			if strings.Contains(tc.says, "before it was ready") {
				sink.await(t, "server not ready, trying another port", `"attempt":2`)
				if sink.has("server not ready, trying another port", `"attempt":3`) {
					t.Error("a fourth run")
				}
			}
		})
	}
}

// A command that cannot run stops the start, with the reason, instead of
// failing every CREATE.
func TestCommandCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644)
	for name, tc := range map[string]struct {
		argv []string
		says string
	}{
		"missing":        {[]string{"/nonexistent/game"}, `command "/nonexistent/game": stat /nonexistent/game: no such file or directory`},
		"not on PATH":    {[]string{"no-such-game-anywhere"}, `command "no-such-game-anywhere": not found on PATH`},
		"a directory":    {[]string{dir}, "is a directory"},
		"not executable": {[]string{plain}, "is not executable"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, probe := range []string{"", "none"} {
				first, last := portRange(2)
				cfg := DefaultConfig()
				cfg.FirstPort, cfg.LastPort, cfg.Command, cfg.Probe = first, last, tc.argv, probe
				_, err := New(cfg, zerolog.Nop())
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("probe %q: New: %v, want %q", probe, err, tc.says)
				}
			}
		})
	}
}

// A game server run without a probe does not speak the instance protocol:
// the create says so, with what the server printed.
func TestForeignServerWithoutProbe(t *testing.T) {
	s, _ := newTest(t, "", 2, func(c *Config) {
		c.Command = []string{"sh", "-c", "echo 'I engine: running on unix-linux-amd64'; sleep 60"}
	})
	_, err := s.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if !errors.Is(err, room.ErrSpawn) || !strings.Contains(err.Error(),
		`this looks like a game server that is not a Foyer instance: set probe = "teeworlds" or "none" (it printed "I engine: running on unix-linux-amd64")`) {
		t.Fatalf("create: %v", err)
	}
}

func TestExecProbeFollowsPlayers(t *testing.T) {
	// The server's own maximum (12) wins over the configured one (4).
	s, _ := newExec(t, []string{testroomBin, "tee", "{port}", "12"}, "teeworlds", nil)
	events, r := watchAndCreate(t, s)
	if r.MaxPlayers != 12 || r.Players != 0 || r.Seats != 1 || r.Name != "tee" || r.Game != "DM" || r.Map != "dm1" {
		t.Fatalf("created %+v", r)
	}
	for _, p := range []string{"127.0.0.1:5001", "127.0.0.1:5002"} {
		if _, err := s.Table().Join(context.Background(), r.ID, ep(p), room.Unproven); err != nil {
			t.Fatal(err)
		}
	}
	// Ten players arrive (their list spans several reply datagrams): the
	// three seats are taken to be three of them.
	send(t, loopback, r.Port, "players 10")
	var changed room.Room
	for changed.Players != 10 {
		if ev := nextEvent(t, events); ev.Kind == room.Changed && ev.Room.ID == r.ID {
			changed = ev.Room
		}
	}
	if changed.Seats != 0 || changed.MaxPlayers != 12 || changed.State != packet.Waiting {
		t.Fatalf("after ten players: %+v", changed)
	}
	for i, p := range []string{"127.0.0.1:5003", "127.0.0.1:5004"} {
		if j, err := s.Table().Join(context.Background(), r.ID, ep(p), room.Unproven); err != nil || j.Seats != i+1 {
			t.Fatalf("join: %+v %v", j, err)
		}
	}
	if _, err := s.Table().Join(context.Background(), r.ID, ep("127.0.0.1:5005"), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("join of a full room: %v", err)
	}
	// Players leaving turn no seat into anything.
	send(t, loopback, r.Port, "players 1")
	eventually(t, "one player", func() bool {
		got, ok := listed(s, r.ID)
		return ok && got.Players == 1 && got.Seats == 2
	})
}

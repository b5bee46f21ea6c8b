package host_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/tmptest"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/instance/keeper"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// The test binary doubles as the instance: with modeEnv set, TestMain
// becomes that process instead of running tests.
const (
	modeEnv    = "FOYER_TEST_INSTANCE_MODE"
	pidFileEnv = "FOYER_TEST_PID_FILE"
)

func TestMain(m *testing.M) {
	mode := os.Getenv(modeEnv)
	if mode == "" {
		noExitSleep()
		doneTemps := tmptest.Own()
		os.Exit(doneTemps(m.Run()))
	}
	if f := os.Getenv(pidFileEnv); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	switch mode {
	case "game":
		instance.Serve(&testGame{})
	case "keeper":
		// A keeper of a server that sleeps, as foyer-room runs one.
		k, err := keeper.New(keeper.Config{Command: []string{"sleep", "3600"}, Probe: keeper.ProbeNone}, zerolog.Nop(), io.Discard)
		if err != nil {
			os.Exit(3)
		}
		instance.Serve(k)
	case "refroom":
		// The reference room, as `foyer instance` runs it.
		instance.Serve(refroom.New(zerolog.New(os.Stderr)))
	case "bad-stderr":
		// Lines that would choke an hclog parser, before and after the
		// handshake.
		fmt.Fprintln(os.Stderr, `{"@message":123}`)
		fmt.Fprintln(os.Stderr, `{"@level":["x"],"@message":{}}`)
		fmt.Fprintln(os.Stderr, strings.Repeat("x", 100_000))
		stderr := os.Stderr // Serve replaces the variable, not the file
		go func() {
			for range 5 {
				fmt.Fprintln(stderr, `{"@message":123,"@timestamp":false}`)
				time.Sleep(10 * time.Millisecond)
			}
		}()
		instance.Serve(&testGame{})
	case "garbage-stdout":
		fmt.Println("hello, I am not a handshake")
		time.Sleep(time.Hour)
	case "foreign-handshake":
		// A well-formed handshake that points the host at a TCP address.
		fmt.Println("1|1|tcp|127.0.0.1:9|grpc|")
		time.Sleep(time.Hour)
	case "silent":
		time.Sleep(time.Hour)
	case "grandchild":
		// A child in the same group holding stdout and stderr open.
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), modeEnv+"=sleep", pidFileEnv+"="+os.Getenv("FOYER_TEST_GRANDCHILD_PID_FILE"))
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		if err := gc.Start(); err != nil {
			os.Exit(3)
		}
		instance.Serve(&testGame{})
	case "sleep":
		time.Sleep(time.Hour)
	case "plain-host":
		// A host that starts its instance without Launch, so without a
		// parent-death signal, and reports its pid once it serves.
		inst := selfCommand("game", "")
		inst.Env = append(inst.Env, instancepb.Handshake.MagicCookieKey+"="+instancepb.Handshake.MagicCookieValue)
		out, err := inst.StdoutPipe()
		if err != nil || inst.Start() != nil {
			os.Exit(3)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			os.Exit(3)
		}
		os.WriteFile(os.Getenv("FOYER_TEST_GRANDCHILD_PID_FILE"), []byte(strconv.Itoa(inst.Process.Pid)), 0o600)
		time.Sleep(time.Hour)
	case "grace-host":
		// A host whose instance is to outlive it: it launches one in
		// $FOYER_TEST_ROOM_DIR with a 1 s grace, starts it on
		// $FOYER_TEST_PORT, reports its pid, then waits to be killed.
		port, _ := strconv.Atoi(os.Getenv("FOYER_TEST_PORT"))
		p, err := host.Launch(context.Background(), host.LaunchConfig{Cmd: selfCommand("game", ""),
			Dir: os.Getenv("FOYER_TEST_ROOM_DIR"), Grace: time.Second})
		if err != nil || p.Start(context.Background(), instance.Assignment{RoomID: 7, Port: uint16(port), MaxPlayers: 2}) != nil {
			os.Exit(3)
		}
		os.WriteFile(os.Getenv("FOYER_TEST_GRANDCHILD_PID_FILE"), []byte(strconv.Itoa(p.PID())), 0o600)
		time.Sleep(time.Hour)
	case "host":
		// A host that launches one instance, reports its pid once
		// connected, then waits to be killed.
		p, err := host.Launch(context.Background(), host.LaunchConfig{Cmd: selfCommand("game", "")})
		if err != nil {
			os.Exit(3)
		}
		os.WriteFile(os.Getenv("FOYER_TEST_GRANDCHILD_PID_FILE"), []byte(strconv.Itoa(p.PID())), 0o600)
		time.Sleep(time.Hour)
	}
	os.Exit(4)
}

// testGame is driven over its UDP port by text commands: "state N",
// "join", "join N" (N players at once), "leave". It echoes every other
// datagram, so a test sees what reached the game. In server browsers it
// shows the settings room_name and player_names (comma-separated) when
// they are set.
type testGame struct {
	conn     net.PacketConn
	hangStop bool
	name     string
	players  []string
}

func (g *testGame) Start(_ context.Context, a instance.Assignment, conn net.PacketConn, r instance.Reporter) error {
	if msg := a.Settings["fail"]; msg != "" {
		return errors.New(msg)
	}
	g.conn, g.hangStop = conn, a.Settings["hang_stop"] != ""
	g.name = a.Settings["room_name"]
	if names := a.Settings["player_names"]; names != "" {
		g.players = strings.Split(names, ",")
	}
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			ip := from.(*net.UDPAddr).AddrPort().Addr()
			cmd := string(buf[:n])
			switch {
			case cmd == "join":
				r.PlayerConnected(ip)
			case strings.HasPrefix(cmd, "join "):
				n, _ := strconv.Atoi(cmd[len("join "):])
				for range n {
					r.PlayerConnected(ip)
				}
			case cmd == "leave":
				r.PlayerDisconnected(ip)
			case strings.HasPrefix(cmd, "state "):
				s, _ := strconv.Atoi(cmd[len("state "):])
				r.SetState(packet.RoomState(s))
			default:
				conn.WriteTo(buf[:n], from)
			}
		}
	}()
	return nil
}

// Describe runs on the read loop's goroutine, inside ReadFrom, so it reads
// the fields Start set without locking.
func (g *testGame) Describe(info *instance.BrowserInfo) {
	if g.name != "" {
		info.Name = g.name
	}
	info.Players = append(info.Players, g.players...)
}

func (g *testGame) Stop(context.Context) error {
	if g.hangStop {
		select {}
	}
	return g.conn.Close()
}

// selfCommand runs this test binary as an instance in mode.
func selfCommand(mode, pidFile string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), modeEnv+"="+mode)
	if pidFile != "" {
		cmd.Env = append(cmd.Env, pidFileEnv+"="+pidFile)
	}
	return cmd
}

const patience = 10 * time.Second // liveness bound, never a speed check

func launch(t *testing.T, mode string, log zerolog.Logger) *host.Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	p, err := host.Launch(ctx, host.LaunchConfig{Cmd: selfCommand(mode, ""), Log: log})
	if err != nil {
		t.Fatalf("Launch(%s): %v", mode, err)
	}
	t.Cleanup(func() { kill(t, p) })
	return p
}

// kill kills p and waits, boundedly, for it to be gone.
func kill(t *testing.T, p *host.Process) {
	t.Helper()
	p.Kill()
	select {
	case <-p.Exited():
	case <-time.After(patience):
		t.Errorf("process %d survived SIGKILL to its group", p.PID())
	}
}

func freePort(t testing.TB) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}

var loopback = netip.MustParseAddr("127.0.0.1")

func start(t *testing.T, p *host.Process, settings map[string]string) uint16 {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := p.Start(ctx, instance.Assignment{RoomID: 7, Port: port, MaxPlayers: 4, Settings: settings, Bind: loopback})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	seatLoopback(t, p)
	return port
}

// loopbackSeats is how many seats seatLoopback holds: one per socket a
// test talks to a room from.
const loopbackSeats = 32

// seatLoopback holds loopbackSeats seats in p's room for 127.0.0.1, as a
// lobby would for its JOINs, so that the room's door admits the test's
// sockets.
func seatLoopback(t testing.TB, p *host.Process) {
	t.Helper()
	seats := make([]room.Seat, loopbackSeats)
	for i := range seats {
		seats[i] = room.Seat{Player: netip.AddrPortFrom(loopback, uint16(1+i)), Expires: time.Now().Add(time.Hour)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := p.Keep(ctx, host.Kept{Listed: true, Seats: seats}); err != nil {
		t.Fatalf("Keep: %v", err)
	}
}

// next returns the next status that is not a bare heartbeat repeating
// the same state and count.
func next(t *testing.T, p *host.Process, prev host.Status) host.Status {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case s, ok := <-p.Status():
			if !ok {
				t.Fatalf("status closed after %+v", prev)
			}
			if s.Event == host.NoPlayerEvent && s.State == prev.State && s.Players == prev.Players {
				continue
			}
			return s
		case <-timeout:
			t.Fatalf("no status after %+v", prev)
		}
	}
}

func send(t *testing.T, port uint16, msgs ...string) {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range msgs {
		if _, err := c.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
}

func waitExit(t *testing.T, p *host.Process) (int, string) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(patience):
		t.Fatal("process did not exit")
	}
	return p.ExitStatus()
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	if p.PID() <= 0 {
		t.Fatalf("PID() = %d", p.PID())
	}
	first := <-p.Status()
	if first != (host.Status{State: packet.Waiting}) {
		t.Fatalf("first status %+v, want Waiting with no players", first)
	}
	port := start(t, p, nil)

	send(t, port, "join")
	s := next(t, p, first)
	want := host.Status{State: packet.Waiting, Players: 1, Event: host.PlayerConnected, IP: loopback}
	if s != want {
		t.Fatalf("after join: %+v, want %+v", s, want)
	}
	send(t, port, "state 1")
	if s = next(t, p, s); s.State != packet.Countdown || s.Players != 1 || s.Event != host.NoPlayerEvent {
		t.Fatalf("after state 1: %+v", s)
	}
	// With nothing happening, heartbeats repeat the status.
	select {
	case hb := <-p.Status():
		if hb != s {
			t.Fatalf("heartbeat %+v, want %+v", hb, s)
		}
	case <-time.After(patience):
		t.Fatal("no heartbeat")
	}
	send(t, port, "leave")
	if s = next(t, p, s); s.Event != host.PlayerDisconnected || s.Players != 0 || s.IP != loopback {
		t.Fatalf("after leave: %+v", s)
	}
	send(t, port, "state 3")
	if s = next(t, p, s); s.State != packet.Finished {
		t.Fatalf("after state 3: %+v", s)
	}
	if _, ok := <-p.Status(); ok {
		t.Fatal("status stream goes on after Finished")
	}
	if code, sig := waitExit(t, p); code != 0 || sig != "" {
		t.Fatalf("exit status %d %q, want 0", code, sig)
	}
}

func drainUntilClosed(t *testing.T, p *host.Process) host.Status {
	t.Helper()
	var last host.Status
	timeout := time.After(patience)
	for {
		select {
		case s, ok := <-p.Status():
			if !ok {
				return last
			}
			last = s
		case <-timeout:
			t.Fatal("status stream did not end")
		}
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	start(t, p, nil)
	p.Stop(patience)
	p.Stop(patience)
	if last := drainUntilClosed(t, p); last.State != packet.Finished {
		t.Fatalf("last status %+v, want Finished", last)
	}
	if code, sig := waitExit(t, p); code != 0 || sig != "" {
		t.Fatalf("exit status %d %q, want 0", code, sig)
	}
	p.Stop(time.Second)
	p.Kill()
}

// TestStopShortGrace stops a game with a 1 s grace: the final status
// reaches the host and the process exits by itself, well before the
// host's SIGKILL at the end of the grace; it does not sit out a wait for
// an acknowledgement.
func TestStopShortGrace(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	start(t, p, nil)
	p.Stop(time.Second)
	if last := drainUntilClosed(t, p); last.State != packet.Finished {
		t.Fatalf("last status %+v, want Finished", last)
	}
	if code, sig := waitExit(t, p); code != 0 || sig != "" {
		t.Fatalf("exit status %d %q, want 0", code, sig)
	}
}

func TestStopHangingGameIsKilled(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	start(t, p, map[string]string{"hang_stop": "1"})
	p.Stop(200 * time.Millisecond)
	if code, sig := waitExit(t, p); code != -1 || sig != "SIGKILL" {
		t.Fatalf("exit status %d %q, want -1 SIGKILL", code, sig)
	}
	drainUntilClosed(t, p)
}

func TestKill(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	p.Kill()
	p.Kill()
	if code, sig := waitExit(t, p); code != -1 || sig != "SIGKILL" {
		t.Fatalf("exit status %d %q, want -1 SIGKILL", code, sig)
	}
	drainUntilClosed(t, p)
	p.Kill()
	p.Stop(time.Second)
}

func TestStartPortInUse(t *testing.T) {
	t.Parallel()
	held, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := uint16(held.LocalAddr().(*net.UDPAddr).Port)

	p := launch(t, "game", zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for _, bind := range []netip.Addr{loopback, {}} {
		err = p.Start(ctx, instance.Assignment{RoomID: 1, Port: port, MaxPlayers: 2, Bind: bind})
		if !errors.Is(err, instance.ErrPortInUse) {
			t.Fatalf("Start on a held port (bind %v): %v, want ErrPortInUse", bind, err)
		}
	}
	// The instance is still fresh: another port works.
	start(t, p, nil)
}

func TestStartGameError(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := p.Start(ctx, instance.Assignment{RoomID: 1, Port: freePort(t), MaxPlayers: 2, Bind: loopback,
		Settings: map[string]string{"fail": "bad setting countdown"}})
	if err == nil || errors.Is(err, instance.ErrPortInUse) || !strings.Contains(err.Error(), "bad setting countdown") {
		t.Fatalf("Start with a failing game: %v", err)
	}
	err = p.Start(ctx, instance.Assignment{RoomID: 1, Port: 0, MaxPlayers: 2})
	if err == nil || errors.Is(err, instance.ErrPortInUse) {
		t.Fatalf("Start with port 0: %v", err)
	}
}

func TestMalformedStderrIsForwardedNotParsed(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	p := launch(t, "bad-stderr", zerolog.New(&logs).Level(zerolog.DebugLevel))
	start(t, p, nil)
	p.Stop(patience)
	if code, _ := waitExit(t, p); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	out := logs.String()
	if !strings.Contains(out, `"line":{"@message":123}`) {
		t.Fatalf("stderr line not forwarded as JSON; log:\n%.2000s", out)
	}
	for l := range strings.Lines(out) {
		if len(l) > 8192 {
			t.Fatalf("a forwarded line is %d bytes long", len(l))
		}
	}
}

func pidFile(t *testing.T) string { return t.TempDir() + "/pid" }

func readPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// waitGone waits until pid is no longer a live process (gone or a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if !proc.Alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d is still running", pid)
}

// startRecordingPID is a StartProcess hook that stores the started
// process's pid in *pid.
func startRecordingPID(pid *int) func(*exec.Cmd) error {
	return func(cmd *exec.Cmd) error {
		err := cmd.Start()
		if err == nil {
			*pid = cmd.Process.Pid
		}
		return err
	}
}

// assertReaped fails unless pid has exited and been waited for: no process
// and no zombie. A failed Launch promises this when it returns, so that a
// caller shutting down can say everything is gone.
func assertReaped(t *testing.T, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatal("the process was never started")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d not reaped when Launch returned (stat: %v)", pid, err)
	}
}

func TestLaunchFailuresKillTheProcess(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"garbage-stdout", "foreign-handshake", "silent"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var pid int
			_, err := host.Launch(context.Background(), host.LaunchConfig{
				Cmd:          selfCommand(mode, ""),
				StartTimeout: 500 * time.Millisecond,
				StartProcess: startRecordingPID(&pid),
			})
			if err == nil {
				t.Fatal("Launch succeeded")
			}
			assertReaped(t, pid)
		})
	}
}

// TestStartedThenFailedIsKilled: a StartProcess that started the process
// and then failed (a thread that could not leave the room's cgroups after
// forking into them) leaves nothing running behind the failed Launch.
func TestStartedThenFailedIsKilled(t *testing.T) {
	t.Parallel()
	var pid int
	_, err := host.Launch(context.Background(), host.LaunchConfig{
		Cmd: selfCommand("silent", ""), StartTimeout: patience,
		StartProcess: func(cmd *exec.Cmd) error {
			if err := startRecordingPID(&pid)(cmd); err != nil {
				return err
			}
			return errors.New("failed once started")
		},
	})
	if err == nil {
		t.Fatal("Launch succeeded")
	}
	assertReaped(t, pid)
}

func TestLaunchCancelled(t *testing.T) {
	t.Parallel()
	file := pidFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPID(t, file)
		cancel()
	}()
	var pid int
	_, err := host.Launch(ctx, host.LaunchConfig{
		Cmd: selfCommand("silent", file), StartTimeout: patience, StartProcess: startRecordingPID(&pid),
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Launch: %v, want context.Canceled", err)
	}
	assertReaped(t, pid)
}

// selfCommandReportingChild runs this test binary in mode, told to write
// the pid of the process it starts into a fresh file, and returns that file.
func selfCommandReportingChild(t *testing.T, mode string) (*exec.Cmd, string) {
	t.Helper()
	file := pidFile(t)
	cmd := selfCommand(mode, "")
	cmd.Env = append(cmd.Env, "FOYER_TEST_GRANDCHILD_PID_FILE="+file)
	return cmd, file
}

func TestKillTakesTheWholeGroup(t *testing.T) {
	t.Parallel()
	cmd, file := selfCommandReportingChild(t, "grandchild")
	p, err := host.Launch(context.Background(), host.LaunchConfig{Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	gc := readPID(t, file)
	kill(t, p)
	waitGone(t, gc)
	drainUntilClosed(t, p)
}

func TestInstanceDiesWithItsHost(t *testing.T) {
	t.Parallel()
	instanceDiesWithItsHost(t, "host")
}

// TestInstanceNoticesItsHostsEnd runs an instance whose host did not set
// a parent-death signal: the instance sees its parent go by itself.
func TestInstanceNoticesItsHostsEnd(t *testing.T) {
	t.Parallel()
	instanceDiesWithItsHost(t, "plain-host")
}

// instanceDiesWithItsHost starts a host in mode, which launches an
// instance, kills the host and waits for the instance to be gone. Neither
// leaves anything in the temporary directory: not the instance's socket,
// nor a directory made for it.
func instanceDiesWithItsHost(t *testing.T, mode string) {
	t.Helper()
	host, file := selfCommandReportingChild(t, mode)
	tmp := shortDir(t)
	host.Env = append(host.Env, "TMPDIR="+tmp)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	inst := readPID(t, file)
	host.Process.Kill()
	host.Wait()
	waitGone(t, inst)
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("%s left %s in the temporary directory", mode, left[0].Name())
	}
}

// TestKeeperWithoutRoomDirectoryLeavesNothing runs a keeper under a host
// that gives its room no directory: its server runs in a private
// directory the keeper makes, which goes with the server.
func TestKeeperWithoutRoomDirectoryLeavesNothing(t *testing.T) {
	t.Parallel()
	tmp := shortDir(t)
	cmd := selfCommand("keeper", "")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	p, err := host.Launch(ctx, host.LaunchConfig{Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kill(t, p) })
	if err := p.Start(ctx, instance.Assignment{RoomID: 7, Port: freePort(t), MaxPlayers: 2}); err != nil {
		t.Fatal(err)
	}
	if made, _ := os.ReadDir(tmp); len(made) != 1 || !strings.HasPrefix(made[0].Name(), "foyer-room-") {
		t.Fatalf("the keeper's server runs without a private directory: %v", made)
	}
	p.Stop(patience)
	waitExit(t, p)
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("the keeper left %s in the temporary directory", left[0].Name())
	}
}

func TestRunByHand(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), modeEnv+"=game")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("run by hand: %v, want exit status 1", err)
	}
	if !bytes.Contains(out, []byte("Foyer room")) {
		t.Fatalf("run by hand says %q", out)
	}
}

func TestStartProcessHookAndProcessGroup(t *testing.T) {
	t.Parallel()
	// A starter on one locked thread that never exits, as a supervisor
	// runs it for the parent-death signal.
	reqs := make(chan *exec.Cmd)
	errs := make(chan error)
	go func() {
		runtime.LockOSThread()
		// Exiting while locked would end the thread, and with it (by
		// their parent-death signal) every instance a parallel test
		// happened to start from this thread before it was locked.
		defer runtime.UnlockOSThread()
		for cmd := range reqs {
			errs <- cmd.Start()
		}
	}()
	defer close(reqs)
	calls := 0
	p, err := host.Launch(context.Background(), host.LaunchConfig{
		Cmd: selfCommand("game", ""),
		StartProcess: func(cmd *exec.Cmd) error {
			calls++
			reqs <- cmd
			return <-errs
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer kill(t, p)
	if calls != 1 {
		t.Fatalf("StartProcess called %d times", calls)
	}
	st, err := proc.ReadStat(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	if st.PGID != p.PID() {
		t.Fatalf("process group %d, want its own (%d)", st.PGID, p.PID())
	}
	start(t, p, nil)
}

// noExitSleep makes the instances this test binary starts exit at once.
// Built with -race, a Go program sleeps 1 s in os.Exit by default
// (GORACE atexit_sleep_ms), which would make every instance look as if it
// ignored Stop for a second; the children inherit the environment.
func noExitSleep() {
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

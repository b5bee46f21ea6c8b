package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/supervisor"
)

// keepLimit bounds every wait of the tests of rooms that outlive their
// lobby: a guard against hangs, never a speed check.
const keepLimit = 30 * time.Second

// keptLobby is a lobby with a state directory, run as a series of `foyer
// serve` processes: killed, restarted, upgraded. Every process runs the
// test's own copy of the binary, so that its rooms (`COPY instance`) are
// told from every other test's, and so that the binary on disk can be
// swapped for an upgrade.
type keptLobby struct {
	t        testing.TB
	bin      string // the copy
	config   string
	stateDir string
	lobby    netip.AddrPort
	ports    [2]int
	env      []string   // added to every process's environment
	logs     *logBuffer // every process's stderr
	readies  chan readyJSON

	mu      sync.Mutex
	pid     int               // the foyer serve that serves now; 0 when none
	readyOf map[int]readyJSON // the ready line of each process
	waits   map[int]chan error
}

// keptCreatesUnlimited are the [lobby] keys (keptSettings.lobbyKeys) that
// let a kept lobby's one network of test clients create as many rooms as
// it asks, at once, a CREATE its first request or not.
const keptCreatesUnlimited = "create_network_rate = 1000\ncreate_network_burst = 1000\nunverified_create_rate = 1000\nunverified_create_burst = 1000\n"

// keptSettings are a keptLobby's config values.
type keptSettings struct {
	grace     time.Duration
	match     time.Duration
	ports     int
	supervise string // more [supervisor] keys
	sections  string // more sections, after the rest
	lobbyKeys string // more [lobby] keys
	stateDir  string // a state directory made beforehand; by default a new one
	env       []string
}

// newKeptLobby writes the lobby's config and starts its first process.
func newKeptLobby(t testing.TB, s keptSettings) *keptLobby {
	t.Helper()
	l := &keptLobby{t: t, env: s.env, logs: &logBuffer{}, readies: make(chan readyJSON, 16),
		readyOf: map[int]readyJSON{}, waits: map[int]chan error{}}
	l.bin = copyBinaries(t, t.TempDir())
	l.stateDir = s.stateDir
	if l.stateDir == "" {
		// Short: a room's socket path must fit a unix socket address.
		dir, err := os.MkdirTemp("", "fy")
		if err != nil {
			t.Fatal(err)
		}
		l.stateDir = dir
	}
	l.lobby = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(freeUDPPort(t)))
	if s.ports == 0 {
		s.ports = 20
	}
	first := 6000 + rand.IntN(5000/s.ports)*s.ports
	l.ports = [2]int{first, first + s.ports - 1}
	l.config = filepath.Join(t.TempDir(), "config.toml")
	l.writeConfig(s)
	t.Cleanup(l.cleanup)
	l.start()
	return l
}

// writeConfig writes the config of settings s.
func (l *keptLobby) writeConfig(s keptSettings) {
	l.t.Helper()
	cfg := fmt.Sprintf(`[lobby]
listen = %q
rate = 10000
burst = 20000
create_rate = 100
create_burst = 100
%s
[supervisor]
ports = "%d-%d"
bind = "127.0.0.1"
max_instances = %d
rooms_per_network = 1000
state_dir = %q
reattach_grace = %q
spawn_timeout = "20s"
seat_ttl = "60s"
port_cooldown = "50ms"
empty_timeout = "600s"
%s
[room]
countdown = "1s"
match_duration = %q

[admin]
listen = "127.0.0.1:0"

[log]
level = "debug"
format = "json"
%s
`, l.lobby, s.lobbyKeys, l.ports[0], l.ports[1], l.ports[1]-l.ports[0]+1, l.stateDir, s.grace, s.supervise, s.match, s.sections)
	if err := os.WriteFile(l.config, []byte(cfg), 0o600); err != nil {
		l.t.Fatal(err)
	}
}

// copyBinaries copies foyer, and foyer-room beside it, into dir, and
// returns the copy of foyer.
func copyBinaries(t testing.TB, dir string) string {
	t.Helper()
	copyFile(t, filepath.Join(filepath.Dir(bin), supervisor.RoomProgram), filepath.Join(dir, supervisor.RoomProgram))
	foyer := filepath.Join(dir, "foyer")
	copyFile(t, bin, foyer)
	return foyer
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	// Beside the target and renamed over it: a running binary cannot be
	// written, but its path can take a new file.
	tmp := to + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

// start runs a new foyer serve and waits until it serves.
func (l *keptLobby) start() int {
	l.t.Helper()
	cmd := exec.Command(l.bin, "serve", "--config", l.config, "--ready-json")
	cmd.Env = append(os.Environ(), l.env...)
	outR, outW, err := os.Pipe()
	if err != nil {
		l.t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		l.t.Fatal(err)
	}
	// Files, not writers: os/exec then copies nothing, and Wait returns
	// when this process exits, whoever else (an upgrade's new process)
	// holds the pipes.
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	go func() { io.Copy(l.logs, errR) }()
	go l.readReady(outR)
	l.mu.Lock()
	l.waits[cmd.Process.Pid] = done
	l.mu.Unlock()
	return l.awaitReady(cmd.Process.Pid, done)
}

// readReady passes on the ready lines of every process writing to out.
func (l *keptLobby) readReady(out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var r readyJSON
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.PID > 0 {
			l.mu.Lock()
			l.readyOf[r.PID] = r
			l.mu.Unlock()
			l.readies <- r
		}
	}
}

// awaitReady waits for the ready line of pid, or of any process but the
// current one when pid is 0, and makes it the current one.
func (l *keptLobby) awaitReady(pid int, exited <-chan error) int {
	l.t.Helper()
	t := time.NewTimer(keepLimit)
	defer t.Stop()
	for {
		select {
		case r := <-l.readies:
			if pid != 0 && r.PID != pid || pid == 0 && r.PID == l.current() {
				continue
			}
			l.mu.Lock()
			l.pid = r.PID
			printed := len(l.readyOf)
			l.mu.Unlock()
			// Each process logs "ready" after its ready line, and the
			// log comes through a pipe of its own: wait for it, so that
			// what the process logged before it is there to read.
			for len(l.logs.lines("ready")) < printed {
				select {
				case err := <-exited:
					l.t.Fatalf("foyer serve exited as it started serving: %v\n%s", err, l.logs)
				case <-t.C:
					l.t.Fatalf("foyer serve did not log that it serves within %v\n%s", keepLimit, l.logs)
				case <-time.After(20 * time.Millisecond):
				}
			}
			return r.PID
		case err := <-exited:
			l.t.Fatalf("foyer serve exited before it served: %v\n%s", err, l.logs)
		case <-t.C:
			l.t.Fatalf("foyer serve did not serve within %v\n%s", keepLimit, l.logs)
		}
	}
}

func (l *keptLobby) current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pid
}

// ready is the ready line of the current process.
func (l *keptLobby) ready() readyJSON {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readyOf[l.pid]
}

// kill9 kills the current process with SIGKILL and waits until it is gone.
func (l *keptLobby) kill9() {
	l.t.Helper()
	pid := l.current()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		l.t.Fatal(err)
	}
	l.awaitExit(pid)
	l.mu.Lock()
	l.pid = 0
	l.mu.Unlock()
}

// awaitExit waits for process pid to exit, and returns how it did. The
// first process is this test's child; an upgrade's are the children of
// their predecessors, and this process's once those have exited (it is a
// subreaper, see TestMain).
func (l *keptLobby) awaitExit(pid int) error {
	l.t.Helper()
	l.mu.Lock()
	done, ok := l.waits[pid]
	l.mu.Unlock()
	if !ok {
		done = make(chan error, 1)
		go func() { done <- waitOrphan(pid) }()
	}
	select {
	case err := <-done:
		return err
	case <-time.After(keepLimit):
		l.t.Fatalf("foyer serve %d still running after %v\n%s", pid, keepLimit, l.logs)
		return nil
	}
}

// waitOrphan waits for pid, a child of this process by adoption, to exit
// and reaps it.
func waitOrphan(pid int) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ECHILD) { // not ours (yet): poll
			if !proc.Alive(pid) {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		if ws.Exited() && ws.ExitStatus() == 0 {
			return nil
		}
		return fmt.Errorf("foyer serve %d ended: %v", pid, ws)
	}
}

// upgrade sends SIGHUP and waits until a new process serves and the old
// one has exited 0; it returns the new process's pid.
func (l *keptLobby) upgrade() int {
	l.t.Helper()
	old := l.current()
	if err := syscall.Kill(old, syscall.SIGHUP); err != nil {
		l.t.Fatal(err)
	}
	pid := l.awaitReady(0, nil)
	if err := l.awaitExit(old); err != nil {
		l.t.Fatalf("the old foyer serve after the upgrade: %v\n%s", err, l.logs)
	}
	return pid
}

// stop sends SIGTERM to the current process, which must stop every room
// and exit 0.
func (l *keptLobby) stop() {
	l.t.Helper()
	pid := l.current()
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if err := l.awaitExit(pid); err != nil {
		l.t.Errorf("foyer serve on SIGTERM: %v\n%s", err, l.logs)
	}
	l.mu.Lock()
	l.pid = 0
	l.mu.Unlock()
}

// cleanup stops the lobby, checks that no room process (nor warden) is
// left, and removes the state directory.
func (l *keptLobby) cleanup() {
	l.stop()
	deadline := time.Now().Add(keepLimit)
	for left := l.roomProcesses(true); len(left) > 0; left = l.roomProcesses(true) {
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			l.t.Errorf("room processes %v outlived the lobby (killed now)", left)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	removeStateDoor(l.t, l.stateDir)
	os.RemoveAll(l.stateDir)
	if l.t.Failed() {
		l.t.Logf("lobby log:\n%s", l.logs)
	}
}

// rooms lists the live room processes of this lobby's binary: of
// foyer-room beside it, but the rooms' wardens.
func (l *keptLobby) rooms() []int { return l.roomProcesses(false) }

// roomProcesses lists the live processes of foyer-room beside this
// lobby's binary: the rooms', and their wardens' too if wardens.
func (l *keptLobby) roomProcesses(wardens bool) []int {
	want := filepath.Join(filepath.Dir(l.bin), supervisor.RoomProgram) + "\x00instance\x00"
	pids, _ := proc.Matching(func(_ int, cmdline []byte) bool {
		return strings.HasPrefix(string(cmdline), want) &&
			(wardens || !strings.HasPrefix(string(cmdline), want+roomuser.WardenArg+"="))
	})
	slices.Sort(pids)
	return pids
}

// adminRoom is a row of /rooms.
type adminRoom struct {
	ID      uint32 `json:"id"`
	State   string `json:"state"`
	Players int    `json:"players"`
	Seats   int    `json:"seats"`
	Port    uint16 `json:"port"`
	PID     int    `json:"pid"`
	Source  string `json:"source"`
	Adopted bool   `json:"adopted"`
	// CPUSeconds is there when the room runs in cgroups.
	CPUSeconds *float64 `json:"cpu_seconds"`
}

// adminRooms reads the current process's /rooms.
func (l *keptLobby) adminRooms() []adminRoom {
	l.t.Helper()
	r := l.ready()
	if !r.Admin.IsValid() {
		l.t.Fatal("no admin listener")
	}
	resp, err := http.Get("http://" + r.Admin.String() + "/rooms")
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	var table struct {
		Rooms []adminRoom `json:"rooms"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		l.t.Fatal(err)
	}
	return table.Rooms
}

// logged reports whether a line with message msg and every field of want
// was logged.
func (l *keptLobby) logged(msg string, want map[string]any) bool {
	return slices.ContainsFunc(l.logs.lines(msg), hasFields(want))
}

// awaitLog waits until logged(msg, want).
func (l *keptLobby) awaitLog(msg string, want map[string]any) {
	l.t.Helper()
	awaitLine(l.t, l.logs, msg, hasFields(want))
}

// hasFields accepts a log line with every field of want, compared as JSON
// values.
func hasFields(want map[string]any) func(map[string]any) bool {
	return func(m map[string]any) bool {
		for k, v := range want {
			if fmt.Sprint(m[k]) != asJSON(v) {
				return false
			}
		}
		return true
	}
}

// asJSON renders v as a value decoded from JSON renders: numbers are
// float64 there.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	var back any
	json.Unmarshal(b, &back)
	return fmt.Sprint(back)
}

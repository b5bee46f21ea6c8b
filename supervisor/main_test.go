package supervisor

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/tmptest"
	"github.com/foyerlobby/foyer/internal/udptest"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/room"
)

// testroomBin is the instance binary the tests launch, built by TestMain
// from ./internal/testroom.
var testroomBin string

// TestMain builds the test instance once, without the race detector (a
// race-enabled process starts several times slower, and the churn test
// starts a thousand), then runs the tests, and checks that they left no
// process and no cgroup behind.
func TestMain(m *testing.M) {
	doneTemps := tmptest.Own()
	dir, err := os.MkdirTemp("", "supervisor-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testroomBin = filepath.Join(dir, "testroom")
	build := exec.Command("go", "build", "-o", testroomBin, "./internal/testroom")
	// Static, like the foyer binary the Makefile builds.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test instance:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if left := leftovers(); left != "" {
		fmt.Fprintln(os.Stderr, "FAIL: left behind:", left)
		code = 1
	}
	os.Exit(doneTemps(code))
}

// nextPorts hands each test its own port range, in a window of 1000 ports
// chosen by process id (so that concurrent runs rarely meet), below both
// the default pool and Linux's ephemeral range, where client sockets land.
var nextPorts atomic.Uint32

func portRange(n int) (uint16, uint16) {
	base := 20000 + uint32(os.Getpid()%10)*1000
	first := base + (nextPorts.Add(uint32(n))-uint32(n))%1000
	return uint16(first), uint16(first) + uint16(n) - 1
}

// logSink collects a supervisor's log lines and passes them to t.Log.
type logSink struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	l.mu.Unlock()
	return len(p), nil
}

// has reports whether a line with message msg was logged with every one
// of the given substrings.
func (l *logSink) has(msg string, parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if !strings.Contains(line, `"message":"`+msg+`"`) {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// await waits until has(msg, parts...) holds: lines are written after the
// change they report is visible.
func (l *logSink) await(t testing.TB, msg string, parts ...string) {
	t.Helper()
	eventually(t, "a "+msg+" line with "+strings.Join(parts, " "), func() bool { return l.has(msg, parts...) })
}

func (l *logSink) dump() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		l.t.Log(strings.TrimSpace(line))
	}
}

// testExe is the command line of a test instance in mode.
func testExe(mode string) []string { return []string{testroomBin, mode} }

// newTest starts a supervisor of test instances in mode with short
// timeouts, adjusted by tune, and shuts it down at the end of the test,
// checking that every instance is gone.
func newTest(t testing.TB, mode string, ports int, tune func(*Config)) (*Supervisor, *logSink) {
	t.Helper()
	first, last := portRange(ports)
	sink := &logSink{t: t}
	cfg := DefaultConfig()
	cfg.FirstPort, cfg.LastPort, cfg.MaxInstances = first, last, ports
	cfg.Command, cfg.Keeper = testExe(mode), testExe("keep")
	cfg.SpawnTimeout = 10 * time.Second // generous: a loaded machine is slow, not broken
	cfg.StopGrace, cfg.PortCooldown = 3*time.Second, 50*time.Millisecond
	// The tests' players all come from loopback, a LAN party behind one
	// address: the table's own tests check its quotas.
	cfg.SeatsPerAddress, cfg.RoomsPerNetwork = 64, 1<<16
	// Most tests' rooms see no player: their creators' seats last as long
	// as the test, and the tests of seats and of abandoned rooms set it.
	cfg.SeatTTL = 10 * time.Minute
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(cfg, zerolog.New(sink).With().Timestamp().Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if n := len(s.Table().List().Rooms); n != 0 {
			t.Errorf("%d rooms listed after Shutdown", n)
		}
		if kids := childPIDs(t); len(kids) != 0 {
			t.Errorf("processes left after Shutdown: %v", kids)
		}
		if t.Failed() {
			sink.dump()
		}
	})
	return s, sink
}

// childPIDs lists the live (not zombie) children of this process.
func childPIDs(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := proc.ReadStat(pid)
		if err == nil && st.PPID == me && st.State != 'Z' {
			kids = append(kids, pid)
		}
	}
	return kids
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nextEvent returns the next event, failing after a generous bound.
func nextEvent(t testing.TB, events <-chan room.Event) room.Event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(20 * time.Second):
	}
	t.Fatal("timed out waiting for an event")
	return room.Event{}
}

// listed returns the listed row of id.
func listed(s *Supervisor, id uint32) (room.Room, bool) {
	for _, r := range s.Table().List().Rooms {
		if r.ID == id {
			return r, true
		}
	}
	return room.Room{}, false
}

// send sends one command datagram to a room from a loopback socket bound
// on from, and waits for the game's "ok". A test sends from one socket per
// IP and room, as a player would: the room's door admits it once, on the
// seat its IP holds (the creator's, or a JOIN's).
func send(t testing.TB, from netip.Addr, port uint16, cmd string) {
	t.Helper()
	if !sendFrom(t, from, port, cmd, 50) {
		t.Fatalf("no answer to %q on port %d", cmd, port)
	}
}

// sendFrom sends cmd up to tries times, 200 ms apart, until the game
// answers, and reports whether it did.
func sendFrom(t testing.TB, from netip.Addr, port uint16, cmd string, tries int) bool {
	t.Helper()
	c := peerSocket(t, from, port)
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	for range tries {
		udptest.Send(t, c, to, []byte(cmd))
		if b, err := udptest.Read(c, to, 200*time.Millisecond); err == nil && b != nil {
			return true
		}
	}
	return false
}

// peers are the sockets tests send from, one per test, IP and room port.
var peers struct {
	sync.Mutex
	m map[peerKey]*net.UDPConn
}

type peerKey struct {
	t    testing.TB
	ip   netip.Addr
	port uint16
}

// peerSocket returns the test's socket on ip for the room on port, made
// on first use and closed at the end of the test.
func peerSocket(t testing.TB, ip netip.Addr, port uint16) *net.UDPConn {
	t.Helper()
	peers.Lock()
	defer peers.Unlock()
	k := peerKey{t, ip, port}
	if c := peers.m[k]; c != nil {
		return c
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip.AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	if peers.m == nil {
		peers.m = make(map[peerKey]*net.UDPConn)
	}
	peers.m[k] = c
	t.Cleanup(func() {
		peers.Lock()
		delete(peers.m, k)
		peers.Unlock()
		c.Close()
	})
	return c
}

// ep is a client endpoint for seats.
func ep(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

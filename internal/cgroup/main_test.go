package cgroup

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
)

// helperEnv names the part a re-executed test binary plays.
const helperEnv = "FOYER_CGROUP_TEST_HELPER"

// prefix starts the name of every tree and every marker of this test
// process, fixed width so that concurrent runs never share one.
var prefix = fmt.Sprintf("8%07d", os.Getpid())

// seq numbers trees and markers.
var seq atomic.Uint32

// marker returns a fresh argument to put in the command line of a process
// a test starts, so the process can be found in /proc and checked gone.
// It is a valid number of seconds for sleep(1): about 2500 years.
func marker() string { return fmt.Sprintf("%s%04d", prefix, seq.Add(1)) }

// TestMain runs a helper when the binary is re-executed as one; else the
// tests, and then checks that they left no cgroup and no process behind.
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "hog":
		hog()
	case "subreaper":
		os.Exit(subreaperKeeper(os.Args[1], os.Args[2]))
	case "open":
		_, err := Open("foyer")
		fmt.Println(err)
		os.Exit(0)
	case "lobby":
		os.Exit(doomedLobby(os.Args[1], os.Args[2], os.Args[3]))
	case "leave":
		os.Exit(leavingKeeper(os.Args[1], os.Args[2], os.Args[3]))
	case "end":
		os.Exit(endingKeeper(os.Args[1], os.Args[2], os.Args[3]))
	}
	code := m.Run()
	if left := leftovers(); left != "" {
		fmt.Fprintln(os.Stderr, "FAIL: left behind:", left)
		code = 1
	}
	os.Exit(code)
}

// leftovers kills and names every process whose command line holds this
// run's prefix, and names every cgroup directory this run created that
// still exists.
func leftovers() string {
	var left []string
	for _, pid := range withMarker(prefix) {
		_ = unix.Kill(pid, unix.SIGKILL)
		left = append(left, "process "+strconv.Itoa(pid))
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, m := range parseMountinfo(mi) {
		_ = filepath.WalkDir(m.point, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.Contains(d.Name(), "test-"+prefix) {
				left = append(left, "cgroup "+p)
			}
			return nil
		})
	}
	return strings.Join(left, ", ")
}

// sleeping returns the processes running "sleep m".
func sleeping(m string) []int {
	var pids []int
	for _, pid := range withMarker(m) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(b) == "sleep\x00"+m+"\x00" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// withMarker returns the processes, but this one, whose command line
// contains m.
func withMarker(m string) []int {
	pids, _ := proc.Matching(func(pid int, cmdline []byte) bool {
		return pid != os.Getpid() && bytes.Contains(cmdline, []byte(m))
	})
	return pids
}

// hoard is where hog keeps what it allocates, out of the compiler's and
// the collector's reach.
var hoard [][]byte

// hog allocates and touches memory without end, keeping all of it.
func hog() {
	for {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hoard = append(hoard, b)
	}
}

// openTree opens a tree of its own for the test and, at its end, checks
// that every room in it is gone, removes it, and checks it is gone.
func openTree(t testing.TB, o options) *Tree {
	t.Helper()
	return openNamed(t, treeName(), o)
}

// treeName returns a fresh name for a tree of this test run.
func treeName() string { return fmt.Sprintf("test-%s-%d", prefix, seq.Add(1)) }

// openNamed is openTree for the tree called name.
func openNamed(t testing.TB, name string, o options) *Tree {
	t.Helper()
	tr, err := open(name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", tr)
	t.Cleanup(func() {
		if names, err := tr.List(); err != nil || len(names) > 0 {
			t.Errorf("rooms left in the tree: %v %v", names, err)
		}
		if err := tr.Remove(); err != nil {
			t.Error(err)
		}
		for _, h := range tr.hs {
			if exists(h.dir) {
				t.Errorf("%s left behind", h.dir)
			}
		}
	})
	return tr
}

// variants are the ways this host lets a tree be opened: the default, and
// the v1 paths the tests can force (ignoring the unified hierarchy, and
// the freezer) where v1 hierarchies are mounted.
func variants(t testing.TB) map[string]options {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]options{}
	var v1, freezer bool
	for _, p := range locate(parseMountinfo(mi), parseProcCgroup(pc)) {
		if p.v2 {
			out["v2"] = options{}
			continue
		}
		v1 = true
		freezer = freezer || strings.Contains(strings.Join(p.controllers, ","), ctrlFreezer)
	}
	if v1 && freezer {
		out["v1 freezer"] = options{noV2: true}
	}
	if v1 {
		out["v1 signals"] = options{noV2: true, noFreezer: true}
	}
	if len(out) == 0 {
		t.Fatal("no cgroup hierarchy on this host")
	}
	return out
}

// started is a room's first process, as a test runs it.
type started struct {
	*Room
	cmd    *exec.Cmd
	out    *bufio.Scanner // its standard output
	exited chan struct{}  // closed once it has been waited for
	err    error          // from Wait, once exited is closed
}

// startRoom creates the room name in tr with limits l and starts argv in
// it. At the test's end the room is killed, its process waited for, and
// its cgroup removed, all checked.
func startRoom(t testing.TB, tr *Tree, name string, l Limits, argv ...string) *started {
	t.Helper()
	r, err := tr.Create(name, l)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), helperEnv+"=")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, os.Stderr
	err = r.Start(cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		r.Remove()
		t.Fatal(err)
	}
	s := &started{Room: r, cmd: cmd, out: bufio.NewScanner(pr), exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Kill(ctx); err != nil {
			t.Error(err)
		}
		<-s.exited
		pr.Close()
		if err := r.Remove(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// kill kills the room, within a guard against hangs, and waits for its
// first process.
func (s *started) kill(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	<-s.exited
}

// eventually polls cond until it holds, failing the test after a
// generous guard against hangs.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noneLeft fails the test if a process with marker m is still alive.
func noneLeft(t testing.TB, m string) {
	t.Helper()
	for _, pid := range withMarker(m) {
		if proc.Alive(pid) {
			t.Errorf("process %d (%s) survived", pid, m)
		}
	}
}

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// TestStartJoinsFromTheStart: the room's process is in every one of the
// room's cgroups when it runs, and no thread of the starting process is
// left in any of them.
func TestStartJoinsFromTheStart(t *testing.T) {
	requiretest.Cgroups(t)
	for name, o := range variants(t) {
		t.Run(name, func(t *testing.T) {
			tr := openTree(t, o)
			s := startRoom(t, tr, "room", Limits{PidsMax: 4}, "sh", "-c", `cat /proc/$$/cgroup; echo end; exec sleep "$0"`, marker())
			var lines []string
			for s.out.Scan() && s.out.Text() != "end" {
				lines = append(lines, s.out.Text())
			}
			want := "/" + tr.name + "/room"
			for _, h := range tr.hs {
				if !slices.ContainsFunc(lines, func(l string) bool { return h.is(l) && strings.HasSuffix(l, want) }) {
					t.Errorf("the room's process is not in %s: its /proc/pid/cgroup is %q", h.dir, lines)
				}
			}
			tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
			for _, f := range tasks {
				if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), want+"\n") {
					t.Errorf("a thread of the test is still in the room: %s: %s", f, b)
				}
			}
			if n, err := number(s.dirs[tr.at[rolePids]] + "/pids.max"); n != 4 || err != nil {
				t.Errorf("pids.max after the start = %d, %v; want 4", n, err)
			}
		})
	}
}

// is reports whether the /proc/pid/cgroup line l is about h.
func (h hierarchy) is(l string) bool {
	if h.v2 {
		return strings.HasPrefix(l, "0::")
	}
	f := strings.SplitN(l, ":", 3)
	return len(f) == 3 && slices.Contains(strings.Split(f[1], ","), h.controllers[0])
}

// TestKillTakesEscapees is the escape of the issue: a room's server starts
// a process in a session of its own; killing the room kills it too, and
// leaves neither process nor cgroup.
func TestKillTakesEscapees(t *testing.T) {
	requiretest.Cgroups(t)
	for name, o := range variants(t) {
		t.Run(name, func(t *testing.T) {
			tr := openTree(t, o)
			leader, escapee := marker(), marker()
			s := startRoom(t, tr, "room", Limits{}, "sh", "-c", `setsid sleep "$1" & exec sleep "$0"`, leader, escapee)
			pid := s.cmd.Process.Pid
			var esc int
			eventually(t, "escaped into a session of its own", func() bool {
				pids := sleeping(escapee)
				if len(pids) != 1 {
					return false
				}
				esc = pids[0]
				sid, err := unix.Getsid(esc)
				return err == nil && sid == esc
			})
			if procs, err := s.Procs(); err != nil || !slices.Contains(procs, pid) || !slices.Contains(procs, esc) {
				t.Fatalf("room processes %v, %v; want %d and %d", procs, err, pid, esc)
			}
			s.kill(t)
			if ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("leader ended with %v, want SIGKILL", s.err)
			}
			noneLeft(t, leader)
			noneLeft(t, escapee)
			if procs, err := s.Procs(); len(procs) != 0 || err != nil {
				t.Errorf("room not empty after Kill: %v %v", procs, err)
			}
			if err := s.Remove(); err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(s.dirs, exists) {
				t.Errorf("room cgroup left after Remove: %v", s.dirs)
			}
			if err := s.Kill(context.Background()); err != nil {
				t.Errorf("Kill of a removed room: %v", err)
			}
			if err := s.Remove(); err != nil {
				t.Errorf("second Remove: %v", err)
			}
		})
	}
}

// TestMemoryMaxKillsWithOOM: a room that allocates without end is killed
// at its memory_max and its cgroup says so; the room beside it runs on.
func TestMemoryMaxKillsWithOOM(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	l := Limits{MemoryMax: 64 << 20}
	calm := startRoom(t, tr, "calm", l, "sleep", marker())
	hog := startRoom(t, tr, "hog", l, "env", helperEnv+"=hog", os.Args[0], marker())
	select {
	case <-hog.exited:
	case <-time.After(time.Minute):
		t.Fatal("the hog is still running after a minute")
	}
	if ws := hog.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("hog ended with %v, want SIGKILL", hog.err)
	}
	if n, err := hog.OOMKills(); n < 1 || err != nil {
		t.Errorf("hog OOMKills = %d, %v; want at least 1", n, err)
	}
	if n, err := calm.OOMKills(); n != 0 || err != nil {
		t.Errorf("calm OOMKills = %d, %v; want 0", n, err)
	}
	if procs, err := calm.Procs(); err != nil || !reflect.DeepEqual(procs, []int{calm.cmd.Process.Pid}) {
		t.Errorf("calm room's processes = %v, %v; want its sleep", procs, err)
	}
	select {
	case <-calm.exited:
		t.Error("the calm room ended with the hog")
	default:
	}
}

// TestPidsMaxStopsForkBomb: a fork bomb (bounded, so a failure cannot
// take the host down: 1500 processes without the limit) stops at
// pids_max, and the host can still start processes.
func TestPidsMaxStopsForkBomb(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	const max = 32
	m := marker()
	s := startRoom(t, tr, "bomb", Limits{PidsMax: max}, "sh", "-c",
		`exec 2>/dev/null; b() { [ "$1" -gt 0 ] || exec sleep "$0"; b $(($1-1)) & b $(($1-1)) & wait; }; b 9`, m)
	events := s.dirs[tr.at[rolePids]] + "/pids.events"
	eventually(t, "refusing forks", func() bool {
		n, err := field(events, "max")
		return err == nil && n > 0
	})
	for range 10 {
		if procs, err := s.Procs(); err != nil || len(procs) > max {
			t.Fatalf("%d processes in a room with pids_max %d (%v)", len(procs), max, err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("the host cannot start a process beside the bomb: %v", err)
	}
	s.kill(t)
	noneLeft(t, m)
}

// TestUsage: CPU time a room spent and memory it holds are measured.
func TestUsage(t *testing.T) {
	requiretest.Cgroups(t)
	for name, o := range variants(t) {
		t.Run(name, func(t *testing.T) {
			tr := openTree(t, o)
			s := startRoom(t, tr, "busy", Limits{}, "sh", "-c",
				`i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo done; exec sleep "$0"`, marker())
			if !s.out.Scan() {
				t.Fatal("no output from the room")
			}
			u, err := s.Usage()
			if err != nil {
				t.Fatal(err)
			}
			if !u.CPUKnown || u.CPU <= 0 {
				t.Errorf("CPU %v (known %v) after a busy loop", u.CPU, u.CPUKnown)
			}
			if !u.ResidentKnown {
				t.Fatal("resident memory not known")
			}
			// The kernel folds memory statistics in every 2 s or after
			// enough changes: the room's first pages show up within that.
			eventually(t, "resident", func() bool {
				u, err = s.Usage()
				return err == nil && u.Resident > 0
			})
			if u.Resident > 64<<20 {
				t.Errorf("resident %d bytes for a shell", u.Resident)
			}
		})
	}
}

// TestAdopt: a lobby that starts again finds its rooms' cgroups by name,
// with their processes, and can end them; a room half created by a lobby
// that died is listed and removed too.
func TestAdopt(t *testing.T) {
	requiretest.Cgroups(t)
	first := openTree(t, options{})
	r, err := first.Create("room-7", Limits{PidsMax: 8})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", marker())
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	half := filepath.Join(first.hs[len(first.hs)-1].dir, "room-8")
	if err := os.Mkdir(half, 0o755); err != nil {
		t.Fatal(err)
	}

	second, err := open(first.name, options{})
	if err != nil {
		t.Fatal(err)
	}
	if names, err := second.List(); err != nil || !reflect.DeepEqual(names, []string{"room-7", "room-8"}) {
		t.Fatalf("List = %v, %v", names, err)
	}
	if _, err := second.Create("room-7", Limits{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create of an existing room: %v, want ErrExist", err)
	}
	if _, err := second.Room("room-9"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Room of no room: %v, want ErrNotExist", err)
	}
	found, err := second.Room("room-7")
	if err != nil {
		t.Fatal(err)
	}
	if procs, err := found.Procs(); err != nil || !reflect.DeepEqual(procs, []int{cmd.Process.Pid}) {
		t.Errorf("adopted room's processes = %v, %v; want %d", procs, err, cmd.Process.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := found.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	<-exited
	for _, name := range []string{"room-7", "room-8"} {
		r, err := second.Room(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := second.List(); err != nil || len(names) != 0 {
		t.Errorf("List after removal = %v, %v", names, err)
	}
}

// TestSweep: the trees of dead lobbies go, empty rooms and half-made ones
// with them; a room that still runs keeps its dead tree, and the trees of
// live lobbies and the sweeper's own stay.
func TestSweep(t *testing.T) {
	requiretest.Cgroups(t)
	dead, busy, live, own := openTree(t, options{}), openTree(t, options{}), openTree(t, options{}), openTree(t, options{})
	for _, tr := range []*Tree{dead, busy, live, own} {
		if _, err := tr.Create("room-1", Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dead.hs[len(dead.hs)-1].dir, "room-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	running := startRoom(t, busy, "room-2", Limits{}, "sleep", marker())
	gone := own.Sweep(func(name string) bool { return name == dead.name || name == busy.name || name == own.name })
	if !reflect.DeepEqual(gone, []string{dead.name}) {
		t.Errorf("Sweep removed %v, want %v", gone, []string{dead.name})
	}
	for _, h := range dead.hs {
		if exists(h.dir) {
			t.Errorf("%s is still there", h.dir)
		}
	}
	for tr, room := range map[*Tree]string{busy: "room-2", live: "room-1", own: "room-1"} {
		if names, err := tr.List(); err != nil || !slices.Contains(names, room) {
			t.Errorf("%s after the sweep holds %v (%v), want %s among them", tr.name, names, err, room)
		}
	}
	if procs, err := running.Procs(); err != nil || len(procs) != 1 {
		t.Errorf("the running room's processes after the sweep: %v, %v", procs, err)
	}
	for _, tr := range []*Tree{live, own} {
		if r, err := tr.Room("room-1"); err != nil || r.Remove() != nil {
			t.Errorf("%s's room-1: %v", tr.name, err)
		}
	}
}

// TestStartInRemovedRoomFails: a room whose cgroup is gone starts nothing.
func TestStartInRemovedRoomFails(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	r, err := tr.Create("gone", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", marker())
	if err := r.Start(cmd); err == nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("started a process in a removed room")
	}
}

func TestCheck(t *testing.T) {
	none := &Tree{}
	for r := range nRoles {
		none.at[r], none.why[r] = -1, "no "+controller[r]+" here"
	}
	err := none.Check(Limits{MemoryMax: 256 << 20, CPUMax: 0.5, PidsMax: 64})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("Check without controllers = %v, want ErrLimit", err)
	}
	for _, want := range []string{"memory_max: limit refused: no memory here", "cpu_max: limit refused: no cpu here", "pids_max: limit refused: no pids here"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %q does not say %q", err, want)
		}
	}
	if err := none.Check(Limits{}); err != nil {
		t.Errorf("unlimited refused: %v", err)
	}

	all := &Tree{}
	for _, l := range []Limits{{MemoryMax: -1}, {MemoryMax: 1000}, {CPUMax: -1}, {CPUMax: 0.001}, {CPUMax: math.NaN()}, {CPUMax: math.Inf(1)}, {PidsMax: -1}} {
		if err := all.Check(l); !errors.Is(err, ErrLimit) {
			t.Errorf("Check(%+v) = %v, want ErrLimit", l, err)
		}
	}
	for _, l := range []Limits{{MemoryMax: 1 << 20, CPUMax: 0.01, PidsMax: 1}, {CPUMax: 3}} {
		if err := all.Check(l); err != nil {
			t.Errorf("Check(%+v) = %v", l, err)
		}
	}
}

// TestHostEnforcesLimits: every limit can be enforced on the hosts Foyer
// is tested on (root, with the memory, cpu and pids controllers).
func TestHostEnforcesLimits(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	if err := tr.Check(Limits{MemoryMax: 256 << 20, CPUMax: 0.5, PidsMax: 64}); err != nil {
		t.Fatal(err)
	}
	if s := tr.String(); strings.Contains(s, "missing") {
		t.Errorf("String says something is missing: %s", s)
	}
}

func TestNames(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	for _, name := range []string{"", "a/b", "..", "memory.max", "room 1", strings.Repeat("x", 65)} {
		if _, err := open(name, options{}); !errors.Is(err, ErrName) {
			t.Errorf("Open(%q) = %v, want ErrName", name, err)
		}
		if _, err := tr.Create(name, Limits{}); !errors.Is(err, ErrName) {
			t.Errorf("Create(%q) = %v, want ErrName", name, err)
		}
		if _, err := tr.Room(name); !errors.Is(err, ErrName) {
			t.Errorf("Room(%q) = %v, want ErrName", name, err)
		}
	}
	if err := checkName(fmt.Sprintf("room-%d_%s", 4294967295, strings.Repeat("x", 48))); err != nil {
		t.Error(err)
	}
}

// TestOpenWithoutPermission: a lobby that may not create cgroups is told
// so, and what to do about it.
func TestOpenWithoutPermission(t *testing.T) {
	requiretest.Root(t)
	// The test binary, where an unprivileged user can run it.
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "cgroup.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), helperEnv+"=open")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	msg := string(out)
	for _, want := range []string{ErrUnavailable.Error(), "permission denied", "run foyer as root", "Delegate=yes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Open as nobody says %q, nothing about %q", msg, want)
		}
	}
}

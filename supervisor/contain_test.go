package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/room"
)

// containModes are the two ways rooms run: in cgroups, and without them
// (the fallback of a host that has none).
var containModes = []struct {
	name      string
	noCgroups bool
}{{"cgroups", false}, {"fallback", true}}

// markerSeq numbers markers.
var markerSeq atomic.Uint32

// marker returns an argument, unique to this test process, to put in the
// command line of a process a test starts, so that the process can be
// found in /proc and checked gone. It is a valid number of seconds for
// sleep(1).
func marker() string { return fmt.Sprintf("9%07d%04d", os.Getpid(), markerSeq.Add(1)) }

// withMarker returns the processes, but this one, whose command line
// contains m.
func withMarker(m string) []int {
	pids, _ := proc.Matching(func(pid int, cmdline []byte) bool {
		return pid != os.Getpid() && bytes.Contains(cmdline, []byte(m))
	})
	return pids
}

// escapeCommand is the escape of the issue that brought cgroups: the
// server puts a process (sleep m) in a session of its own, then becomes
// a sleep of its own on the room's port.
func escapeCommand(m string) []string {
	return []string{"/bin/sh", "-c", "setsid sleep " + m + " & exec sleep 1000 {port}"}
}

// escaped waits for the escapee sleep m, in a session of its own.
func escaped(t *testing.T, m string) int {
	t.Helper()
	var pid int
	eventually(t, "the escapee", func() bool {
		pids := withMarker("sleep\x00" + m)
		if len(pids) != 1 {
			return false
		}
		sid, err := unix.Getsid(pids[0])
		pid = pids[0]
		return err == nil && sid == pid
	})
	return pid
}

// noneLeft fails the test if a process with marker m is alive.
func noneLeft(t *testing.T, m string) {
	t.Helper()
	if pids := withMarker(m); len(pids) > 0 {
		t.Errorf("processes %v (%s) survived their room", pids, m)
	}
}

// cgroupOf returns the paths of process pid's cgroups, one per line of
// /proc/pid/cgroup.
func cgroupOf(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			paths = append(paths, f[2])
		}
	}
	return paths
}

// TestEscapeeDiesWithItsRoom is the escape of the issue: a room's server
// puts a process in a session of its own; whether the room crashes (its
// keeper killed, so it can do nothing about it) or the supervisor shuts
// down, the escapee is dead by the time the room is reaped, and no
// cgroup of the room is left.
func TestEscapeeDiesWithItsRoom(t *testing.T) {
	for _, mode := range containModes {
		for _, end := range []string{"crash", "shutdown"} {
			t.Run(mode.name+"/"+end, func(t *testing.T) {
				if !mode.noCgroups {
					requiretest.Cgroups(t)
				}
				m := marker()
				s, _ := newExec(t, escapeCommand(m), "none", func(c *Config) { c.NoCgroups = mode.noCgroups })
				events, r := watchAndCreate(t, s)
				escaped(t, m)
				name := cgroupName(r.ID)
				if mode.noCgroups != (s.tree == nil) {
					t.Fatalf("cgroups off %v, tree %v", mode.noCgroups, s.tree)
				}
				if s.tree != nil {
					want := "/" + s.tree.Name() + "/" + name
					for _, p := range cgroupOf(t, r.PID) {
						if !strings.HasSuffix(p, want) && p != "/" {
							t.Errorf("the room's keeper is in %s, not in its room's cgroup %s", p, want)
						}
					}
				}
				switch end {
				case "crash":
					signal(t, r.PID, syscall.SIGKILL)
					if ev := reapedEvent(t, events, r.ID); ev.Cause != room.Crashed {
						t.Errorf("reaped as %q", ev.Cause)
					}
				case "shutdown":
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := s.Shutdown(ctx); err != nil {
						t.Fatal(err)
					}
				}
				noneLeft(t, m)
				if s.tree != nil {
					if _, err := s.tree.Room(name); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("the room's cgroup outlived it: %v", err)
					}
				}
			})
		}
	}
}

// TestUsageOfRooms: the CPU time and resident memory of a listed room's
// processes are known with cgroups, and not claimed without.
func TestUsageOfRooms(t *testing.T) {
	for _, mode := range containModes {
		t.Run(mode.name, func(t *testing.T) {
			if !mode.noCgroups {
				requiretest.Cgroups(t)
			}
			s, _ := newExec(t, []string{testroomBin, "tee", "{port}", "4"}, "teeworlds", func(c *Config) { c.NoCgroups = mode.noCgroups })
			_, r := watchAndCreate(t, s)
			if mode.noCgroups {
				if u := s.Usage(); u != nil {
					t.Errorf("usage without cgroups: %v", u)
				}
				return
			}
			var u cgroup.Usage
			eventually(t, "the room's usage", func() bool {
				u = s.Usage()[r.ID]
				return u.CPUKnown && u.CPU > 0 && u.ResidentKnown && u.Resident > 0
			})
			if u.Resident > 256<<20 {
				t.Errorf("a keeper and a tee server hold %d bytes", u.Resident)
			}
		})
	}
}

// TestMemoryMaxReapsWithOOM: a room that allocates without end is killed
// at its memory_max, reaped with the cause "oom", counted and logged
// with its limit, while the room beside it keeps answering.
func TestMemoryMaxReapsWithOOM(t *testing.T) {
	requiretest.Cgroups(t)
	flag := filepath.Join(t.TempDir(), "hog")
	// The hog answers the probe (it is ready), then its shell allocates
	// without end; once the OOM killer took that, the server exits.
	script := fmt.Sprintf(`if [ -e %s ]; then %s tee {port} 4 & sleep 0.3; tail /dev/zero; kill $!; exit 1; fi; exec %s tee {port} 4`,
		flag, testroomBin, testroomBin)
	const max = 64 << 20
	s, sink := newExec(t, []string{"/bin/sh", "-c", script}, "teeworlds", func(c *Config) { c.Limits.MemoryMax = max })
	events, calm := watchAndCreate(t, s)
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hog, err := s.Table().Create(context.Background(), ep("127.0.0.1:5002"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := reapedEvent(t, events, hog.ID); ev.Cause != room.OOM {
		t.Errorf("the hog was reaped as %q, want oom", ev.Cause)
	}
	sink.await(t, "room killed by the OOM killer at its memory_max", fmt.Sprintf(`"id":%d`, hog.ID), fmt.Sprintf(`"memory_max":%d`, max))
	if n := s.Stats().Reaped[room.OOM]; n != 1 {
		t.Errorf("%d rooms reaped as oom", n)
	}
	if in := askInfoAt(t, netip.AddrPortFrom(loopback, calm.Port)); in.Name != "tee" {
		t.Errorf("the calm room answers %+v", in)
	}
	if _, ok := listed(s, calm.ID); !ok {
		t.Error("the calm room is gone")
	}
}

// TestPidsMaxStopsForkBomb: a fork bomb in a room (bounded, so that a
// failure cannot take the host down: a thousand processes without the
// limit) stops at pids_max: the kernel refuses its forks once the room
// holds that many, another room still starts, and stopping the room ends
// them all. The bomb goes off once the room is up: its keeper's threads
// count against the limit too, and a keeper that cannot start one dies.
func TestPidsMaxStopsForkBomb(t *testing.T) {
	requiretest.Cgroups(t)
	const limit = 48
	m := marker()
	bomb := fmt.Sprintf(`exec 2>/dev/null; b() { [ "$1" -gt 0 ] || exec sleep %[1]s; b $(($1-1)) & b $(($1-1)) & exec sleep %[1]s; }; (sleep 0.5; b 9) & exec sleep 1000 {port}`, m)
	s, _ := newExec(t, []string{"/bin/sh", "-c", bomb}, "none", func(c *Config) { c.Limits.PidsMax = limit })
	_, r := watchAndCreate(t, s)
	current, events := pidsFile(t, r.PID, "pids.current"), pidsFile(t, r.PID, "pids.events")
	eventually(t, "a fork refused at pids_max", func() bool {
		b, err := os.ReadFile(events)
		return err == nil && strings.HasPrefix(string(b), "max ") && string(b) != "max 0\n"
	})
	for range 10 {
		b, err := os.ReadFile(current)
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || n > limit {
			t.Fatalf("pids.current %q (%v) in a room with pids_max %d", b, err, limit)
		}
		if n := len(withMarker(m)); n > limit {
			t.Fatalf("%d processes of the bomb in a room with pids_max %d", n, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.Table().Create(context.Background(), ep("127.0.0.1:5002")); err != nil {
		t.Errorf("another room cannot start beside the bomb: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	noneLeft(t, m)
}

// pidsFile is the path of file in the cgroup of process pid that the
// pids controller counts in (v1 or v2).
func pidsFile(t *testing.T, pid int, file string) string {
	t.Helper()
	v1, v2 := cgroupMounts()
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		f := strings.SplitN(line, ":", 3)
		switch {
		case len(f) != 3:
		case v1["pids"] != "" && slices.Contains(strings.Split(f[1], ","), "pids"):
			dir = filepath.Join(v1["pids"], f[2])
		case v1["pids"] == "" && f[0] == "0":
			dir = filepath.Join(v2, f[2])
		}
	}
	if dir == "" {
		t.Fatalf("no pids cgroup for process %d", pid)
	}
	return filepath.Join(dir, file)
}

// cgroupMounts returns where the cgroup hierarchies are mounted: the v1
// ones by controller, and the unified one.
func cgroupMounts() (v1 map[string]string, v2 string) {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	v1 = map[string]string{}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		switch f[sep+1] {
		case "cgroup":
			for _, o := range strings.Split(f[sep+3], ",") {
				v1[o] = f[4]
			}
		case "cgroup2":
			v2 = f[4]
		}
	}
	return v1, v2
}

// leftovers kills and names every process of this test process's
// markers, and names every cgroup subtree of this process's supervisors
// that is left.
func leftovers() string {
	var left []string
	for _, pid := range withMarker(fmt.Sprintf("9%07d", os.Getpid())) {
		_ = unix.Kill(pid, unix.SIGKILL)
		left = append(left, "process "+strconv.Itoa(pid))
	}
	v1, v2 := cgroupMounts()
	mounts := []string{v2}
	for _, m := range v1 {
		if !slices.Contains(mounts, m) {
			mounts = append(mounts, m)
		}
	}
	ours := fmt.Sprintf("foyer-%d-", os.Getpid())
	for _, m := range mounts {
		if m == "" {
			continue
		}
		_ = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ours) {
				left = append(left, "cgroup "+p)
			}
			return nil
		})
	}
	return strings.Join(left, ", ")
}

// TestCgroupsOfDeadLobbiesRemoved: a lobby without a state directory that
// was killed while it made a room left that room's cgroups, empty; the
// next lobby removes them, and leaves those of a lobby that runs.
func TestCgroupsOfDeadLobbiesRemoved(t *testing.T) {
	requiretest.Cgroups(t)
	dead := fmt.Sprintf("foyer-%d-1", os.Getpid()+1<<22) // above pid_max: no process has it
	alive := fmt.Sprintf("foyer-%d-%d", os.Getpid(), 1<<20)
	trees := map[string]*cgroup.Tree{}
	for _, name := range []string{dead, alive} {
		tr, err := cgroup.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Create("room-5", cgroup.Limits{}); err != nil {
			t.Fatal(err)
		}
		trees[name] = tr
	}
	t.Cleanup(func() {
		for _, tr := range trees {
			if r, err := tr.Room("room-5"); err == nil {
				r.Remove()
			}
		}
	})
	_, sink := newTest(t, "game", 1, nil)
	if !sink.has("cgroups of lobbies that died removed", dead) {
		t.Errorf("no line says %s was removed", dead)
	}
	if _, err := trees[dead].Room("room-5"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead lobby's room: %v, want gone", err)
	}
	if _, err := trees[alive].Room("room-5"); err != nil {
		t.Errorf("the running lobby's room: %v, want kept", err)
	}
}

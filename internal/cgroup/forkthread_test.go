package cgroup

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
)

// TestForkThreadNeverStaysInARoom: the fork thread that could not leave a
// room's v1 cgroups after forking into them starts nothing more until it
// is back in the lobby's own, and then every child is born where it
// belongs: a plain child in the lobby's cgroups, the next room's process
// in that room's, neither in the first room's. The room is killed
// meanwhile all the same: the thread is not one of its processes.
func TestForkThreadNeverStaysInARoom(t *testing.T) {
	requiretest.Cgroups(t)
	for name, o := range variants(t) {
		t.Run(name, func(t *testing.T) {
			tr := openTree(t, o)
			v1 := slices.IndexFunc(tr.hs, func(h hierarchy) bool { return !h.v2 })
			if v1 < 0 {
				t.Log("no v1 hierarchy: no thread ever joins a room")
				return
			}
			first := "/" + tr.name + "/a\n"
			a := createRoom(t, tr, "a")
			home := tr.hs[v1].base
			t.Cleanup(func() {
				tr.hs[v1].base = home
				_ = proc.OnForkThread(func() error { return nil }) // mends the thread, if need be
			})
			tr.hs[v1].base = home + "/gone" // the way back fails
			pa, err := forkInto(a, marker())
			if err == nil {
				t.Fatal("Start succeeded though the thread could not leave the room")
			}
			if pa == nil {
				t.Fatalf("the room's process did not start: %v", err)
			}
			killRoom(t, a, pa) // the thread left in it is not the room's

			// Stuck in the room, the thread forks nothing.
			if p, err := forkInto(nil, marker()); err == nil {
				t.Errorf("a child was forked while the fork thread was stuck in room a; its cgroups: %s", cgroupsOf(p.Process.Pid))
				killPlain(p)
			}

			tr.hs[v1].base = home
			p, err := forkInto(nil, marker())
			if err != nil {
				t.Fatalf("no child forked once the thread could go back: %v", err)
			}
			if cg := cgroupsOf(p.Process.Pid); strings.Contains(cg, first) {
				t.Errorf("a plain child was born in room a: %s", cg)
			}
			killPlain(p)

			b := createRoom(t, tr, "b")
			pb, err := forkInto(b, marker())
			if err != nil {
				t.Fatal(err)
			}
			cg := cgroupsOf(pb.Process.Pid)
			if strings.Contains(cg, first) || !strings.Contains(cg, "/"+tr.name+"/b\n") {
				t.Errorf("room b's process is not in room b alone: %s", cg)
			}
			killRoom(t, b, pb)
		})
	}
}

// TestOpenWhileTheFirstThreadIsInARoom: a tree opened while the process's
// first thread is in a room's v1 cgroups (the fork thread may be that
// thread, forking into a room) is made in the lobby's own cgroups, not
// inside the room's, where every room of that tree would be nested.
func TestOpenWhileTheFirstThreadIsInARoom(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	a := createRoom(t, tr, "a")
	pid := strconv.Itoa(os.Getpid())
	moved := 0
	for i, h := range tr.hs {
		if h.v2 {
			continue
		}
		if err := write(a.dirs[i]+"/tasks", pid); err != nil {
			t.Fatal(err)
		}
		moved++
		defer func() {
			if err := write(h.base+"/tasks", pid); err != nil {
				t.Error(err)
			}
		}()
	}
	if moved == 0 {
		t.Log("no v1 hierarchy: no thread ever joins a room")
		return
	}
	var nested *Tree
	var err error
	offFirstThread(func() { nested, err = open(treeName(), options{}) })
	if err != nil {
		t.Fatal(err)
	}
	c, err := nested.Create("c", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range nested.hs {
		if strings.Contains(h.dir, "/"+tr.name+"/a/") {
			t.Errorf("tree opened inside room a: %s", h.dir)
		}
	}
	if err := c.Remove(); err != nil {
		t.Error(err)
	}
	if err := nested.Remove(); err != nil {
		t.Error(err)
	}
}

// offFirstThread runs f on a thread that is not the process's first.
func offFirstThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if unix.Gettid() != os.Getpid() {
			f()
			return
		}
		// This goroutine holds the first thread: another runs elsewhere.
		inner := make(chan struct{})
		go func() {
			defer close(inner)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			f()
		}()
		<-inner
	}()
	<-done
}

// createRoom creates the room name in tr, removed at the test's end.
func createRoom(t *testing.T, tr *Tree, name string) *Room {
	t.Helper()
	r, err := tr.Create(name, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Remove(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// forkInto starts "sleep m" on the fork thread, in r (nil: a plain
// child). The process is returned whenever it started.
func forkInto(r *Room, m string) (*exec.Cmd, error) {
	cmd := exec.Command("sleep", m)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := cmd.Start
	if r != nil {
		start = func() error { return r.Start(cmd) }
	}
	err := proc.OnForkThread(start)
	if cmd.Process == nil {
		return nil, err
	}
	return cmd, err
}

// killRoom kills the room r and waits for its first process p.
func killRoom(t *testing.T, r *Room, p *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Kill(ctx); err != nil {
		t.Error(err)
	}
	_ = p.Wait()
}

// killPlain kills p and waits for it.
func killPlain(p *exec.Cmd) {
	_ = p.Process.Kill()
	_ = p.Wait()
}

// cgroupsOf is /proc/pid/cgroup.
func cgroupsOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return string(b)
}

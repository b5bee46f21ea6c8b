package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// TestEndFromInside: a room's first process whose lobby is gone for good
// ends its room itself: the escapee of its server (in a session of its
// own, and no descendant of it once the server is gone) is killed, the
// room's cgroups are removed, and with them the tree's, whose last room
// it was.
func TestEndFromInside(t *testing.T) {
	requiretest.Cgroups(t)
	keeperEndsRoom(t, "end", "ended", true)
}

// endingKeeper is a room's first process whose lobby is gone: it runs a
// server whose escapee leaves its descendants (the server exits), ends
// the room and says "ended".
func endingKeeper(tree, room, m string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "ending keeper:", err)
		return 1
	}
	if err := exec.Command("sh", "-c", `setsid sleep "$0" >/dev/null 2>&1 &`, m).Run(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if await(ctx, func() int { return len(sleeping(m)) }) == 0 {
		return fail(errors.New("no escapee"))
	}
	if err := End(ctx, tree, room); err != nil {
		return fail(err)
	}
	fmt.Println("ended")
	return 0
}

// TestEndOutsideARoom: a process in no room kills nothing.
func TestEndOutsideARoom(t *testing.T) {
	cmd := exec.Command("sleep", marker())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := End(ctx, treeName(), "room"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("End outside a room killed a process: %v", err)
	}
}

// TestKillCarrying: without cgroups, the processes of a room are found by
// the room's directory in their environment, wherever their parents left
// them, with their descendants that cleared it; a process with another
// room's directory lives on.
func TestKillCarrying(t *testing.T) {
	env, other := "FOYER_TEST_ROOM="+marker(), "FOYER_TEST_ROOM="+marker()
	leader, escapee, cleared, bystander := marker(), marker(), marker(), marker()
	cmd := exec.Command("sh", "-c", `setsid sleep "$1" & setsid env -i sh -c 'sleep "$0"; :' "$2" & exec sleep "$0"`, leader, escapee, cleared)
	cmd.Env = append(os.Environ(), env)
	calm := exec.Command("sleep", bystander)
	calm.Env = append(os.Environ(), other)
	for _, c := range []*exec.Cmd{cmd, calm} {
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		calm.Process.Kill()
		calm.Wait()
	}()
	eventually(t, "escaped", func() bool { return len(sleeping(escapee)) == 1 && len(withMarker(cleared)) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := KillCarrying(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if n < 4 {
		t.Errorf("KillCarrying killed %d processes, want the leader, the escapee and the cleared shell and its sleep", n)
	}
	for _, m := range []string{leader, escapee, cleared} {
		noneLeft(t, m)
	}
	if len(sleeping(bystander)) != 1 {
		t.Error("the process of another room was killed")
	}
}

// TestTreeLivesWithItsRooms: the tree's directories exist only while they
// hold rooms, so a lobby killed while idle leaves no cgroup; rooms made
// and removed at once by many goroutines all get their cgroups, and a
// tree removed by someone else is made again.
func TestTreeLivesWithItsRooms(t *testing.T) {
	requiretest.Cgroups(t)
	tr := openTree(t, options{})
	gone := func() bool {
		for _, h := range tr.hs {
			if exists(h.dir) {
				return false
			}
		}
		return true
	}
	if !gone() {
		t.Fatal("an idle tree holds directories")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				r, err := tr.Create(fmt.Sprintf("room-%d-%d", g, i), Limits{PidsMax: 8})
				if err == nil {
					err = r.Remove()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !gone() {
		t.Error("the tree outlived its rooms")
	}
	r, err := tr.Create("room", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(); err != nil {
		t.Fatal(err)
	}
}

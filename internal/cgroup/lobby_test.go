package cgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// TestDeadLobbysRoomsAreEnded: a lobby killed with SIGKILL leaves its
// room's escapee running in the room's cgroup; the next lobby finds the
// room by name and ends it, leaving no process and no cgroup.
func TestDeadLobbysRoomsAreEnded(t *testing.T) {
	requiretest.Cgroups(t)
	name, leader, escapee := treeName(), marker(), marker()
	lobby := exec.Command(os.Args[0], name, leader, escapee)
	lobby.Env = append(os.Environ(), helperEnv+"=lobby")
	lobby.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	lobby.Stderr = os.Stderr
	out, err := lobby.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lobby.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		lobby.Process.Kill()
		lobby.Wait()
		t.Fatalf("lobby said %q, %v", line, err)
	}
	lobby.Process.Kill()
	lobby.Wait()
	eventually(t, "the room's server gone with its lobby", func() bool { return len(sleeping(leader)) == 0 })
	if len(sleeping(escapee)) != 1 {
		t.Fatal("the escapee did not outlive the lobby: the test shows nothing")
	}

	tr := openNamed(t, name, options{})
	if names, err := tr.List(); err != nil || !reflect.DeepEqual(names, []string{"room-1"}) {
		t.Fatalf("the next lobby finds %v, %v", names, err)
	}
	r, err := tr.Room("room-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(); err != nil {
		t.Fatal(err)
	}
	noneLeft(t, escapee)
}

// doomedLobby opens the tree, starts a room whose server puts a process in
// a session of its own, says "ready" and waits to be killed.
func doomedLobby(tree, leader, escapee string) int {
	tr, err := Open(tree)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := tr.Create("room-1", Limits{PidsMax: 16})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("sh", "-c", `setsid sleep "$1" & exec sleep "$0"`, leader, escapee)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.Start(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if await(ctx, func() int { return len(sleeping(escapee)) }) == 0 {
		fmt.Fprintln(os.Stderr, "no escapee")
		return 1
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	return 1
}

// TestKeeperLeaves: a keeper whose lobby is gone for good kills its room
// and removes the room's cgroups itself before it exits.
func TestKeeperLeaves(t *testing.T) {
	requiretest.Cgroups(t)
	keeperEndsRoom(t, "leave", "left", false)
}

// keeperEndsRoom starts, in every variant of the tree, a room whose
// keeper is the helper named mode; the keeper must say says and exit
// cleanly, the room's cgroups must be gone and so must its escapee.
// With treeGone the tree's own cgroups must be gone too: the room was
// its last.
func keeperEndsRoom(t *testing.T, mode, says string, treeGone bool) {
	for name, o := range variants(t) {
		t.Run(name, func(t *testing.T) {
			tr := openTree(t, o)
			m := marker()
			s := startRoom(t, tr, "room", Limits{PidsMax: 16}, "env", helperEnv+"="+mode, os.Args[0], tr.name, "room", m)
			if !s.out.Scan() || s.out.Text() != says {
				t.Fatalf("keeper said %q", s.out.Text())
			}
			<-s.exited
			if s.err != nil {
				t.Fatalf("keeper: %v", s.err)
			}
			if _, err := tr.Room("room"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the room's cgroup is still there: %v", err)
			}
			for _, h := range tr.hs {
				if treeGone && exists(h.dir) {
					t.Errorf("the tree's %s is still there", h.dir)
				}
			}
			noneLeft(t, m)
		})
	}
}

// leavingKeeper is a room's keeper whose lobby is gone: it runs a server
// that leaves an escapee, kills them all, reaps them, leaves the room
// and says "left".
func leavingKeeper(tree, room, m string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "leaving keeper:", err)
		return 1
	}
	if err := SetSubreaper(); err != nil {
		return fail(err)
	}
	cmd := exec.Command("sh", "-c", `setsid sleep "$0" & wait`, m)
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if await(ctx, func() int { return len(sleeping(m)) }) == 0 {
		return fail(errors.New("no escapee"))
	}
	if err := KillDescendants(ctx, os.Getpid()); err != nil {
		return fail(err)
	}
	cmd.Wait()
	ReapAdopted(func(int) bool { return false })
	if err := Leave(tree, room); err != nil {
		return fail(err)
	}
	fmt.Println("left")
	return 0
}

package cgroup

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
)

// TestKillDescendantsTakesEscapees: without cgroups, a room's server that
// put a process in a session of its own still has it among its
// descendants, and KillDescendants kills it.
func TestKillDescendantsTakesEscapees(t *testing.T) {
	leader, escapee := marker(), marker()
	cmd := exec.Command("sh", "-c", `setsid sleep "$1" & exec sleep "$0"`, leader, escapee)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	eventually(t, "escaped", func() bool { return len(sleeping(escapee)) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := KillDescendants(ctx, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	noneLeft(t, escapee)
	if !proc.Alive(cmd.Process.Pid) {
		t.Error("KillDescendants killed the process itself")
	}
}

// TestSubreaperTakesOrphans is the fallback end to end, in a keeper of
// its own (this binary as subreaperKeeper): the escapee outlives the
// room's server, comes back to the keeper as its child, and is killed and
// reaped; nothing is left.
func TestSubreaperTakesOrphans(t *testing.T) {
	leader, escapee := marker(), marker()
	keeper := exec.Command(os.Args[0], leader, escapee)
	keeper.Env = append(os.Environ(), helperEnv+"=subreaper")
	keeper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	keeper.Stderr = os.Stderr
	out, err := keeper.Output()
	if err != nil {
		t.Fatalf("keeper: %v; it said %q", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "adopted ") || lines[1] != "reaped 1" {
		t.Errorf("keeper said %q", out)
	}
	noneLeft(t, leader)
	noneLeft(t, escapee)
}

// subreaperKeeper is a room's keeper without cgroups: a subreaper whose
// server leaves an escapee and dies. It prints "adopted PID" once the
// escapee is its child, then "reaped N" after killing its descendants,
// and returns the exit code.
func subreaperKeeper(leader, escapee string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "subreaper keeper: "+format+"\n", args...)
		return 1
	}
	if err := SetSubreaper(); err != nil {
		return fail("%v", err)
	}
	cmd := exec.Command("sh", "-c", `setsid sleep "$1" & exec sleep "$0"`, leader, escapee)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	self := os.Getpid()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	esc := await(ctx, func() int {
		pids := sleeping(escapee)
		if len(pids) != 1 {
			return 0
		}
		return pids[0]
	})
	if esc == 0 {
		return fail("no escapee")
	}
	// The server ends; its escapee is orphaned and comes here, not to init.
	cmd.Process.Kill()
	cmd.Wait()
	if await(ctx, func() int {
		if st, err := proc.ReadStat(esc); err == nil && st.PPID == self {
			return 1
		}
		return 0
	}) == 0 {
		return fail("escapee %d not adopted", esc)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintln(w, "adopted", esc)
	if err := KillDescendants(ctx, self); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintln(w, "reaped", ReapAdopted(func(int) bool { return false }))
	procs, err := processes()
	if err != nil {
		return fail("%v", err)
	}
	if left := descendants(procs, self); len(left) != 0 {
		return fail("descendants left: %v", left)
	}
	return 0
}

// await polls f until it returns non-zero, or returns 0 when ctx ends.
func await(ctx context.Context, f func() int) int {
	for {
		if v := f(); v != 0 {
			return v
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(5 * time.Millisecond):
		}
	}
}

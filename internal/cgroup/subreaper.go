package cgroup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
)

// SetSubreaper makes this process the child subreaper of its descendants
// (PR_SET_CHILD_SUBREAPER): a descendant whose parent exits is reparented
// here instead of to init, so that nothing a room started leaves this
// process's tree of descendants, whatever it does with sessions and
// process groups. It is the fallback where cgroups are unavailable: for
// the lobby, and for a room's keeper, which makes its room's escapees its
// own children. The orphans then become this process's to reap; see
// ReapAdopted.
func SetSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cgroup: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// KillDescendants kills every descendant of the process pid (not pid
// itself), found through the parent links in /proc, and returns once none
// of them is alive (or with ctx's error). It first stops them all with
// SIGSTOP, looking again until every descendant is stopped, so that none
// can fork a child that is missed; then it sends SIGKILL to all. Each
// process is pinned by a pidfd and checked to be the one seen (by its
// start time), so no unrelated process that reused an id is signalled.
//
// Without cgroups this is how a room is killed whole, under a limit: a
// process that leaves pid's descendants is out of reach. That cannot
// happen when pid is a subreaper (SetSubreaper) or this process with pid
// among its descendants: an orphan is reparented to pid, or here. It can
// when a descendant exits and its children go to init, so the room's
// keeper, not only the lobby, should be a subreaper. A process may also
// resume a stopped sibling (SIGCONT) meanwhile, which is why stopping is
// checked, not assumed.
func KillDescendants(ctx context.Context, pid int) error {
	_, err := killAll(ctx, fmt.Sprintf("the descendants of %d", pid), func(procs map[int]proc.Stat) []int {
		return descendants(procs, pid)
	})
	return err
}

// KillCarrying kills, as KillDescendants does, every process whose
// environment holds env (NAME=VALUE, exactly) and every descendant of
// one, wherever they were reparented, and reaps those that are children
// of this process. It is how a lobby without cgroups ends what is left of
// a room whose first process is gone: every process of the room inherited
// the room's own directory in its environment, and those whose parents
// died came back to the lobby (SetSubreaper), or went to init. A process
// that cleared its environment is found only as the descendant of one
// that did not. It returns how many processes it killed.
func KillCarrying(ctx context.Context, env string) (int, error) {
	want := []byte(env + "\x00")
	killed, err := killAll(ctx, "the processes of "+env, func(procs map[int]proc.Stat) []int {
		var roots []int
		for pid := range procs {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil && carries(b, want) {
				roots = append(roots, pid)
			}
		}
		out := roots
		for _, r := range roots {
			out = append(out, descendants(procs, r)...)
		}
		return out
	})
	// Once they are all dead, every orphan among them has been
	// reparented: those that came here are this process's to reap.
	self := os.Getpid()
	for _, h := range killed {
		if st, err := proc.ReadStat(h.pid); err == nil && st.StartTicks == h.start && st.PPID == self {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(h.pid, &ws, unix.WNOHANG, nil)
		}
	}
	return len(killed), err
}

// carries reports whether the environment block b (NAME=VALUE entries,
// each ended by a zero byte) holds the entry want, zero byte included.
func carries(b, want []byte) bool {
	return bytes.HasPrefix(b, want) || bytes.Contains(b, append([]byte{0}, want...))
}

// killAll stops, then kills, the processes pick chooses from the table of
// every process (picked again each round, until all of them are stopped),
// as KillDescendants says, and returns them once none is alive. what names
// them in errors.
func killAll(ctx context.Context, what string, pick func(map[int]proc.Stat) []int) ([]heldProc, error) {
	held := map[int]heldProc{}
	defer func() {
		for _, h := range held {
			h.close()
		}
	}()
	// Processes this one may not signal (a room's warden, seen from the
	// room) are beyond reach: left alone, and not waited for.
	beyond := map[int]uint64{}
	var b backoff
	for {
		procs, err := processes()
		if err != nil {
			return nil, err
		}
		settled := true
		for _, d := range pick(procs) {
			st := procs[d]
			if start, ok := beyond[d]; ok && start == st.StartTicks {
				continue
			}
			h, ok := held[d]
			if ok && h.start != st.StartTicks { // exited, and its id reused
				h.close()
				delete(held, d)
				ok = false
			}
			if !ok {
				if h, ok = hold(d, st); !ok {
					continue
				}
				held[d] = h
			}
			if !halted(st.State) {
				if beyondReach(h.signal(unix.SIGSTOP)) {
					beyond[d] = st.StartTicks
					h.close()
					delete(held, d)
					continue
				}
				settled = false
			}
		}
		if settled {
			break
		}
		if err := b.wait(ctx); err != nil {
			return nil, fmt.Errorf("cgroup: stopping %s: %w", what, err)
		}
	}
	out := make([]heldProc, 0, len(held))
	for _, h := range held {
		h.signal(unix.SIGKILL)
		out = append(out, h)
	}
	for {
		alive := 0
		for _, h := range out {
			if st, err := proc.ReadStat(h.pid); err == nil && st.StartTicks == h.start && st.State != 'Z' && st.State != 'X' {
				alive++
			}
		}
		if alive == 0 {
			return out, nil
		}
		if err := b.wait(ctx); err != nil {
			return out, fmt.Errorf("cgroup: killing %s: %d alive: %w", what, alive, err)
		}
	}
}

// heldProc is a process pinned by killAll, with the start time that
// identifies it.
type heldProc struct {
	pinned
	start uint64
}

// hold pins pid and checks it is still the process st was read from;
// false if it is gone or another.
func hold(pid int, st proc.Stat) (heldProc, bool) {
	p, ok := pin(pid)
	if !ok {
		return heldProc{}, false
	}
	if now, err := proc.ReadStat(pid); err != nil || now.StartTicks != st.StartTicks {
		p.close()
		return heldProc{}, false
	}
	return heldProc{p, st.StartTicks}, true
}

// halted reports whether a process in state st cannot fork: stopped,
// traced, or exited.
func halted(st byte) bool {
	switch st {
	case 'T', 't', 'Z', 'X', 'x':
		return true
	}
	return false
}

// processes reads the stat of every process in /proc. One that exits
// meanwhile is left out.
func processes() (map[int]proc.Stat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	procs := make(map[int]proc.Stat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := proc.ReadStat(pid); err == nil {
			procs[pid] = st
		}
	}
	return procs, nil
}

// descendants returns the descendants of root in procs.
func descendants(procs map[int]proc.Stat, root int) []int {
	children := map[int][]int{}
	for pid, st := range procs {
		children[st.PPID] = append(children[st.PPID], pid)
	}
	var out []int
	queue := children[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out
}

// ReapAdopted reaps the exited children of this process that own does not
// claim, and returns how many it reaped: the orphans a subreaper adopted,
// which nobody else waits for. own must claim every child that something
// else will wait for (an exec.Cmd's process, from its start until its
// Wait returns), and hold while ReapAdopted runs: a child reaped here is
// lost to its Wait.
func ReapAdopted(own func(pid int) bool) int {
	procs, err := processes()
	if err != nil {
		return 0
	}
	self, n := os.Getpid(), 0
	for pid, st := range procs {
		if st.PPID != self || st.State != 'Z' || own(pid) {
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			n++
		}
	}
	return n
}

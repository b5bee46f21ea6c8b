package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
)

// Room is the cgroup of one room: a directory named by the room in each
// of the tree's hierarchies. Its methods are safe for concurrent use,
// except that Start is called once.
type Room struct {
	t    *Tree
	name string
	dirs []string // one per t.hs, in that order
	// pids is the pids.max Create set: 0 for none, -1 when not known (a
	// room found again with Room).
	pids int64
}

// Name is the room's cgroup name, as given to Create or Room.
func (r *Room) Name() string { return r.name }

// Start starts cmd as the room's first process, inside the room's cgroups
// from its first instruction on: it never runs a single instruction of its
// program outside them, so neither can anything it starts.
//
// On cgroup v2 the child is created in the room's cgroup by clone3
// (SysProcAttr.UseCgroupFD and CgroupFD, which Start sets; Linux 5.7 and
// later). On v1, which has no such call, a child is born in the cgroups
// of the thread that forks it, and a v1 cgroup takes single threads: the
// calling thread, locked to its goroutine meanwhile, joins the room's v1
// cgroups, forks, and returns to the lobby's own cgroups, so there is no
// window in which the child runs outside the room and no handshake with
// it. The thread moves itself (it writes "0" to the tasks files), which
// the kernel does without the system-wide lock that moving any other
// task takes, and whose wait for an RCU grace period was most of a cold
// start. Start therefore belongs exactly where cmd.Start would be, on the
// thread that must fork (the supervisor's fork thread, for Pdeathsig);
// while the thread is in the room, the room's pids.max is raised by one
// for it.
//
// A thread that cannot leave the room's cgroups must fork nothing more,
// or its next child, of any room or of none, would be born in this room:
// the fork thread is then mended before its next start, which is refused
// until it is back (proc.MendForkThread); any other thread stays locked
// to its goroutine, and ends with it. An error returned once the process
// started (the thread could not leave) leaves the process running: Kill
// it.
func (r *Room) Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	var v1 []int
	for i, h := range r.t.hs {
		if !h.v2 {
			v1 = append(v1, i)
			continue
		}
		fd, err := unix.Open(r.dirs[i], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cgroup: room %s: %w", r.name, &fs.PathError{Op: "open", Path: r.dirs[i], Err: err})
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if len(v1) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	restore, err := r.pidsHeadroom()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("cgroup: room %s: %w", r.name, err)
	}
	joined := 0
	for _, i := range v1 {
		if err = moveThread(r.dirs[i]); err != nil {
			break
		}
		joined++
	}
	if err == nil {
		err = cmd.Start()
	}
	stuck := false
	if joined > 0 {
		if e := r.t.homeThread(); e != nil {
			err = errors.Join(err, fmt.Errorf("the starting thread did not leave the room's cgroups: %w", e))
			// The fork thread is put back before it forks again; any
			// other stays locked, so that no other goroutine forks into
			// the room from it, and ends with its goroutine.
			stuck = !proc.MendForkThread(r.t.homeThread)
		}
	}
	if !stuck {
		runtime.UnlockOSThread()
	}
	if e := restore(); e != nil {
		err = errors.Join(err, fmt.Errorf("restoring pids.max: %w", e))
	}
	if err != nil {
		return fmt.Errorf("cgroup: room %s: %w", r.name, err)
	}
	return nil
}

// moveThread moves the calling thread into the v1 cgroup dir.
func moveThread(dir string) error { return write(dir+"/tasks", "0") }

// homeThread moves the calling thread back into the lobby's own cgroups
// in every v1 hierarchy of the tree.
func (t *Tree) homeThread() error {
	var errs []error
	for _, h := range t.hs {
		if !h.v2 {
			errs = append(errs, moveThread(h.base))
		}
	}
	return errors.Join(errs...)
}

// pidsHeadroom raises the room's v1 pids.max by one, for the forking
// thread that counts in it while it is there, and returns the function
// that lowers it again.
func (r *Room) pidsHeadroom() (func() error, error) {
	i := r.t.at[rolePids]
	if i < 0 || r.t.hs[i].v2 || r.pids == 0 {
		return func() error { return nil }, nil
	}
	p := r.dirs[i] + "/pids.max"
	n := r.pids
	if n < 0 {
		var err error
		if n, err = number(p); err != nil || n < 0 {
			return func() error { return nil }, err
		}
	}
	if err := write(p, strconv.FormatInt(n+1, 10)); err != nil {
		return nil, err
	}
	return func() error { return write(p, strconv.FormatInt(n, 10)) }, nil
}

// Procs returns the ids of the processes in the room.
func (r *Room) Procs() ([]int, error) {
	pids, err := readProcs(r.dirs[0])
	if err != nil {
		return nil, fmt.Errorf("cgroup: room %s: %w", r.name, err)
	}
	return pids, nil
}

// Kill kills every process in the room, whatever it did with sessions,
// process groups or its parent, and returns once none is left (or with
// ctx's error, saying how many are). On v2 that is cgroup.kill, which
// also takes processes forked meanwhile; on v1 the room is frozen (if the
// freezer is mounted), every process sent SIGKILL and the room thawed, in
// rounds until it is empty. Processes are left unreaped: the room's first
// process is the caller's to wait for, the others are reaped by whoever
// they were reparented to. Killing an empty or removed room does nothing.
func (r *Room) Kill(ctx context.Context) error {
	var b backoff
	for {
		n, err := r.count()
		if err != nil {
			return fmt.Errorf("cgroup: killing room %s: %w", r.name, err)
		}
		if n == 0 {
			return nil
		}
		if err := r.killRound(); err != nil {
			return fmt.Errorf("cgroup: killing room %s: %w", r.name, err)
		}
		if err := b.wait(ctx); err != nil {
			return fmt.Errorf("cgroup: killing room %s: %d processes left: %w", r.name, n, err)
		}
	}
}

// killRound sends SIGKILL to every process in the room once.
func (r *Room) killRound() error {
	t := r.t
	if t.hs[0].v2 {
		err := write(r.dirs[0]+"/cgroup.kill", "1")
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if i := t.at[roleFreeze]; i >= 0 {
		// A frozen process cannot fork: the list read while frozen is all
		// of the room. Those still freezing are caught by the next round.
		st := r.dirs[i] + "/freezer.state"
		if err := write(st, "FROZEN"); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		awaitFrozen(st)
		err := signalCgroup(r.dirs[i], unix.SIGKILL)
		return errors.Join(err, write(st, "THAWED"))
	}
	return signalCgroup(r.dirs[0], unix.SIGKILL)
}

// awaitFrozen waits a little for the v1 freezer state file st to read
// FROZEN: a process in uninterruptible sleep can hold it at FREEZING.
func awaitFrozen(st string) {
	for range 100 {
		if b, err := os.ReadFile(st); err != nil || string(b) == "FROZEN\n" {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// count returns the number of processes in the room, across its
// hierarchies (they agree).
func (r *Room) count() (int, error) {
	n := 0
	for _, d := range r.dirs {
		pids, err := readProcs(d)
		if err != nil {
			return 0, err
		}
		n += len(pids)
	}
	return n, nil
}

// Remove removes the room's cgroups, which must be empty (see Kill), and
// the tree's directories if it was their last room. Removing a removed
// room does nothing.
func (r *Room) Remove() error {
	if err := r.removeDirs(len(r.dirs)); err != nil {
		return fmt.Errorf("cgroup: room %s: %w", r.name, err)
	}
	r.t.prune()
	return nil
}

// removeDirs removes the room's first n directories.
func (r *Room) removeDirs(n int) error {
	var errs []error
	for _, d := range r.dirs[:n] {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Usage is what a room's processes use.
type Usage struct {
	// CPU is the CPU time, user and system, used by every process the
	// room had, since it was created.
	CPU time.Duration
	// Resident is the memory the room's processes hold now, in bytes:
	// their anonymous memory (heap, stacks; with swap cache on v1) and the
	// file pages they have mapped (binaries, libraries, shared memory)
	// that the room is charged for: v2 memory.stat anon + file_mapped, v1
	// total_rss + total_mapped_file. It leaves out page cache the kernel
	// can drop, which memory.current and memory.usage_in_bytes count.
	// Unlike a sum of the processes' RSS, a page counts once, and a file
	// page counts for the cgroup that first read it: a binary the host
	// had already loaded counts elsewhere. The kernel folds these
	// statistics in every 2 s, so the figure may lag by that.
	Resident int64
	// CPUKnown and ResidentKnown say whether the host measures each: CPU
	// time needs cgroup v2 or the v1 cpuacct controller, Resident the
	// memory controller.
	CPUKnown, ResidentKnown bool
}

// Usage returns what the room's processes use.
func (r *Room) Usage() (Usage, error) {
	var u Usage
	t := r.t
	if i := t.at[roleCPUUsage]; i >= 0 {
		var err error
		if t.hs[i].v2 {
			var us int64
			us, err = field(r.dirs[i]+"/cpu.stat", "usage_usec")
			u.CPU = time.Duration(us) * time.Microsecond
		} else {
			var ns int64
			ns, err = number(r.dirs[i] + "/cpuacct.usage")
			u.CPU = time.Duration(ns)
		}
		if err != nil {
			return Usage{}, fmt.Errorf("cgroup: room %s: %w", r.name, err)
		}
		u.CPUKnown = true
	}
	if i := t.at[roleMemory]; i >= 0 {
		keys := [2]string{"total_rss", "total_mapped_file"}
		if t.hs[i].v2 {
			keys = [2]string{"anon", "file_mapped"}
		}
		for _, k := range keys {
			n, err := field(r.dirs[i]+"/memory.stat", k)
			if err != nil {
				return Usage{}, fmt.Errorf("cgroup: room %s: %w", r.name, err)
			}
			u.Resident += n
		}
		u.ResidentKnown = true
	}
	return u, nil
}

// OOMKills returns how many processes of the room the OOM killer killed
// because the room reached its memory limit (v2 memory.events oom_kill,
// v1 memory.oom_control oom_kill, Linux 4.13 and later); a room reaped
// with a count above zero ended by "oom". It is 0 without the memory
// controller.
func (r *Room) OOMKills() (int64, error) {
	i := r.t.at[roleMemory]
	if i < 0 {
		return 0, nil
	}
	file := "/memory.oom_control"
	if r.t.hs[i].v2 {
		file = "/memory.events"
	}
	n, err := field(r.dirs[i]+file, "oom_kill")
	if err != nil {
		return 0, fmt.Errorf("cgroup: room %s: %w", r.name, err)
	}
	return n, nil
}

// signalCgroup sends sig to every process listed in the cgroup dir but
// this one. Each is pinned by a pidfd first, and signalled only if it is
// still listed afterwards: a process that exited and was reaped between
// the two reads is not signalled, nor whoever reused its id.
func signalCgroup(dir string, sig unix.Signal) error {
	_, err := signalCgroupBut(dir, sig, nil)
	return err
}

// signalCgroupBut is signalCgroup, skipping the pids of skip, and returns
// the processes this one may not signal.
func signalCgroupBut(dir string, sig unix.Signal, skip map[int]bool) ([]int, error) {
	pids, err := readProcs(dir)
	if err != nil || len(pids) == 0 {
		return nil, err
	}
	var held []pinned
	defer func() {
		for _, p := range held {
			p.close()
		}
	}()
	for _, pid := range pids {
		if skip[pid] {
			continue
		}
		if p, ok := pin(pid); ok {
			held = append(held, p)
		}
	}
	still, err := readProcs(dir)
	if err != nil {
		return nil, err
	}
	slices.Sort(still)
	var beyond []int
	for _, p := range held {
		if _, listed := slices.BinarySearch(still, p.pid); listed {
			if beyondReach(p.signal(sig)) {
				beyond = append(beyond, p.pid)
			}
		}
	}
	return beyond, nil
}

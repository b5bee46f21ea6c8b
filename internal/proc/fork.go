//go:build linux

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The parent-death signal of a child is tied to the OS thread that forked
// it, not to the process: with Go moving goroutines between threads and
// retiring threads, a child forked from an arbitrary goroutine is killed
// whenever that thread happens to exit. Children with a parent-death
// signal are therefore forked by one goroutine locked to its thread that
// never returns, so the signal fires exactly when the process dies.
var forker struct {
	once sync.Once
	reqs chan forkRequest
	tid  atomic.Int64 // the fork thread's id, once it runs
	// mend puts the fork thread back as every start must find it, after
	// a start that could not (see MendForkThread); nil when it is. Only
	// the fork thread touches it.
	mend func() error
}

type forkRequest struct {
	start func() error
	done  chan error
}

// StartOnForkThread starts cmd from the process's one locked fork thread.
// Start every child whose SysProcAttr has a Pdeathsig with it.
func StartOnForkThread(cmd *exec.Cmd) error { return OnForkThread(cmd.Start) }

// OnForkThread runs start, which starts a child (cmd.Start, or something
// that wraps it), on the process's one locked fork thread, and returns
// its error. start must return with the thread as it found it, since the
// thread forks every later child too; one that cannot says so with
// MendForkThread.
func OnForkThread(start func() error) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			forker.tid.Store(int64(unix.Gettid()))
			for r := range forker.reqs {
				r.done <- serveFork(r.start)
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkRequest{start, done}
	return <-done
}

// serveFork runs start on the fork thread, once the thread is as every
// start must find it.
func serveFork(start func() error) error {
	if forker.mend != nil {
		if err := forker.mend(); err != nil {
			return fmt.Errorf("proc: the fork thread starts nothing until it is put back: %w", err)
		}
		forker.mend = nil
	}
	return start()
}

// MendForkThread is for a start that could not leave the fork thread as
// it found it (a thread that joined a room's cgroups to fork into them
// and could not leave them): mend is what puts it back. Every later
// start on the fork thread runs mend first and, until mend succeeds, is
// refused with its error, so that no child is ever born where the
// thread was left. It reports false, and does nothing, when the caller
// does not run on the fork thread.
func MendForkThread(mend func() error) bool {
	if int64(unix.Gettid()) != forker.tid.Load() {
		return false
	}
	forker.mend = mend
	return true
}

// CloseOnExecFrom marks every descriptor of this process from first on
// close-on-exec: descriptors this process was given by whoever started
// it, and did not mean to pass on, reach none of the programs it starts.
// Go marks the ones it opens itself so already.
func CloseOnExecFrom(first int) error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

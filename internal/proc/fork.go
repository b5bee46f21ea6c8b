package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

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
// its error. start must return with the thread as it found it: it runs
// every later start too.
func OnForkThread(start func() error) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range forker.reqs {
				r.done <- r.start()
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkRequest{start, done}
	return <-done
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

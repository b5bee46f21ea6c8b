//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNotSame is returned by Open when the process with the pid is not the
// one named: it started at another time, so the pid was reused.
var ErrNotSame = errors.New("proc: another process has this pid now")

// Handle names one process that need not be a child, by a pidfd: signals
// sent through it reach that process or none, whatever happens to its pid,
// and Exited tells when it has exited. An idle Handle costs one goroutine
// parked in the runtime's poller.
type Handle struct {
	pid int
	f   *os.File

	once   sync.Once
	exited chan struct{}
}

// Open returns a handle on process pid, which must have started at
// startTicks (Stat.StartTicks) and not have exited. Errors satisfy
// errors.Is(err, os.ErrNotExist) for a process that is gone, or ErrNotSame.
func Open(pid int, startTicks uint64) (*Handle, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("proc: pid %d: %w", pid, os.ErrNotExist)
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			err = os.ErrNotExist
		}
		return nil, fmt.Errorf("proc: pidfd of %d: %w", pid, err)
	}
	h := &Handle{pid: pid, f: os.NewFile(uintptr(fd), "pidfd"), exited: make(chan struct{})}
	// The pidfd names whoever had the pid when it was opened: the start
	// time read after it says whether that is the process meant.
	st, err := ReadStat(pid)
	switch {
	case err != nil:
		h.f.Close()
		return nil, fmt.Errorf("proc: %d: %w", pid, err)
	case st.StartTicks != startTicks:
		h.f.Close()
		return nil, fmt.Errorf("proc: %d started at tick %d, not %d: %w", pid, st.StartTicks, startTicks, ErrNotSame)
	case st.State == 'Z':
		h.f.Close()
		return nil, fmt.Errorf("proc: %d has exited: %w", pid, os.ErrNotExist)
	}
	go h.wait()
	return h, nil
}

// PID is the process id.
func (h *Handle) PID() int { return h.pid }

// Exited is closed once the process has exited (it may not be reaped yet:
// it is someone else's child).
func (h *Handle) Exited() <-chan struct{} { return h.exited }

// wait closes exited when the pidfd turns readable, which it does when
// the process exits.
func (h *Handle) wait() {
	defer close(h.exited)
	rc, err := h.f.SyscallConn()
	if err != nil {
		return
	}
	// The first call makes the runtime's poller wait for readability, the
	// second one ends the read.
	polled := false
	_ = rc.Read(func(uintptr) bool {
		done := polled
		polled = true
		return done
	})
}

// Signal sends sig to the process, if it has not exited.
func (h *Handle) Signal(sig unix.Signal) {
	rc, err := h.f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _ = unix.PidfdSendSignal(int(fd), sig, nil, 0) })
}

// SignalGroup sends sig to the process and, while it has not exited, to
// the process group it leads. The group is signalled by its number, which
// is safe as long as the leader has not exited: a leader holds its group
// id until it is reaped.
func (h *Handle) SignalGroup(sig unix.Signal) {
	h.Signal(sig)
	select {
	case <-h.exited:
	default:
		if st, err := ReadStat(h.pid); err == nil && st.PGID == h.pid && st.State != 'Z' {
			SignalGroup(h.pid, sig)
		}
	}
}

// Close releases the pidfd once the process has exited; Exited stays
// closed. Call it only after Exited.
func (h *Handle) Close() {
	h.once.Do(func() { h.f.Close() })
}

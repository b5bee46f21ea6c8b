package cgroup

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// pinned is a process held by a pidfd, so that a signal sent through it
// reaches that process or none, never one that reused its id.
type pinned struct {
	pid int
	fd  int // -1 on a kernel without pidfd_open (before 5.3): signalled by id
}

// pin opens a pidfd on pid; false means the process is gone.
func pin(pid int) (pinned, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		return pinned{pid, fd}, true
	case errors.Is(err, unix.ENOSYS):
		return pinned{pid, -1}, true
	}
	return pinned{}, false
}

// signal sends sig to the process; an error matching unix.EPERM means
// this process may not signal it (a room's process, run as the room's
// user, and its warden, run as the lobby's).
func (p pinned) signal(sig unix.Signal) error {
	if p.fd < 0 {
		return unix.Kill(p.pid, sig)
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// beyondReach reports whether err says that a process may not be
// signalled by this one.
func beyondReach(err error) bool { return errors.Is(err, unix.EPERM) }

func (p pinned) close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
	}
}

// backoff paces a loop that waits for processes to end: from 1 ms,
// doubling, to at most 50 ms between looks.
type backoff struct{ d time.Duration }

// wait sleeps for the next delay, or returns ctx's error.
func (b *backoff) wait(ctx context.Context) error {
	b.d = min(max(2*b.d, time.Millisecond), 50*time.Millisecond)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

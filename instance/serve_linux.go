package instance

import (
	"context"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/cgroup"
)

// awaitParentExit returns nil once the parent ppid has exited (or after a
// spurious wake-up), and an error when it cannot wait on a pidfd.
func awaitParentExit(ppid int) error {
	fd, err := unix.PidfdOpen(ppid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "parent pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if os.Getppid() != ppid {
		return nil // gone before the pidfd was opened: ppid may be another's
	}
	// A pidfd turns readable when the process exits: the first call
	// makes the runtime's poller wait for that, the second one ends it.
	polled := false
	return rc.Read(func(uintptr) bool {
		done := polled
		polled = true
		return done
	})
}

// endProcesses ends what is left of the room but this process: with
// cgroups (cg is TREE/ROOM), every other process in them, and the cgroups
// themselves; without, this process's descendants.
func endProcesses(ctx context.Context, cg string) error {
	if tree, room, ok := strings.Cut(cg, "/"); ok {
		return cgroup.End(ctx, tree, room)
	}
	return cgroup.KillDescendants(ctx, os.Getpid())
}

// redirect points descriptors 1 and 2 at the file at path, opened for
// appending (never through a link), and reports whether it could.
func redirect(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return false // the writes keep failing, harmlessly (proc.SurviveBrokenPipes)
	}
	defer f.Close()
	for _, fd := range []int{1, 2} {
		_ = unix.Dup3(int(f.Fd()), fd, 0)
	}
	return true
}

// stderrSize is the size of what descriptor 2 points at, if it can tell.
func stderrSize() (int64, bool) {
	var st unix.Stat_t
	if unix.Fstat(2, &st) != nil {
		return 0, false
	}
	return st.Size, true
}

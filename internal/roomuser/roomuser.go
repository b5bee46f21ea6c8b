// Package roomuser runs a room as a user of its own. A lobby run as root
// forks each room's first process in the room's cgroups, with the room's
// environment, and the child takes the room's user before it executes
// the room's program, through a descriptor the lobby opened (Run). So the
// room's game server, which Foyer did not write, never runs a single
// instruction as root, and runs as a user no other room and not the lobby
// has: it cannot signal the lobby or another room, nor read or write what
// they own.
//
// Beside it, in its cgroups, the lobby starts the room's warden, the one
// process of the room that keeps the lobby's identity. It does one
// thing: when the room's first process has exited and no lobby ended the
// room (its lobby died, or the room outlived it and ended by itself), it
// ends what is left of the room and removes the room's cgroups, which a
// process of the room's user may not. It reads nothing the room writes.
package roomuser

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/cgroup"
)

// Range is a range of user ids for rooms, inclusive: each room runs as
// one of them, gid equal to uid, with no supplementary groups, as
// systemd's DynamicUser= does, and none needs an entry in /etc/passwd.
type Range struct{ First, Last uint32 }

// DefaultFirst and DefaultLast bound the default range: 65536 ids that
// neither systemd (whose DynamicUser= range ends at 65519, and whose
// container ranges end at 1879048191) nor the usual /etc/subuid
// allocations use.
const (
	DefaultFirst = 1879048192
	DefaultLast  = DefaultFirst + 65535
)

// IsZero reports whether r is no range: rooms share the lobby's user.
func (r Range) IsZero() bool { return r == Range{} }

// Len is the number of ids in r.
func (r Range) Len() int {
	if r.IsZero() {
		return 0
	}
	return int(r.Last-r.First) + 1
}

// Contains reports whether uid is in r.
func (r Range) Contains(uid int) bool {
	return !r.IsZero() && uid >= int(r.First) && uid <= int(r.Last)
}

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// ParseRange reads "FIRST-LAST" (or one id); "" is no range.
func ParseRange(v string) (Range, error) {
	if v == "" {
		return Range{}, nil
	}
	a, b, found := strings.Cut(v, "-")
	if !found {
		b = a
	}
	first, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	last, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	switch {
	case err1 != nil || err2 != nil:
		return Range{}, errors.New(`not a range of user ids, e.g. "1879048192-1879113727", or "" for none`)
	case first == 0:
		return Range{}, errors.New("uid 0 is root: rooms must not run as root")
	case first > last:
		return Range{}, errors.New("first id above last")
	case last >= 1<<31-1:
		return Range{}, errors.New("ids from 2147483647 on are not portable user ids")
	}
	return Range{uint32(first), uint32(last)}, nil
}

// Clashes says which user or group of the system's databases (given as
// the contents of /etc/passwd and /etc/group) has an id in r, or nil: a
// room running as that id would own that user's files.
func (r Range) Clashes(passwd, group []byte) error {
	for _, db := range []struct {
		what string
		text []byte
	}{{"user", passwd}, {"group", group}} {
		for _, line := range strings.Split(string(db.text), "\n") {
			f := strings.Split(line, ":")
			if len(f) < 3 {
				continue
			}
			if id, err := strconv.Atoi(f[2]); err == nil && r.Contains(id) {
				return fmt.Errorf("%s %s has id %d, inside the rooms' range %v: choose a range no user or group has", db.what, f[0], id, r)
			}
		}
	}
	return nil
}

// Active reports whether this process can run rooms as users of their
// own: only root can.
func Active() bool { return os.Geteuid() == 0 }

// ProgramFD is the descriptor a room's first process is executed
// through (see Run). The program finds it open, a descriptor that can be
// neither read nor written; foyer-room marks it close-on-exec first
// thing, so nothing it executes inherits it.
const ProgramFD = 3

// Run makes cmd, not yet started, a room's first process as the room's
// user uid: forked by the lobby (root), the child takes uid, gid uid and
// no supplementary groups before it executes the room's program. A
// change of user id from root sets the real, effective and saved ids and
// drops every capability, so the room's program never runs an
// instruction as root and cannot become root again.
//
// The program is opened here, as root, and the child executes it through
// that descriptor, at ProgramFD: the room's user needs the permission to
// execute the file, not to reach it, so a lobby's binary in a directory
// of root's alone still runs. The caller closes the returned descriptor
// once cmd has started.
func Run(cmd *exec.Cmd, uid int) (*os.File, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if uid <= 0 {
		return nil, fmt.Errorf("roomuser: uid %d is not a room's", uid)
	}
	fd, err := unix.Open(cmd.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("roomuser: %w", &fs.PathError{Op: "open", Path: cmd.Path, Err: err})
	}
	program := os.NewFile(uintptr(fd), cmd.Path)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(ProgramFD)
	cmd.ExtraFiles = append([]*os.File{program}, cmd.ExtraFiles...) // the first: ProgramFD
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = credential(uid)
	return program, nil
}

// credential is the room's user uid: gid uid, no supplementary groups.
func credential(uid int) *syscall.Credential {
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
}

// WardenArg is the flag of the instance subcommand that runs a room's
// warden (Warden), with the room's cgroups as its value. The warden is
// started by the lobby, as the lobby's user, in the room's cgroups,
// with a pidfd of the room's first process at descriptor 3.
const WardenArg = "--room-warden"

// wardenFD is the descriptor of the warden's pidfd.
const wardenFD = 3

// wardenWait is how long the warden leaves a lobby to end the room, once
// the room's first process has exited: a lobby that watches the room
// ends it (and the warden with it) within milliseconds.
const wardenWait = 2 * time.Second

// Warden waits until the room's first process, whose pidfd it was given
// at descriptor 3, has exited, gives a lobby wardenWait to end the room,
// and then ends it itself: it kills whatever is left in the room's
// cgroups (cgroups, "TREE/ROOM") and removes them. It returns when there
// is nothing left to do.
func Warden(cgroups string) error {
	tree, room, ok := strings.Cut(cgroups, "/")
	if !ok {
		return fmt.Errorf("roomuser: warden: %q names no room's cgroups", cgroups)
	}
	// A pidfd of a process that has exited says so too (ESRCH).
	if err := unix.PidfdSendSignal(wardenFD, 0, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("roomuser: warden: descriptor %d is no pidfd of the room's first process: %w", wardenFD, err)
	}
	fds := []unix.PollFd{{Fd: wardenFD, Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("roomuser: warden: waiting for the room's first process: %w", err)
		}
		if fds[0].Revents != 0 {
			break
		}
	}
	unix.Close(wardenFD)
	time.Sleep(wardenWait)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cgroup.End(ctx, tree, room)
}

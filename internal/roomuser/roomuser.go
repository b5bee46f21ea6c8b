// Package roomuser runs a room as a user of its own. A lobby run as root
// starts each room's first process as root, in the room's cgroups, with
// the room's environment; that process (Become) starts the room's warden,
// drops every privilege for the room's user, and executes the room's
// program in its place, keeping its pid. So the room's game server, which
// Foyer did not write, never runs a single instruction as root, and runs
// as a user no other room and not the lobby has: it cannot signal the
// lobby or another room, nor read or write what they own.
//
// The warden is the one process of the room that keeps the lobby's
// identity, and does one thing: when the room's first process has exited
// and no lobby ended the room (its lobby died, or the room outlived it
// and ended by itself), it ends what is left of the room and removes the
// room's cgroups, which a process of the room's user may not. It reads
// nothing the room writes.
package roomuser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/proc"
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

// Become is the room's first process: run as root by the lobby with the
// room's environment, it starts the room's warden when the room has
// cgroups (cgroups, "TREE/ROOM", as the lobby names them to the room),
// drops to uid (gid uid, no supplementary groups), keeps the
// parent-death signal the lobby gave it, and executes argv in its own
// place. It returns only on failure, before argv runs.
//
// The program is opened here, as root, and executed through its
// descriptor: the room's user needs the permission to execute the file,
// not to reach it, so a lobby's binary in a directory of root's alone
// still runs.
func Become(uid int, cgroups string, argv []string) error {
	if len(argv) == 0 {
		return errors.New("roomuser: no program")
	}
	if uid <= 0 {
		return fmt.Errorf("roomuser: uid %d is not a room's", uid)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("roomuser: %w", err)
	}
	// Nothing this process was given but its standard streams reaches
	// the room: the plugin protocol needs no more.
	if err := proc.CloseOnExecFrom(3); err != nil {
		return fmt.Errorf("roomuser: %w", err)
	}
	if cgroups != "" {
		if err := startWarden(cgroups); err != nil {
			return fmt.Errorf("roomuser: warden: %w", err)
		}
	}
	fd, err := openProgram(path)
	if err != nil {
		return fmt.Errorf("roomuser: %w", err)
	}
	// One thread drops the last privileges it needs to keep (the
	// parent-death signal is per thread, and cleared by a change of
	// credentials) and executes; Go changes the credentials of every
	// thread.
	runtime.LockOSThread()
	var deathSig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&deathSig)), 0, 0, 0); err != nil {
		deathSig = 0
	}
	parent := os.Getppid()
	if err := drop(uid); err != nil {
		return err
	}
	if deathSig != 0 {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(deathSig), 0, 0, 0); err != nil {
			return fmt.Errorf("roomuser: parent-death signal: %w", err)
		}
		if os.Getppid() != parent {
			return errors.New("roomuser: the lobby is gone")
		}
	}
	err = syscall.Exec("/proc/self/fd/"+strconv.Itoa(fd), argv, os.Environ())
	return fmt.Errorf("roomuser: executing %s as uid %d: %w", path, uid, err)
}

// openProgram opens the program at path for execution through its
// descriptor. A script keeps the descriptor open across the exec, as its
// interpreter opens it by that name; a binary does not.
func openProgram(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return -1, err
	}
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	script := n == 2 && string(head) == "#!"
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return -1, err
	}
	if !script {
		unix.CloseOnExec(fd)
	}
	return fd, nil
}

// drop makes uid this process's every user and group id, with no
// supplementary groups, and checks that root cannot be taken back.
func drop(uid int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("roomuser: setgroups: %w", err)
	}
	if err := syscall.Setresgid(uid, uid, uid); err != nil {
		return fmt.Errorf("roomuser: setresgid %d: %w", uid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("roomuser: setresuid %d: %w", uid, err)
	}
	if os.Getuid() != uid || os.Geteuid() != uid || os.Getgid() != uid || syscall.Setuid(0) == nil {
		return fmt.Errorf("roomuser: uid %d not taken for good", uid)
	}
	return nil
}

// WardenArg is the flag of the instance subcommand that runs a room's
// warden (Warden), with the room's cgroups as its value.
const WardenArg = "--room-warden"

// startWarden starts this binary as the warden of the room whose cgroups
// are cgroups: a child, in them and with this process's identity, that
// keeps no descriptor of the room's.
func startWarden(cgroups string) error {
	cmd := exec.Command("/proc/self/exe", "instance", WardenArg+"="+cgroups)
	cmd.Env = os.Environ()
	cmd.Dir = "/"
	return cmd.Start() // reaped by whoever the room's program is: a zombie until it exits, if it never waits
}

// wardenWait is how long the warden leaves a lobby to end the room, once
// the room's first process has exited: a lobby that watches the room
// ends it (and the warden with it) within milliseconds.
const wardenWait = 2 * time.Second

// Warden waits until its parent, the room's first process, has exited,
// gives a lobby wardenWait to end the room, and then ends it itself: it
// kills whatever is left in the room's cgroups (cgroups, "TREE/ROOM")
// and removes them. It returns when there is nothing left to do.
func Warden(cgroups string) error {
	tree, room, ok := strings.Cut(cgroups, "/")
	if !ok {
		return fmt.Errorf("roomuser: warden: %q names no room's cgroups", cgroups)
	}
	parent := os.Getppid()
	if fd, err := unix.PidfdOpen(parent, 0); err == nil {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for os.Getppid() == parent {
			if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
				break
			}
			if fds[0].Revents != 0 {
				break
			}
		}
		unix.Close(fd)
	}
	for os.Getppid() == parent { // no pidfds, or reparenting not yet seen
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(wardenWait)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cgroup.End(ctx, tree, room)
}

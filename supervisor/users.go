package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/roomuser"
)

// A room runs game code Foyer did not write. Where the lobby is root, each
// room runs as a user of its own from Config.RoomUsers (see package
// roomuser): it cannot signal the lobby or another room, nor read the
// config, the token files or the state directory beyond its own room's
// directory, which it owns. Its environment is built afresh (roomEnv).
// Where the lobby is not root, rooms share its user, and the start log
// says so.

// roomUsers hands out the rooms' users.
type roomUsers struct {
	r      roomuser.Range
	warden []string // the command of the rooms' wardens: see wardenCommand
	// mu is held from the choice of a room's user until its directory
	// is theirs: the directories' owners are how users in use are told.
	mu sync.Mutex
}

// openRoomUsers returns the rooms' users, or nil when rooms share this
// process's user, having said so.
func openRoomUsers(cfg Config, log zerolog.Logger) (*roomUsers, error) {
	switch {
	case !roomuser.Active():
		log.Warn().Int("uid", os.Geteuid()).Msg("rooms run as this process's user, which is not root: " +
			"they share its authority (its files, its processes); run Foyer as root for a user per room")
		return nil, nil
	case cfg.RoomUsers.IsZero():
		log.Warn().Msg("rooms run as root: [supervisor] room_users is empty; set a range for a user per room")
		return nil, nil
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	group, _ := os.ReadFile("/etc/group")
	if err := cfg.RoomUsers.Clashes(passwd, group); err != nil {
		return nil, fmt.Errorf("supervisor: room_users: %w", err)
	}
	// A room's warden watches the room's first process through a pidfd.
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil && !cfg.NoCgroups {
		return nil, fmt.Errorf("supervisor: room_users: the rooms' wardens need pidfds (Linux 5.3 or later), which this kernel refuses (%v): "+
			`set room_users = "" to run rooms as this process's user`, err)
	} else if err == nil {
		unix.Close(fd)
	}
	warden, err := wardenCommand(cfg)
	if err != nil {
		return nil, err
	}
	log.Info().Stringer("room_users", cfg.RoomUsers).Msg("rooms run as users of their own")
	return &roomUsers{r: cfg.RoomUsers, warden: warden}, nil
}

// pick chooses a user for room id, none of inUse: the room id's place in
// the range, or the next free one after it.
func (u *roomUsers) pick(id uint32, inUse map[int]bool) (int, error) {
	n := u.r.Len()
	for i := range n {
		uid := int(u.r.First) + (int(id)+i)%n
		if !inUse[uid] {
			return uid, nil
		}
	}
	return -1, fmt.Errorf("all %d users of room_users %v are in use", n, u.r)
}

// usersInUse returns the ids of u's range that a process runs as, or that
// own a room's directory in rooms: a user of a room that still runs, or
// whose directory is not yet removed.
func (u *roomUsers) usersInUse(rooms string) map[int]bool {
	out := map[int]bool{}
	if ents, err := os.ReadDir(rooms); err == nil {
		for _, e := range ents {
			if fi, err := os.Lstat(filepath.Join(rooms, e.Name())); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && u.r.Contains(int(st.Uid)) {
					out[int(st.Uid)] = true
				}
			}
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		for _, id := range processUIDs(pid) {
			if u.r.Contains(id) {
				out[id] = true
			}
		}
	}
	return out
}

// processUIDs returns the user ids (real, effective, saved, file system)
// of process pid: from a pidfd where the kernel tells them so (Linux
// 6.13 and later), which costs it a few words, else from
// /proc/pid/status, which costs it a page of text. A process gone
// meanwhile has none.
func processUIDs(pid int) []int {
	if !pidfdCredsMissing.Load() {
		if ids, ok := pidfdUIDs(pid); ok {
			return ids
		}
	}
	return statusUIDs(pid)
}

// pidfdCredsMissing is set once the kernel has said it does not tell a
// process's credentials through its pidfd: no pidfds (or none allowed),
// or no PIDFD_GET_INFO.
var pidfdCredsMissing atomic.Bool

// pidfdUIDs returns the user ids of process pid through a pidfd, and
// false when it cannot have them so.
func pidfdUIDs(pid int) ([]int, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil, true // gone
	case errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE):
		return nil, false // this once
	case err != nil:
		pidfdCredsMissing.Store(true)
		return nil, false
	}
	defer unix.Close(fd)
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
	switch err := unix.IoctlPidfdInfo(fd, &info); {
	case errors.Is(err, unix.ESRCH):
		return nil, true // exited: a zombie runs nothing
	case err != nil || info.Mask&unix.PIDFD_INFO_CREDS == 0:
		pidfdCredsMissing.Store(true)
		return nil, false
	}
	return []int{int(info.Ruid), int(info.Euid), int(info.Suid), int(info.Fsuid)}, true
}

// statusUIDs returns the user ids of process pid, from /proc.
func statusUIDs(pid int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			var out []int
			for _, f := range strings.Fields(rest) {
				if id, err := strconv.Atoi(f); err == nil {
					out = append(out, id)
				}
			}
			return out
		}
	}
	return nil
}

// defaultPath is a room's PATH when the lobby has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// roomEnv is the environment a room's first process starts with (the
// instance protocol's variables come on top, see host.Launch): this
// process's PATH, the room's directory as HOME, and the variables of
// Config.PassEnv that this process has. Nothing else of the lobby's
// reaches a room: not its secrets, not its service manager's sockets.
// The built-in reference room (no Command) also gets GOMAXPROCS=1,
// unless PassEnv passes one: its work is a few datagrams a tick, and a
// second processor costs it and its warden about 0.3 MB each.
func roomEnv(cfg Config, dir string) []string {
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = defaultPath
	}
	env := []string{"PATH=" + path, "HOME=" + dir}
	procs := len(cfg.Command) == 0
	for _, name := range cfg.PassEnv {
		if v, ok := os.LookupEnv(name); ok && name != "PATH" && name != "HOME" {
			env = append(env, name+"="+v)
			procs = procs && name != "GOMAXPROCS"
		}
	}
	if procs {
		env = append(env, "GOMAXPROCS=1")
	}
	return env
}

// wardenCommand is the command of the rooms' wardens, before its own
// arguments.
func wardenCommand(cfg Config) ([]string, error) {
	if len(cfg.Warden) > 0 {
		return cfg.Warden, nil
	}
	argv, _, err := roomProgram()
	return argv, err
}

// runnableByRooms says why a room's user could not run program, or nil.
// The room's first program (the built-in room, a go-plugin game, the
// keeper) is opened by the lobby and run through its descriptor, so only
// the file's own mode matters (reach false); a foreign server is run by
// its keeper, as the room's user, so every directory on its way must let
// others through, and a script be readable (reach true).
func runnableByRooms(program string, reach bool) error {
	path, err := lookPath(program)
	if err != nil {
		return nil // not runnable at all: Runnable's check says why
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("command %q: %w", program, err)
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("command %q: the rooms' users may not execute %s (mode %04o): chmod o+x %s", program, path, uint32(fi.Mode().Perm()), path)
	}
	if !reach {
		return nil
	}
	if head, err := os.ReadFile(path); err == nil && bytes.HasPrefix(head, []byte("#!")) && fi.Mode().Perm()&0o004 == 0 {
		return fmt.Errorf("command %q: the rooms' users may not read the script %s: chmod o+r %s", program, path, path)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		if err == nil && di.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("command %q: the rooms' users may not reach %s: %s is not searchable by others (mode %04o): chmod o+x %s",
				program, path, dir, uint32(di.Mode().Perm()), dir)
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

// lookPath finds program as exec.Command would.
func lookPath(program string) (string, error) {
	if err := Runnable(program); err != nil {
		return "", err
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// CheckRoomUsers says why rooms could not run as their users with c's
// commands, with the command that fixes it, when they will (the lobby is
// root and RoomUsers is set); nil otherwise.
func (c Config) CheckRoomUsers() error {
	if c.RoomUsers.IsZero() || !roomuser.Active() {
		return nil
	}
	var errs []error
	if dataPath(c) != "" {
		errs = append(errs, fmt.Errorf("data_dir %s: rooms run as users of their own (room_users) share no files: "+
			`set room_users = "" to run them as the lobby's user, or data_dir = ""`, c.DataDir))
	}
	argv, err := commandLine(c)
	if err != nil {
		return err
	}
	if err := runnableByRooms(argv[0], false); err != nil {
		errs = append(errs, err)
	}
	if c.Probe != "" && len(c.Command) > 0 {
		if err := runnableByRooms(c.Command[0], true); err != nil {
			errs = append(errs, err)
		}
	}
	if c.StateDir != "" {
		// The state directory itself and its rooms directory are made
		// passable at the start (roomDirs); what is above is the host's.
		for dir := filepath.Dir(filepath.Clean(c.StateDir)); ; dir = filepath.Dir(dir) {
			if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 {
				errs = append(errs, fmt.Errorf("state_dir %s: the rooms' users cannot reach their directories in it: %s is not searchable by others (mode %04o): chmod o+x %s",
					c.StateDir, dir, uint32(fi.Mode().Perm()), dir))
				break
			}
			if dir == "/" || dir == "." {
				break
			}
		}
	}
	return errors.Join(errs...)
}

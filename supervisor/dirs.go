package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
)

// tempPrefix starts the name of the temporary directory a supervisor
// without a state directory keeps its rooms' directories in; its pid and
// start time follow, so that a later start can tell the directories of
// supervisors that no longer run (kill -9 leaves them) and remove them.
const tempPrefix = "foyer-lobby-"

// roomDirs are the rooms' private directories, ROOT/rooms/ID: a room's
// instance socket, its log (room.log), and a foreign server's HOME; and
// the logs of the rooms that ended, ROOT/logs/ID.log (logs.go).
// ROOT is the state directory, locked against a second supervisor, or a
// temporary directory of this supervisor's, removed at its shutdown.
//
// With rooms run as users of their own (users set), each room's directory
// is its user's, 0700, and ROOT and ROOT/rooms let others through (0711)
// but not list or write: a room reaches its own directory by name, and
// nothing else there.
type roomDirs struct {
	root  string
	lock  *os.File   // state directory only: held with flock(2)
	users *roomUsers // nil: rooms share this process's user
}

// openRoomDirs makes the rooms' directory under cfg's state directory,
// locked, or under a new temporary directory; in the latter case it first
// removes the temporary directories of supervisors that no longer run.
func openRoomDirs(cfg Config, log zerolog.Logger) (*roomDirs, error) {
	users, err := openRoomUsers(cfg, log)
	if err != nil {
		return nil, err
	}
	d, err := openDirs(cfg.StateDir, log)
	if err != nil {
		return nil, err
	}
	d.users = users
	if users != nil {
		for _, dir := range []string{d.root, d.rooms()} {
			if err := letThrough(dir, log); err != nil {
				d.close()
				return nil, fmt.Errorf("supervisor: %w", err)
			}
		}
	}
	return d, nil
}

// letThrough lets other users through dir, to what they know the name
// of (o+x), as the rooms' users must reach their directories.
func letThrough(dir string, log zerolog.Logger) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o001 == 0 {
		if err := os.Chmod(dir, mode|0o001); err != nil {
			return err
		}
		log.Info().Str("dir", dir).Str("mode", fmt.Sprintf("%04o", uint32(mode|0o001))).Msg("rooms' users may pass through to their directories")
	}
	return nil
}

func openDirs(stateDir string, log zerolog.Logger) (*roomDirs, error) {
	if stateDir == "" {
		removeDeadTemps(log)
		self, err := proc.ReadStat(os.Getpid())
		if err != nil {
			return nil, fmt.Errorf("supervisor: own start time: %w", err)
		}
		prefix := tempStem(os.Getpid()) + strconv.FormatUint(self.StartTicks, 10) + "-"
		// os.MkdirTemp ends the name with up to 10 digits.
		if longest := filepath.Join(os.TempDir(), prefix) + "4294967295"; len(longest) > maxStateDir {
			return nil, fmt.Errorf("supervisor: the temporary directory %q is too long for the rooms' sockets: "+
				"the rooms' directory there would take %d bytes, %d at most; set a shorter TMPDIR, or state_dir",
				os.TempDir(), len(longest), maxStateDir)
		}
		root, err := os.MkdirTemp("", prefix)
		if err != nil {
			return nil, fmt.Errorf("supervisor: rooms directory: %w", err)
		}
		d := &roomDirs{root: root}
		return d, errors.Join(os.Mkdir(d.rooms(), 0o700), os.Mkdir(d.logs(), 0o700))
	}
	for _, dir := range []string{"rooms", "logs"} {
		if err := os.MkdirAll(filepath.Join(stateDir, dir), 0o700); err != nil {
			return nil, fmt.Errorf("supervisor: state_dir: %w", err)
		}
	}
	// Never through a link: the directory was checked, but a lobby run
	// as root must not write wherever a planted link points.
	lock, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("supervisor: state_dir: %w", err)
	}
	d := &roomDirs{root: stateDir, lock: lock}
	if err := d.relock(); err != nil {
		lock.Close()
		return nil, err
	}
	return d, nil
}

// tempStem is how the names of the temporary directories that the
// supervisor of process pid makes begin: its start time and a random
// number follow.
func tempStem(pid int) string { return tempPrefix + strconv.Itoa(pid) + "." }

// TempDirs are the temporary rooms directories, in os.TempDir, of the
// supervisor of process pid, one run without a state directory: one, or
// none once it has stopped. One killed (SIGKILL) leaves its directory to
// the next supervisor started, which removes it.
func TempDirs(pid int) []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempStem(pid)+"*"))
	return dirs
}

// removeDeadTemps removes the temporary room directories of supervisors
// that no longer run: a supervisor that was killed could not.
func removeDeadTemps(log zerolog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, dir := range dirs {
		name := strings.TrimPrefix(filepath.Base(dir), tempPrefix)
		id, _, _ := strings.Cut(name, "-")
		pidText, ticksText, _ := strings.Cut(id, ".")
		pid, err1 := strconv.Atoi(pidText)
		ticks, err2 := strconv.ParseUint(ticksText, 10, 64)
		if err1 != nil || err2 != nil {
			continue // not one of ours
		}
		if st, err := proc.ReadStat(pid); err == nil && st.StartTicks == ticks && st.State != 'Z' {
			continue // its supervisor runs
		}
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || ownedHere(dir, dir, fi) != nil {
			continue // not made by a lobby of this user: someone else's name-alike
		}
		if err := os.RemoveAll(dir); err == nil {
			log.Info().Str("dir", dir).Int("pid", pid).Msg("removed the rooms directory of a lobby that no longer runs")
		}
	}
}

// relock takes the state directory's lock, failing if another supervisor
// holds it.
func (d *roomDirs) relock() error {
	if d.lock == nil {
		return nil
	}
	if err := unix.Flock(int(d.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("supervisor: state_dir %s is in use by another foyer serve", d.root)
		}
		return fmt.Errorf("supervisor: state_dir lock: %w", err)
	}
	return nil
}

// unlock lets another supervisor take the state directory.
func (d *roomDirs) unlock() {
	if d.lock != nil {
		_ = unix.Flock(int(d.lock.Fd()), unix.LOCK_UN)
	}
}

// rooms is the directory of the rooms' directories.
func (d *roomDirs) rooms() string { return filepath.Join(d.root, "rooms") }

// path is room id's directory.
func (d *roomDirs) path(id uint32) string {
	return filepath.Join(d.rooms(), strconv.FormatUint(uint64(id), 10))
}

// make makes room id's directory, empty, and returns it with the user
// the room runs as, its owner; -1 when rooms share this process's user.
func (d *roomDirs) make(id uint32) (string, int, error) {
	dir := d.path(id)
	if err := os.RemoveAll(dir); err != nil {
		return "", -1, err
	}
	if d.users == nil {
		return dir, -1, os.Mkdir(dir, 0o700)
	}
	u := d.users
	u.mu.Lock()
	defer u.mu.Unlock()
	uid, err := u.pick(id, u.usersInUse(d.rooms()))
	if err != nil {
		return "", -1, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", -1, err
	}
	if err := os.Lchown(dir, uid, uid); err != nil {
		os.Remove(dir)
		return "", -1, err
	}
	return dir, uid, nil
}

// owner is the uid that owns room id's directory, the room's own; -1 when
// it cannot be told.
func (d *roomDirs) owner(id uint32) int {
	fi, err := os.Lstat(d.path(id))
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// remove removes room id's directory and whatever is in it.
func (d *roomDirs) remove(id uint32) { _ = os.RemoveAll(d.path(id)) }

// close removes a temporary root, or lets go of the state directory.
func (d *roomDirs) close() {
	if d.lock == nil {
		_ = os.RemoveAll(d.root)
		return
	}
	d.unlock()
	d.lock.Close()
}

package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The state directory decides what the lobby does as whoever runs it: the
// rooms it adopts (and later signals), the id mark it trusts, the store
// of the embedded NATS server. So it is trusted only when nobody else
// could have put anything in it, as OpenSSH's StrictModes trusts a home
// directory: it must belong to the user the lobby runs as, and be
// writable by no group and no other user. What Foyer keeps there is
// checked the same way, and must not be a symbolic link (Foyer never
// makes one): a link planted there would have a lobby run as root write
// wherever it points.

// stateEntries are what Foyer keeps in the state directory: the lock, the
// room id mark, the rooms' directories, the logs of the rooms that ended,
// the embedded NATS server's store and the cluster's keys.
var stateEntries = []string{"lock", "ids", "rooms", "logs", "nats", "cluster"}

// checkTrusted says why the state directory dir, if it exists, cannot be
// trusted, with the command that fixes it; nil if it can.
func checkTrusted(dir string) error {
	fi, err := os.Stat(dir) // a link to it is fine (systemd's DynamicUser= makes one): its target is checked
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // made at the start, as it should be
	case err != nil:
		return fmt.Errorf("state_dir %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("state_dir %s is not a directory", dir)
	}
	if err := ownedHere("state_dir "+dir, dir, fi); err != nil {
		return err
	}
	for _, name := range stateEntries {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("state_dir: %w", err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("state_dir: %s is a symbolic link, which Foyer never makes: someone planted it; remove it (rm %s)", p, p)
		}
		if err := ownedHere("state_dir: "+p, p, fi); err != nil {
			return err
		}
	}
	return nil
}

// ownedHere says why the file path (what names it in the message, fi
// its Lstat) is not this process's alone: another user owns it, or
// group or others may write to it; nil if it is.
func ownedHere(what, path string, fi fs.FileInfo) error {
	uid := os.Geteuid()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to uid %d that Foyer runs as, so that user could plant files in it: "+
			"chown -R %d %s, or choose a state_dir of Foyer's own", what, st.Uid, uid, uid, path)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s is writable by its group or by others (mode %04o), so they could plant files in it: chmod go-w %s",
			what, uint32(perm), path)
	}
	return nil
}

// openNoFollow opens the file at path for reading, refusing a symbolic
// link, anything but a regular file, a file with other names (a hard
// link to something else) and, when owner is not negative, a file of
// another user: what a room leaves in its directory is read this way.
func openNoFollow(path string, owner int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case !fi.Mode().IsRegular():
			err = fmt.Errorf("%s is not a regular file", path)
		case st != nil && st.Nlink != 1:
			err = fmt.Errorf("%s has %d names", path, st.Nlink)
		case st != nil && owner >= 0 && int(st.Uid) != owner:
			err = fmt.Errorf("%s belongs to uid %d, not %d", path, st.Uid, owner)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

package tests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/internal/nftdoor"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/supervisor"
)

// stateDirConfig writes a config whose rooms keep their state in dir.
func stateDirConfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	cfg := fmt.Sprintf("[lobby]\nlisten = \"127.0.0.1:0\"\n\n[supervisor]\nports = \"6000-6019\"\nstate_dir = %q\n\n[admin]\nlisten = \"\"\n", dir)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A state_dir is trusted only when it is the lobby's alone, as OpenSSH's
// StrictModes trusts a home directory: one another user owns, one its
// group or anyone may write to, or one holding a link where Foyer keeps a
// file is refused at the start, with the line of the key and the command
// that fixes it; the link's target is never made. A directory of the
// lobby's, writable by it alone, is used.
func TestStateDirTrustedOnlyWhenOurs(t *testing.T) {
	requiretest.Root(t) // a state_dir of another user is made with chown
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
		want    []string
	}{
		{"writable by others", func(t *testing.T, dir string) { chmod(t, dir, 0o777) },
			[]string{"is writable by its group or by others (mode 0777)", "chmod go-w " + "DIR"}},
		{"writable by its group", func(t *testing.T, dir string) { chmod(t, dir, 0o770) },
			[]string{"(mode 0770)", "chmod go-w DIR"}},
		{"sticky and writable by all, as /tmp", func(t *testing.T, dir string) { chmod(t, dir, 0o777|fs.ModeSticky) },
			[]string{"(mode 0777)", "chmod go-w DIR"}},
		{"another user's", func(t *testing.T, dir string) {
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"belongs to uid 65534, not to uid 0 that Foyer runs as", "chown -R 0 DIR"}},
		{"a planted lock link", func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(dir), "planted"), filepath.Join(dir, "lock")); err != nil {
				t.Fatal(err)
			}
		}, []string{"DIR/lock is a symbolic link, which Foyer never makes", "rm DIR/lock"}},
		{"a rooms directory of another user", func(t *testing.T, dir string) {
			rooms := filepath.Join(dir, "rooms")
			if err := os.Mkdir(rooms, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(rooms, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"DIR/rooms belongs to uid 65534", "chown -R 0 DIR/rooms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := shortDir(t)
			c.prepare(t, dir)
			path := stateDirConfig(t, dir)
			r := cliRun(t, nil, "serve", "--config", path)
			want := append([]string{path + `:6: [supervisor] state_dir "` + dir + `"`}, c.want...)
			for _, w := range want {
				if w = strings.ReplaceAll(w, "DIR", dir); r.code != 1 || !strings.Contains(r.stderr, w) {
					t.Errorf("foyer serve with a state_dir %s: exit %d, want 1 and %q in:\n%s", c.name, r.code, w, r.stderr)
				}
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "planted")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the planted link's target was made: %v", err)
			}
		})
	}

	// The lobby's own: used, and what it makes there is its own, and
	// writable by it alone.
	dir := shortDir(t)
	l := newKeptLobby(t, keptSettings{grace: 2 * 1e9, match: 600 * 1e9, ports: 4, stateDir: dir})
	c := newClient(t, "127.0.0.1", l.lobby)
	c.request(compact, createRoom, 1, nil)
	for _, name := range []string{"", "lock", "rooms"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o022 != 0 || fi.Mode()&fs.ModeSymlink != 0 {
			t.Errorf("%s: mode %v", filepath.Join(dir, name), fi.Mode())
		}
	}
}

// shortDir makes an empty directory, 0700, whose path is short enough for
// a state_dir (a room's socket path must fit a unix socket address),
// removed at the end of the test with its parent, which lets others
// through (the rooms' users reach their directories in the state_dir),
// and with the door table named for it, if a lobby left one.
func shortDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "fy")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "s")
	t.Cleanup(func() {
		removeStateDoor(t, dir)
		os.RemoveAll(base)
	})
	chmod(t, base, 0o711)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// A door table left by a lobby of a state directory (killed for good, or
// of a build broken on purpose) goes with the directory at the end of the
// test: no test leaves one on the machine.
func TestStateDoorGoesWithItsDirectory(t *testing.T) {
	requiretest.Root(t)
	var name string
	t.Run("lobby", func(t *testing.T) {
		name = supervisor.StateName(shortDir(t))
		if _, err := nftdoor.Open(name); err != nil { // and never removed
			t.Fatal(err)
		}
	})
	if ok, err := nftdoor.Exists(name); ok || err != nil {
		nftdoor.Sweep(func(n string) bool { return n == name })
		t.Fatalf("table inet %s outlived its state directory's test (%v)", name, err)
	}
}

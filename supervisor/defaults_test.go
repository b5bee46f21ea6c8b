package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/proc"
)

// TestConfigDefaultsAndValidation: the defaults are those config.toml
// documents and pass the check; New refuses what cannot work, zeros where
// they mean nothing included, rather than filling them.
func TestConfigDefaultsAndValidation(t *testing.T) {
	d := DefaultConfig()
	if d.FirstPort != 30000 || d.LastPort != 30999 || d.MaxInstances != 64 || d.MaxPlayers != 4 || d.StopGrace != 5*time.Second ||
		d.PortCooldown != 2*time.Second || d.SeatTTL != 10*time.Second {
		t.Fatalf("defaults %+v", d)
	}
	if err := d.check(); err != nil {
		t.Fatalf("the defaults fail the check: %v", err)
	}
	for name, tune := range map[string]func(*Config){
		"empty range":   func(c *Config) { c.FirstPort, c.LastPort = 200, 100 },
		"port zero":     func(c *Config) { c.FirstPort = 0 },
		"negative max":  func(c *Config) { c.MaxInstances = -1 },
		"zero max":      func(c *Config) { c.MaxInstances = 0 },
		"warm too big":  func(c *Config) { c.MaxInstances, c.Warm = 2, 3 },
		"negative time": func(c *Config) { c.StopGrace = -time.Second },
		"zero time":     func(c *Config) { c.SeatTTL = 0 },
		"players":       func(c *Config) { c.MaxPlayers = 70000 },
		"no players":    func(c *Config) { c.MaxPlayers = 0 },
		"probe":         func(c *Config) { c.Probe, c.Command = "ping", []string{"true"} },
		"probe no cmd":  func(c *Config) { c.Probe = "teeworlds" },
	} {
		bad := DefaultConfig()
		tune(&bad)
		if _, err := New(bad, zerolog.Nop()); err == nil {
			t.Errorf("%s: New accepted %+v", name, bad)
		}
	}
}

// A lobby without a state directory keeps its rooms' directories in the
// temporary one: where TMPDIR is too long for the rooms' sockets to fit a
// unix socket address, the supervisor says so at its start, rather than
// run a lobby whose every room fails. One just short enough is taken.
func TestTempDirTooLongForSocketsIsRefused(t *testing.T) {
	base, err := os.MkdirTemp("", "") // t.TempDir's name is too long
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	self, err := proc.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("/%s%d-4294967295", tempStem(os.Getpid()), self.StartTicks)
	fit := maxStateDir - len(name) - len(base) - 1 // the longest name under base that fits
	if fit < 1 {
		t.Fatalf("the test's temporary directory %s leaves no room", base)
	}
	for _, n := range []int{fit, fit + 1} {
		dir := filepath.Join(base, strings.Repeat("d", n))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", dir)
		d, err := openDirs("", zerolog.Nop())
		switch {
		case n == fit && err != nil:
			t.Fatalf("TMPDIR of %d bytes: %v", len(dir), err)
		case n > fit && (err == nil || !strings.Contains(err.Error(), "TMPDIR")):
			t.Fatalf("TMPDIR of %d bytes: %v, want a refusal naming TMPDIR", len(dir), err)
		}
		if d != nil {
			d.close()
		}
	}
}

// TempDirs names the temporary directory a supervisor without a state
// directory works in, by its process, while it runs, and nothing once it
// has stopped; nor another process's.
func TestTempDirsAreTheSupervisorsOwn(t *testing.T) {
	base, err := os.MkdirTemp("", "") // t.TempDir's name is too long
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	t.Setenv("TMPDIR", base)
	d, err := openDirs("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// Another process's, made after openDirs, which removes those of
	// supervisors that no longer run.
	other := filepath.Join(base, tempStem(os.Getpid()+1)+"1-1")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := TempDirs(os.Getpid()); len(got) != 1 || got[0] != d.root {
		t.Errorf("TempDirs while it runs: %v, want [%s]", got, d.root)
	}
	d.close()
	if got := TempDirs(os.Getpid()); len(got) != 0 {
		t.Errorf("TempDirs once stopped: %v, want none", got)
	}
	if got := TempDirs(os.Getpid() + 1); len(got) != 1 || got[0] != other {
		t.Errorf("TempDirs of the other process: %v, want [%s]", got, other)
	}
}

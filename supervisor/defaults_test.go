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
	name := fmt.Sprintf("/%s%d.%d-4294967295", tempPrefix, os.Getpid(), self.StartTicks)
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

package supervisor

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
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

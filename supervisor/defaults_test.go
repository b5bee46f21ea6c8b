package supervisor

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	if c.FirstPort != 30000 || c.LastPort != 30999 || c.MaxInstances != 64 || c.StopGrace != 5*time.Second ||
		c.PortCooldown != 2*time.Second || c.SeatTTL != 10*time.Second || c.MaxPlayers != d.MaxPlayers {
		t.Fatalf("defaults not applied: %+v", c)
	}
	for name, bad := range map[string]Config{
		"empty range":   {FirstPort: 200, LastPort: 100},
		"port zero":     {FirstPort: 0, LastPort: 100},
		"negative max":  {MaxInstances: -1},
		"warm too big":  {MaxInstances: 2, Warm: 3},
		"negative time": {StopGrace: -time.Second},
		"players":       {MaxPlayers: 70000},
		"probe":         {Probe: "ping", Command: []string{"true"}},
		"probe no cmd":  {Probe: "teeworlds"},
	} {
		if _, err := New(bad, zerolog.Nop()); err == nil {
			t.Errorf("%s: New accepted %+v", name, bad)
		}
	}
}

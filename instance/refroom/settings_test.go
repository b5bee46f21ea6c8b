package refroom

import (
	"testing"
	"time"
)

func TestSettingsRoundTrip(t *testing.T) {
	c := Config{MinPlayers: 3, Countdown: 0, MatchDuration: 90 * time.Second, SilenceTimeout: 5 * time.Second}
	got, err := ParseSettings(c.Settings(), 4)
	if err != nil || got != c {
		t.Fatalf("ParseSettings(Settings()) = %+v, %v; want %+v", got, err, c)
	}
}

package refroom

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Config is a room's rules, from the settings the host hands over in Start.
// How long an empty room lives is not among them: the supervisor ends
// every room, whatever game it plays, once nobody has been in it for
// [supervisor] empty_timeout.
type Config struct {
	MinPlayers     int           // min_players: connected and ready to start
	Countdown      time.Duration // countdown: from all ready to the start
	MatchDuration  time.Duration // match_duration: length of a match
	SilenceTimeout time.Duration // silence_timeout: a silent player is dropped
}

// DefaultConfig returns the rules when no setting says otherwise.
func DefaultConfig() Config {
	return Config{
		MinPlayers:     2,
		Countdown:      3 * time.Second,
		MatchDuration:  120 * time.Second,
		SilenceTimeout: 10 * time.Second,
	}
}

// MaxPlayers is the largest room: a slot is one byte on the wire.
const MaxPlayers = 255

// durationSettings maps each duration setting to its field, and says
// whether zero is allowed: a zero countdown starts the match at once.
var durationSettings = map[string]struct {
	field     func(*Config) *time.Duration
	zeroValid bool
}{
	"countdown":       {func(c *Config) *time.Duration { return &c.Countdown }, true},
	"match_duration":  {func(c *Config) *time.Duration { return &c.MatchDuration }, false},
	"silence_timeout": {func(c *Config) *time.Duration { return &c.SilenceTimeout }, false},
}

// ParseSettings reads a room's settings over DefaultConfig. Durations are
// Go duration strings ("3s", "1m30s"); an unknown key is an error, so a
// typo does not silently keep a default.
func ParseSettings(settings map[string]string, maxPlayers int) (Config, error) {
	c := DefaultConfig()
	if maxPlayers < 1 || maxPlayers > MaxPlayers {
		return c, fmt.Errorf("refroom: max players %d is not 1-%d", maxPlayers, MaxPlayers)
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		if k == "min_players" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxPlayers {
				return c, fmt.Errorf("refroom: setting min_players=%q: want a whole number from 1 to max players (%d)", v, maxPlayers)
			}
			c.MinPlayers = n
			continue
		}
		ds, ok := durationSettings[k]
		if !ok {
			return c, fmt.Errorf("refroom: unknown setting %q (known: min_players, %s)", k, knownDurations())
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d == 0 && !ds.zeroValid {
			want := "a positive"
			if ds.zeroValid {
				want = "a zero or positive"
			}
			return c, fmt.Errorf("refroom: setting %s=%q: want %s Go duration such as \"3s\"", k, v, want)
		}
		*ds.field(&c) = d
	}
	// A room smaller than the default minimum starts when it is full.
	c.MinPlayers = min(c.MinPlayers, maxPlayers)
	return c, nil
}

func knownDurations() string {
	s := ""
	for i, k := range slices.Sorted(maps.Keys(durationSettings)) {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

package supervisor

import (
	"slices"
	"testing"
)

// A room's environment is PATH, its directory as HOME and the variables
// passed by name, nothing else of the lobby's; the built-in reference
// room runs on one processor unless a GOMAXPROCS is passed.
func TestRoomEnv(t *testing.T) {
	t.Setenv("PATH", "/bin")
	t.Setenv("FOYER_TEST_SECRET", "lobby's own")
	t.Setenv("TZ", "UTC")
	t.Setenv("GOMAXPROCS", "3")
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"built-in room", Config{PassEnv: []string{"TZ", "UNSET"}}, []string{"PATH=/bin", "HOME=/r", "TZ=UTC", "GOMAXPROCS=1"}},
		{"built-in room, GOMAXPROCS passed", Config{PassEnv: []string{"GOMAXPROCS"}}, []string{"PATH=/bin", "HOME=/r", "GOMAXPROCS=3"}},
		{"a game of its own", Config{Command: []string{"/game"}, PassEnv: []string{"TZ", "HOME"}}, []string{"PATH=/bin", "HOME=/r", "TZ=UTC"}},
	} {
		if got := roomEnv(c.cfg, "/r"); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/instance/keeper"
)

// DefaultConfig returns the configuration documented in config.toml:
// ports 30000-30999, 64 instances, 4 players, no warm pool, the built-in
// reference room, and the timeouts documented on Config. Callers start from
// it and change what they need: New takes every field as given.
func DefaultConfig() Config {
	return Config{
		FirstPort:       30000,
		LastPort:        30999,
		MaxInstances:    64,
		MaxPlayers:      4,
		SpawnTimeout:    5 * time.Second,
		HealthTimeout:   6 * time.Second,
		StopGrace:       5 * time.Second,
		PortCooldown:    2 * time.Second,
		PortQuarantine:  30 * time.Second,
		SeatTTL:         10 * time.Second,
		ReconnectGrace:  30 * time.Second,
		SeatsPerAddress: 2,
		RoomsPerNetwork: 16,
		MaxWaiting:      5 * time.Minute,
		EmptyTimeout:    60 * time.Second,
		MaxLifetime:     12 * time.Hour,
		WarmMaxAge:      30 * time.Second,
		ReattachGrace:   30 * time.Second,
		PassSocket:      true,
	}
}

// check says what in c cannot work, every problem at once; a zero is a
// value like any other, refused where it means nothing.
func (c Config) check() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"spawn_timeout", c.SpawnTimeout}, {"health_timeout", c.HealthTimeout}, {"stop_grace", c.StopGrace},
		{"port_cooldown", c.PortCooldown}, {"port_quarantine", c.PortQuarantine}, {"seat_ttl", c.SeatTTL},
		{"reconnect_grace", c.ReconnectGrace},
		{"warm_max_age", c.WarmMaxAge}, {"reattach_grace", c.ReattachGrace}, {"max_waiting", c.MaxWaiting},
		{"empty_timeout", c.EmptyTimeout},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %v is not above 0", d.name, d.v))
		}
	}
	if c.MaxLifetime < 0 {
		errs = append(errs, fmt.Errorf("max_lifetime %v is below 0 (0 sets no limit)", c.MaxLifetime))
	}
	if c.FirstPort == 0 || c.FirstPort > c.LastPort {
		errs = append(errs, fmt.Errorf("port range %d-%d is empty or starts at 0", c.FirstPort, c.LastPort))
	}
	if c.MaxInstances < 1 {
		errs = append(errs, fmt.Errorf("max_instances %d is below 1", c.MaxInstances))
	}
	if c.SeatsPerAddress < 1 || c.RoomsPerNetwork < 1 {
		errs = append(errs, fmt.Errorf("seats_per_address %d and rooms_per_network %d must be 1 or more", c.SeatsPerAddress, c.RoomsPerNetwork))
	}
	if c.MaxPlayers < 1 || c.MaxPlayers > math.MaxUint16 {
		errs = append(errs, fmt.Errorf("max_players %d is out of range", c.MaxPlayers))
	}
	if c.Warm < 0 || c.Warm > c.MaxInstances {
		errs = append(errs, fmt.Errorf("warm %d is not within 0..max_instances (%d)", c.Warm, c.MaxInstances))
	}
	switch {
	case c.Probe != "" && c.Probe != keeper.ProbeTeeworlds && c.Probe != keeper.ProbeEndpoint && c.Probe != keeper.ProbeNone:
		errs = append(errs, fmt.Errorf("probe %q is not \"teeworlds\", \"endpoint\" or \"none\"", c.Probe))
	case c.Probe != "" && len(c.Command) == 0:
		errs = append(errs, fmt.Errorf("probe %q needs a command (the built-in room reports over go-plugin)", c.Probe))
	}
	if len(c.Command) > 0 {
		if err := Runnable(c.Command[0]); err != nil {
			errs = append(errs, err)
		}
	}
	if c.DataDir != "" && (!filepath.IsAbs(c.DataDir) || c.Probe == "") {
		errs = append(errs, fmt.Errorf("data_dir %q: want an absolute path, and a foreign server (probe set)", c.DataDir))
	}
	if c.StateDir != "" {
		if err := CheckStateDir(c.StateDir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.CheckRoomUsers(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("supervisor: config: %w", err)
	}
	return nil
}

// Runnable says why program cannot be run as a room's server, or nil: it
// must be found (an absolute path, or a name on PATH), be a file and be
// executable. Checked at the start, so that a broken command stops the
// lobby with the reason rather than failing every CREATE.
func Runnable(program string) error {
	path, err := exec.LookPath(program)
	if err != nil {
		return fmt.Errorf("command %q: %w", program, unwrapExec(err))
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("command %q: %w", program, err)
	case fi.IsDir():
		return fmt.Errorf("command %q is a directory", program)
	case unix.Access(path, unix.X_OK) != nil:
		return fmt.Errorf("command %q is not executable", program)
	}
	return nil
}

// unwrapExec drops os/exec's repetition of the name from its error.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		switch {
		case errors.Is(ee.Err, exec.ErrNotFound):
			return errors.New("not found on PATH")
		case errors.Is(ee.Err, fs.ErrPermission):
			return errors.New("is not executable")
		}
		return ee.Err
	}
	return err
}

// maxStateDir bounds the state directory's path: a room's socket,
// STATE_DIR/rooms/ID/pluginNNNNNNNNNN, must fit a unix socket address
// (108 bytes with its terminating zero).
const maxStateDir = 107 - len("/rooms/4294967295/plugin4294967295")

// CheckStateDir says why rooms could not use dir as their state
// directory, or nil. Besides its path, it checks that the directory, if
// it exists, is trusted (see checkTrusted): whatever is in it decides
// which processes the lobby adopts and signals.
func CheckStateDir(dir string) error {
	switch {
	case !filepath.IsAbs(dir):
		return fmt.Errorf("state_dir %q is not an absolute path", dir)
	case len(filepath.Clean(dir)) > maxStateDir:
		return fmt.Errorf("state_dir %q is longer than %d bytes: the rooms' sockets would not fit a unix socket address", dir, maxStateDir)
	}
	return checkTrusted(dir)
}

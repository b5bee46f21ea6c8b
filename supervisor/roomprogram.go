package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
)

// RoomProgram is the executable of the rooms this executable runs itself
// (the reference room, the keeper of a foreign server, the warden of a
// room run as its user) when it is beside it: cmd/foyer-room, the
// instance subcommand alone. A room of it maps and initialises about
// half the code a room of the whole foyer executable does, for about
// 7 MB less resident memory per room, and an idle room of it does not
// wake every second, as every process linking the NATS server does
// (its pse package samples the process's CPU use from its init on):
// BenchmarkServeIdleRooms measures both.
const RoomProgram = "foyer-room"

// roomProgram is the command of the rooms this executable runs itself:
// RoomProgram's instance subcommand where RoomProgram is beside this
// executable, else this executable's own (beside false). A RoomProgram
// that is there but cannot run is an error: it would be a broken
// install, not a missing file.
func roomProgram() (argv []string, beside bool, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, false, fmt.Errorf("supervisor: locating the room program: %w", err)
	}
	room := filepath.Join(filepath.Dir(exe), RoomProgram)
	if _, err := os.Stat(room); errors.Is(err, fs.ErrNotExist) {
		return []string{exe, "instance"}, false, nil
	}
	if err := Runnable(room); err != nil {
		return nil, false, fmt.Errorf("supervisor: the room program: %w", err)
	}
	return []string{room, "instance"}, true, nil
}

// runsRoomProgram reports whether cfg's rooms run a program of this
// executable's: the reference room (no Command), the keeper (Probe
// without Keeper) or the warden (RoomUsers without Warden).
func runsRoomProgram(cfg Config) bool {
	return len(cfg.Command) == 0 || cfg.Probe != "" && len(cfg.Keeper) == 0 ||
		!cfg.RoomUsers.IsZero() && len(cfg.Warden) == 0
}

// noteRoomProgram logs, once at the start, that cfg's rooms run this
// executable's own instance subcommand for want of RoomProgram beside
// it: they work, each with more memory.
func noteRoomProgram(cfg Config, log zerolog.Logger) {
	if !runsRoomProgram(cfg) {
		return
	}
	if argv, beside, err := roomProgram(); err == nil && !beside {
		log.Warn().Str("missing", filepath.Join(filepath.Dir(argv[0]), RoomProgram)).
			Msg("rooms run this executable's instance subcommand, about 7 MB more resident memory each than " +
				RoomProgram + ", which is not beside it (make build builds both; install them together)")
	}
}

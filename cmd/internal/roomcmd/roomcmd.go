//go:build linux

// Package roomcmd is the instance command, which serves one room to the
// supervisor of 'foyer serve': the reference room, the keeper of a
// foreign server, or a room's warden where rooms run as users of their
// own. Both executables have it: foyer-room, which
// links nothing else and is what 'foyer serve' runs when it finds it
// beside itself, and foyer, as its hidden subcommand.
package roomcmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cmd/internal/cli"
	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/keeper"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/roomuser"
)

var help = cli.Help{
	Usage: []string{
		"foyer instance",
		"foyer instance --probe PROBE -- COMMAND [ARGS...]",
	},
	About: `Serve one room to the supervisor of 'foyer serve', which starts this
command for every room (foyer-room's, when foyer-room is beside the
foyer executable). Without arguments it is a reference room, what
the supervisor runs when [supervisor] command is empty or names it. With
--probe it keeps a game server that knows nothing of Foyer: COMMAND runs
as its child on the room's port, and PROBE ("teeworlds" or "none") says
how its status is learnt; the supervisor runs this for [supervisor]
command with probe set. Run by hand it explains itself and exits 1.`,
	Example: []string{
		"foyer instance --help",
		"# config.toml; an empty command runs foyer-room's instance:",
		"#   [supervisor]",
		`#   command = ["/usr/local/bin/foyer-room", "instance"]`,
	},
}

// Run serves one room to the supervisor that started this process: the
// reference room, or the keeper of a foreign server.
func Run(args []string, stdout, stderr io.Writer) int {
	c := cli.New("instance", help, stdout, stderr)
	probe := c.Flags.String("probe", "", "keep COMMAND as the room's server, its status learnt by `PROBE` (teeworlds or none)")
	data := c.Flags.String("data", "", "the kept server's HOME, a `DIR` kept from one room to the next")
	// Set by the supervisor of a lobby run as root: see package roomuser.
	warden := c.Flags.String(strings.TrimPrefix(roomuser.WardenArg, "--"), "", "be the warden of the room whose cgroups are `TREE/ROOM`")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if *warden != "" {
		if err := roomuser.Warden(*warden); err != nil {
			fmt.Fprintf(stderr, "foyer instance: %v\n", err)
			return cli.ExitFail
		}
		return cli.ExitOK
	}
	// The descriptor a room run as its user was executed through
	// (roomuser.ProgramFD) reaches nothing this room starts.
	if err := proc.CloseOnExecFrom(roomuser.ProgramFD); err != nil {
		fmt.Fprintf(stderr, "foyer instance: %v\n", err)
		return cli.ExitFail
	}
	// The SDK takes over os.Stderr; the log keeps the original, the
	// room's log in its directory once the room has started.
	log := zerolog.New(stderr).With().Timestamp().Logger()
	if *probe == "" {
		if code, ok := c.NoArgs(pos); !ok {
			return code
		}
		instance.Serve(refroom.New(log))
		return cli.ExitFail // Serve exits the process
	}
	k, err := keeper.New(keeper.Config{Probe: *probe, Data: *data, Command: pos}, log, stderr)
	if err != nil {
		return c.UsageError("%v", err)
	}
	instance.Serve(k)
	return cli.ExitFail
}

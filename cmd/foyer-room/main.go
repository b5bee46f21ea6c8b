//go:build linux

// Command foyer-room runs the rooms of 'foyer serve': it is the foyer
// executable's instance subcommand (package roomcmd) alone, which 'foyer
// serve' runs for every room of its own, the reference room and the
// keepers of foreign servers, when it finds foyer-room beside itself
// (supervisor.RoomProgram). Linking nothing of the lobby, the cluster,
// the admin pages or the client commands, a room maps and initialises
// about half the code it would as 'foyer instance': an idle room's
// resident memory is about 14 MB rather than 21 MB, and it no longer
// wakes every second for the NATS server's CPU sampling.
//
//	foyer-room instance [flags]
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cmd/internal/cli"
	"github.com/foyerlobby/foyer/cmd/internal/roomcmd"
	"github.com/foyerlobby/foyer/internal/buildinfo"
)

func main() {
	// Durations in the log carry their unit, as in foyer's.
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs "foyer-room instance ARGS" as "foyer instance ARGS".
func dispatch(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "instance":
		return roomcmd.Run(args[1:], stdout, stderr)
	case len(args) == 1 && (args[0] == "--version" || args[0] == "version"):
		fmt.Fprintf(stdout, "foyer-room %s\n", buildinfo.String())
		return cli.ExitOK
	}
	fmt.Fprintln(stderr, "Usage: foyer-room instance [flags]")
	fmt.Fprintln(stderr, "\nfoyer-room runs the rooms of 'foyer serve', which starts it beside itself;")
	fmt.Fprintln(stderr, "it is 'foyer instance' alone. Run 'foyer-room instance --help' for its flags.")
	return cli.ExitUsage
}

// Command foyer runs a Foyer lobby and talks to one.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cmd/internal/cli"
	"github.com/foyerlobby/foyer/internal/buildinfo"
)

// commands are the subcommands, in the order --help lists them: serve,
// the client commands, and the hidden instance.
var commands = slices.Concat(
	[]cli.Entry{{Name: "serve", Summary: "run the lobby and its supervisor", Run: runServe}},
	cli.Clients,
	cli.Operators,
	[]cli.Entry{
		{Name: "token", Summary: "print a new random admin token", Run: runToken},
		{Name: "nats-user", Summary: "make a cluster host's NATS user, for a NATS server of one's own", Run: runNATSUser},
		{Name: "instance", Summary: "run a reference room (started by the supervisor)", Hidden: true, Run: runInstance},
	},
)

func main() {
	// Durations in the log carry their unit: "10s", "1.5ms".
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the command args name. "foyer help COMMAND" is
// "foyer COMMAND --help".
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr) // a command line that does nothing is a mistake
		return cli.ExitUsage
	}
	name := args[0]
	switch {
	case name == "-h" || name == "--help" || name == "help" && len(args) == 1:
		usage(stdout)
		return cli.ExitOK
	case name == "--version" || name == "version":
		fmt.Fprintf(stdout, "foyer %s\n", buildinfo.String())
		return cli.ExitOK
	case name == "help":
		name, args = args[1], []string{args[1], "--help"}
	}
	if c, ok := cli.Find(commands, name); ok {
		return c.Run(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "foyer: unknown command %q\nRun 'foyer --help' for usage.\n", name)
	return cli.ExitUsage
}

// usage is foyer --help, laid out as every command's --help is.
func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: foyer COMMAND [flags] [args]")
	fmt.Fprintln(w, "       foyer help COMMAND")
	fmt.Fprintln(w, "       foyer --version")
	fmt.Fprintln(w, "\nFoyer is a UDP lobby for multiplayer game rooms: 'foyer serve' runs one,")
	fmt.Fprintln(w, "the other commands talk to one. Flags are GNU-style (--flag VALUE or")
	fmt.Fprintln(w, "--flag=VALUE, before or after the arguments; -- ends them).")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'foyer COMMAND --help' for a command's flags and an example.")
	fmt.Fprintln(w, "\nExample:\n  foyer serve --config config.toml\n  foyer create --json 127.0.0.1:7777")
}

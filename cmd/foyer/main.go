// Command foyer runs a Foyer lobby and talks to one.
package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand: it parses its own flags from args and returns
// the process exit code.
type command struct {
	name    string
	summary string
	hidden  bool
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{name: "serve", summary: "run the lobby and its supervisor", run: runServe},
	{name: "rooms", summary: "list a lobby's rooms", run: runRooms},
	{name: "create", summary: "create a room and print its port", run: runCreate},
	{name: "join", summary: "join a room and print its port", run: runJoin},
	{name: "watch", summary: "show a lobby's rooms live", run: runWatch},
	{name: "play", summary: "play the reference room from the terminal", run: runPlay},
	{name: "instance", summary: "run a reference room (started by the supervisor)", hidden: true, run: runInstance},
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "foyer: unknown command %q (see foyer --help)\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "foyer: a UDP lobby for multiplayer game rooms")
	fmt.Fprintln(w, "\nUsage: foyer COMMAND [flags] [args]\n\nCommands:")
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'foyer COMMAND --help' for a command's flags and an example.")
}

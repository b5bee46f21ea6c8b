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

// dispatch runs the command args name. "foyer help COMMAND" is
// "foyer COMMAND --help".
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr) // a command line that does nothing is a mistake
		return exitUsage
	}
	name := args[0]
	switch {
	case name == "-h" || name == "--help" || name == "help" && len(args) == 1:
		usage(stdout)
		return exitOK
	case name == "help":
		name, args = args[1], []string{args[1], "--help"}
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "foyer: unknown command %q\nRun 'foyer --help' for usage.\n", name)
	return exitUsage
}

// usage is foyer --help, laid out as every command's --help is.
func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: foyer COMMAND [flags] [args]")
	fmt.Fprintln(w, "       foyer help COMMAND")
	fmt.Fprintln(w, "\nFoyer is a UDP lobby for multiplayer game rooms: 'foyer serve' runs one,")
	fmt.Fprintln(w, "the other commands talk to one. Flags are GNU-style (--flag VALUE or")
	fmt.Fprintln(w, "--flag=VALUE, before or after the arguments; -- ends them).")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'foyer COMMAND --help' for a command's flags and an example.")
	fmt.Fprintln(w, "\nExample:\n  foyer serve --config config.toml\n  foyer create --json 127.0.0.1:7777")
}

// Package cli is the foyer binary's command line: how every command reads
// its flags and reports problems, the client commands that talk to a
// lobby (rooms, create, join, watch, play) and the operator commands that
// talk to a host's admin listener (stop, drain, logs).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
)

// Every command, serve and instance included, reads its command line
// through cli: GNU-style long flags (--config PATH or --config=PATH),
// flags before, between or after the positional arguments, "--" ending the
// flags, and one --help layout (usage lines, what the command does, its
// flags, an example). It is built on package flag, which also accepts a
// single dash (-config) and keeps its own wording for a flag it does not
// know ("flag provided but not defined: -x").

// Exit codes of every command.
const (
	ExitOK    = 0
	ExitFail  = 1 // the command failed: the lobby said no, did not answer, a socket or the config was refused
	ExitUsage = 2 // the command line was wrong
)

// Entry is one subcommand: it parses its own flags from args and returns
// the process exit code.
type Entry struct {
	Name    string
	Summary string
	Hidden  bool // left out of foyer --help
	Run     func(args []string, stdout, stderr io.Writer) int
}

// Clients are the client commands, in the order foyer --help lists them.
var Clients = []Entry{
	{Name: "rooms", Summary: "list a lobby's rooms", Run: Rooms},
	{Name: "create", Summary: "create a room and print its port", Run: Create},
	{Name: "join", Summary: "join a room, by id or by code, and print its port", Run: Join},
	{Name: "quick", Summary: "join the fullest matching room, or a new one", Run: Quick},
	{Name: "watch", Summary: "show a lobby's rooms live", Run: Watch},
	{Name: "play", Summary: "play the reference room from the terminal", Run: Play},
}

// Operators are the commands that talk to a host's admin listener, in the
// order foyer --help lists them.
var Operators = []Entry{
	{Name: "stop", Summary: "stop a room (its game is asked, then it is killed)", Run: Stop},
	{Name: "drain", Summary: "start no new room on a host; its rooms play on", Run: Drain},
	{Name: "logs", Summary: "print the last lines of a room's log", Run: Logs},
}

// Find returns the entry of the command name.
func Find(entries []Entry, name string) (Entry, bool) {
	i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return entries[i], true
}

// Help is what a command's --help prints besides its flags.
type Help struct {
	Usage   []string // "foyer rooms [flags] [ADDR]", one line per form
	About   string
	Example []string
}

// Command is one run of a command: its flags, its writers, and how it
// reports problems.
type Command struct {
	name           string
	Flags          *flag.FlagSet
	help           Help
	lobby          *lobbyFlags // nil for a command that talks to no lobby
	stdout, stderr io.Writer
}

// New starts a run of the command name, whose --help says h, writing to
// stdout and stderr; the caller adds its flags to Flags, then calls Parse.
func New(name string, h Help, stdout, stderr io.Writer) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// parse prints --help to stdout and flag errors in its own words.
	fs.SetOutput(io.Discard)
	return &Command{name: name, Flags: fs, help: h, stdout: stdout, stderr: stderr}
}

// parse parses flags placed before, between or after the positional
// arguments ("--" ends the flags), checks the lobby flags if the command has
// them, and returns the positional arguments. When it returns ok false the
// command is over and code is its exit code: 0 after --help, 2 after a flag
// error, which it has reported.
func (c *Command) Parse(args []string) (pos []string, code int, ok bool) {
	pos, code, ok = c.parseFlags(args)
	if ok && c.lobby != nil {
		code, ok = c.lobby.check(c)
	}
	return pos, code, ok
}

func (c *Command) parseFlags(args []string) (pos []string, code int, ok bool) {
	for {
		err := c.Flags.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printHelp()
			return nil, ExitOK, false
		}
		if err != nil {
			return nil, c.UsageError("%v", err), false
		}
		rest := c.Flags.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), ExitOK, true
		}
		if len(rest) == 0 {
			return pos, ExitOK, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports a wrong command line and returns ExitUsage.
func (c *Command) UsageError(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "foyer %s: %s\n", c.name, fmt.Sprintf(format, a...))
	fmt.Fprintf(c.stderr, "Run 'foyer %s --help' for usage.\n", c.name)
	return ExitUsage
}

// noArgs is the usage error of a command that takes no positional
// arguments; ok is true when pos is empty.
func (c *Command) NoArgs(pos []string) (code int, ok bool) {
	if len(pos) == 0 {
		return ExitOK, true
	}
	return c.UsageError("takes no arguments, got %s", count(len(pos), "argument")), false
}

// fail reports a failed command in one line and returns ExitFail. Errors
// from package client already name the operation, the lobby and what was
// expected.
func (c *Command) Fail(err error) int {
	fmt.Fprintf(c.stderr, "foyer: %v\n", err)
	return ExitFail
}

// count says "1 argument", "2 arguments".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (c *Command) printHelp() {
	w := c.stdout
	for i, u := range c.help.Usage {
		prefix := "Usage: "
		if i > 0 {
			prefix = "       "
		}
		fmt.Fprintln(w, prefix+u)
	}
	fmt.Fprintf(w, "\n%s\n", c.help.About)
	fmt.Fprintln(w, "\nFlags:")
	c.Flags.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if typ != "" {
			fmt.Fprintf(w, " %s", typ)
		}
		fmt.Fprintf(w, "\n        %s", usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	fmt.Fprintln(w, "  --help\n        show this help")
	fmt.Fprintln(w, "\nExample:")
	for _, e := range c.help.Example {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

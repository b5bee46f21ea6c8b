package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
	exitOK    = 0
	exitFail  = 1 // the command failed: the lobby said no, did not answer, a socket or the config was refused
	exitUsage = 2 // the command line was wrong
)

// help is what a command's --help prints besides its flags.
type help struct {
	usage   []string // "foyer rooms [flags] [ADDR]", one line per form
	about   string
	example []string
}

// cli is one run of a command: its flags, its writers, and how it reports
// problems.
type cli struct {
	name           string
	fs             *flag.FlagSet
	help           help
	lobby          *lobbyFlags // nil for a command that talks to no lobby
	stdout, stderr io.Writer
}

func newCLI(name string, h help, stdout, stderr io.Writer) *cli {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// parse prints --help to stdout and flag errors in its own words.
	fs.SetOutput(io.Discard)
	return &cli{name: name, fs: fs, help: h, stdout: stdout, stderr: stderr}
}

// parse parses flags placed before, between or after the positional
// arguments ("--" ends the flags), checks the lobby flags if the command has
// them, and returns the positional arguments. When it returns ok false the
// command is over and code is its exit code: 0 after --help, 2 after a flag
// error, which it has reported.
func (c *cli) parse(args []string) (pos []string, code int, ok bool) {
	pos, code, ok = c.parseFlags(args)
	if ok && c.lobby != nil {
		code, ok = c.lobby.check(c)
	}
	return pos, code, ok
}

func (c *cli) parseFlags(args []string) (pos []string, code int, ok bool) {
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printHelp()
			return nil, exitOK, false
		}
		if err != nil {
			return nil, c.usageError("%v", err), false
		}
		rest := c.fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), exitOK, true
		}
		if len(rest) == 0 {
			return pos, exitOK, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports a wrong command line and returns exitUsage.
func (c *cli) usageError(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "foyer %s: %s\n", c.name, fmt.Sprintf(format, a...))
	fmt.Fprintf(c.stderr, "Run 'foyer %s --help' for usage.\n", c.name)
	return exitUsage
}

// noArgs is the usage error of a command that takes no positional
// arguments; ok is true when pos is empty.
func (c *cli) noArgs(pos []string) (code int, ok bool) {
	if len(pos) == 0 {
		return exitOK, true
	}
	return c.usageError("takes no arguments, got %s", count(len(pos), "argument")), false
}

// fail reports a failed command in one line and returns exitFail. Errors
// from package client already name the operation, the lobby and what was
// expected.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "foyer: %v\n", err)
	return exitFail
}

// count says "1 argument", "2 arguments".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (c *cli) printHelp() {
	w := c.stdout
	for i, u := range c.help.usage {
		prefix := "Usage: "
		if i > 0 {
			prefix = "       "
		}
		fmt.Fprintln(w, prefix+u)
	}
	fmt.Fprintf(w, "\n%s\n", c.help.about)
	fmt.Fprintln(w, "\nFlags:")
	c.fs.VisitAll(func(f *flag.Flag) {
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
	for _, e := range c.help.example {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet"
)

// The lobby a client command talks to when given no address, and the port
// it adds to an address given without one.
const (
	defaultLobby = "127.0.0.1:7777"
	defaultPort  = "7777"
)

// Exit codes of the client commands.
const (
	exitOK    = 0
	exitFail  = 1 // the lobby said no, did not answer, or could not be reached
	exitUsage = 2
)

// help is what a command's --help prints besides its flags.
type help struct {
	usage   []string // "foyer rooms [flags] [ADDR]", one line per form
	about   string
	example []string
}

// cli is one run of a client command: its flags, its writers, and how it
// reports problems.
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

// fail reports a failed command in one line and returns exitFail. Errors
// from package client already name the operation, the lobby and what was
// expected.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "foyer: %v\n", err)
	return exitFail
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
	fmt.Fprintln(w, "\nExample:")
	for _, e := range c.help.example {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// interruptContext is done when Ctrl-C or a SIGTERM asks a long-running
// command (watch, play) to stop, so that it can end cleanly.
func interruptContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// lobbyFlags are the flags of every command that talks to a lobby.
type lobbyFlags struct {
	timeout  time.Duration
	attempts int
	legacy   bool
}

// lobbyFlags adds the lobby flags with these defaults; parse checks them.
func (c *cli) lobbyFlags(timeout time.Duration, attempts int) *lobbyFlags {
	f := &lobbyFlags{}
	c.lobby = f
	c.fs.DurationVar(&f.timeout, "timeout", timeout, "how long one attempt waits for the lobby's answer")
	c.fs.IntVar(&f.attempts, "attempts", attempts, "how many times a request is sent before giving up")
	c.fs.BoolVar(&f.legacy, "legacy", false, "talk to the lobby in the original game's 17-byte header, not the 8-byte one")
	return f
}

func (f *lobbyFlags) options() []client.Option {
	opts := []client.Option{client.WithTimeout(f.timeout), client.WithAttempts(f.attempts)}
	if f.legacy {
		opts = append(opts, client.WithFraming(packet.Legacy))
	}
	return opts
}

// check rejects flag values the client would silently replace.
func (f *lobbyFlags) check(c *cli) (int, bool) {
	if f.timeout <= 0 {
		return c.usageError("--timeout must be positive, not %v", f.timeout), false
	}
	if f.attempts < 1 {
		return c.usageError("--attempts must be at least 1, not %d", f.attempts), false
	}
	return exitOK, true
}

// lobbyAddr completes a lobby address from the command line: none is the
// local lobby, a host without a port gets the default port.
func lobbyAddr(arg string) string {
	if arg == "" {
		return defaultLobby
	}
	if _, _, err := net.SplitHostPort(arg); err == nil {
		return arg
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(arg, "["), "]"), defaultPort)
}

// dial opens a client to the lobby at arg, reporting failure as fail does.
func (c *cli) dial(arg string, f *lobbyFlags) (*client.Client, int, bool) {
	lc, err := client.Dial(lobbyAddr(arg), f.options()...)
	if err != nil {
		return nil, c.fail(err), false
	}
	return lc, exitOK, true
}

// withLobby ends a command that talks to one lobby: pos holds at most its
// ADDR (none is the local lobby), run gets a client of that lobby with the
// command's lobby flags, and a failure to dial or to run is reported in one
// line.
func (c *cli) withLobby(pos []string, run func(*client.Client) error) int {
	if len(pos) > 1 {
		return c.usageError("takes at most one ADDR, got %d arguments", len(pos))
	}
	addr := ""
	if len(pos) == 1 {
		addr = pos[0]
	}
	lc, code, ok := c.dial(addr, c.lobby)
	if !ok {
		return code
	}
	defer lc.Close()
	if err := run(lc); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// roomJSON is a room in the commands' JSON output.
type roomJSON struct {
	ID         uint32 `json:"id"`
	State      string `json:"state"`
	Players    uint16 `json:"players"`
	MaxPlayers uint16 `json:"max_players"`
	Port       uint16 `json:"port"`
}

func roomsJSON(rooms []packet.Room) []roomJSON {
	out := make([]roomJSON, 0, len(rooms)) // "[]", never null
	for _, r := range rooms {
		out = append(out, roomJSON{ID: r.ID, State: r.State.String(), Players: r.Players, MaxPlayers: r.MaxPlayers, Port: r.Port})
	}
	return out
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) // only marshals types of this file: cannot fail
}

// roomTitles head the columns every room table starts with; roomCells
// fills them for one room.
var roomTitles = []string{"ROOM", "STATE", "PLAYERS", "PORT"}

func roomCells(r packet.Room) []string {
	return []string{fmt.Sprint(r.ID), r.State.String(), fmt.Sprintf("%d/%d", r.Players, r.MaxPlayers), fmt.Sprint(r.Port)}
}

// roomColumn is a column a room table shows after the ones every room
// table starts with.
type roomColumn struct {
	title string
	cell  func(packet.Room) string
}

// writeRooms writes one row per room: the columns of roomTitles, then extra.
func writeRooms(w io.Writer, rooms []packet.Room, extra ...roomColumn) {
	titles := slices.Clone(roomTitles)
	for _, col := range extra {
		titles = append(titles, col.title)
	}
	rows := make([][]string, 0, len(rooms))
	for _, r := range rooms {
		row := roomCells(r)
		for _, col := range extra {
			row = append(row, col.cell(r))
		}
		rows = append(rows, row)
	}
	writeTable(w, titles, rows)
}

// writeTable writes rows as aligned columns under a title row.
func writeTable(w io.Writer, titles []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(titles, "\t"))
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

package cli

import (
	"context"
	"encoding/json"
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
	notes    *waitNotes // nil: say nothing while waiting
}

// lobbyFlags adds the lobby flags with these defaults; parse checks them.
func (c *Command) lobbyFlags(timeout time.Duration, attempts int) *lobbyFlags {
	f := &lobbyFlags{notes: newWaitNotes(c.name, c.stderr)}
	c.lobby = f
	c.Flags.DurationVar(&f.timeout, "timeout", timeout, "how long one attempt waits for the lobby's answer")
	c.Flags.IntVar(&f.attempts, "attempts", attempts, "how many times a request is sent before giving up")
	c.Flags.BoolVar(&f.legacy, "legacy", false, "talk to the lobby in the original game's 17-byte header, not the 8-byte one")
	return f
}

func (f *lobbyFlags) options() []client.Option {
	opts := []client.Option{client.WithTimeout(f.timeout), client.WithAttempts(f.attempts)}
	if f.legacy {
		opts = append(opts, client.WithFraming(packet.Legacy))
	}
	if f.notes != nil {
		opts = append(opts, client.WithAttemptFunc(f.notes.attempt))
	}
	return opts
}

// check rejects flag values the client would silently replace.
func (f *lobbyFlags) check(c *Command) (int, bool) {
	if f.timeout <= 0 {
		return c.UsageError("--timeout must be positive, not %v", f.timeout), false
	}
	if f.attempts < 1 {
		return c.UsageError("--attempts must be at least 1, not %d", f.attempts), false
	}
	return ExitOK, true
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
func (c *Command) dial(arg string, f *lobbyFlags) (*client.Client, int, bool) {
	lc, err := client.Dial(lobbyAddr(arg), f.options()...)
	if err != nil {
		return nil, c.Fail(err), false
	}
	return lc, ExitOK, true
}

// withLobby ends a command that talks to one lobby: pos holds at most its
// ADDR (none is the local lobby), run gets a client of that lobby with the
// command's lobby flags, and a failure to dial or to run is reported in one
// line.
func (c *Command) withLobby(pos []string, run func(*client.Client) error) int {
	if len(pos) > 1 {
		return c.UsageError("takes at most one ADDR, got %s", count(len(pos), "argument"))
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
	err := run(lc)
	c.lobby.notes.stop()
	if err != nil {
		return c.Fail(err)
	}
	return ExitOK
}

// roomJSON is a room in the commands' JSON output.
type roomJSON struct {
	ID         uint32 `json:"id"`
	State      string `json:"state"`
	Players    uint16 `json:"players"`
	MaxPlayers uint16 `json:"max_players"`
	Port       uint16 `json:"port"`
	Host       string `json:"host,omitempty"` // the cluster host, from an admin listener only
	// What the lobby's extension lists besides.
	Code     string            `json:"code,omitempty"`
	Name     string            `json:"name,omitempty"`
	Mode     string            `json:"mode,omitempty"`
	Map      string            `json:"map,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	Password bool              `json:"password,omitempty"`
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

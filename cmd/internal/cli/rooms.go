package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

var roomsHelp = Help{
	Usage: []string{
		"foyer rooms [flags] [ADDR]",
		"foyer rooms --lan [--port 7777] [--wait 2s] [flags]",
		"foyer rooms --admin ADMIN_ADDR [--token-file FILE] [flags]",
	},
	About: `List a lobby's rooms: id, state, players/max and the room's UDP port.
ADDR is host:port; it defaults to ` + defaultLobby + `, and a host without a port
gets :` + defaultPort + `. A room list carries no age: 'foyer watch' shows how long
each room has been seen.

With --lan, find the lobbies on the local network instead: the request is
broadcast to --port on every IPv4 interface, and every lobby that answers
within --wait is listed with its address. Exits 1 if none answers.

With --filter (or --ext), list through the lobby's extension: the rooms
that match, page after page, with their join code, name, mode, map and
tags; private rooms are listed nowhere. A filter is key=value: mode, map,
name (a prefix), state (waiting|countdown|...), free (places), or any
other key for a tag.

With --admin, read the room table from the lobby's admin listener
(host:port or URL) instead: every room it keeps, registered servers and
the rooms of other cluster hosts too, with a HOST column when the rooms
are on more than one host. An admin listener off loopback wants its bearer
token: --token-file names the file that holds it.

` + waitingAbout,
	Example: []string{
		"foyer rooms 192.168.1.20",
		"foyer rooms --json 127.0.0.1:7777",
		"foyer rooms --lan --wait 1s",
		"foyer rooms --filter mode=ctf,state=waiting,free=1",
		"foyer rooms --admin 127.0.0.1:9477",
	},
}

func Rooms(args []string, stdout, stderr io.Writer) int {
	c := New("rooms", roomsHelp, stdout, stderr)
	asJSON := c.Flags.Bool("json", false, "print JSON instead of a table")
	lan := c.Flags.Bool("lan", false, "find lobbies on the local network by UDP broadcast")
	port := c.Flags.Uint("port", 7777, "with --lan: the lobby `port` to broadcast to")
	wait := c.Flags.Duration("wait", 2*time.Second, "with --lan: how long to collect answers")
	broadcast := c.Flags.String("broadcast", "", "with --lan: comma-separated `addresses` to send to instead of every interface's broadcast address")
	admin := c.Flags.String("admin", "", "read the room table from the admin listener at this `address` (shows each room's host)")
	tokenFile := c.Flags.String("token-file", "", "with --admin: the `file` holding the admin listener's bearer token")
	var filters listFlag
	c.Flags.Var(&filters, "filter", filterHelp)
	extended := c.Flags.Bool("ext", false, "list through the lobby's extension: with codes, names, modes, maps and tags")
	lf := c.lobbyFlags(client.DefaultTimeout, client.DefaultAttempts)
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if len(filters) > 0 || *extended {
		if *admin != "" || *lan {
			return c.UsageError("--filter and --ext list one lobby: no --admin, no --lan")
		}
		f, err := parseFilter(filters)
		if err != nil {
			return c.UsageError("--filter: %v", err)
		}
		return c.withLobby(pos, func(lc *client.Client) error {
			rooms, err := lc.Rooms(context.Background(), f)
			if err != nil {
				return err
			}
			switch {
			case *asJSON:
				writeJSON(stdout, lobbyJSON{Lobby: lc.Addr().String(), Rooms: entriesJSON(rooms)})
			case len(rooms) == 0:
				fmt.Fprintf(stdout, "no rooms on %s match\n", lc.Addr())
			default:
				writeEntries(stdout, rooms)
			}
			return nil
		})
	}
	if *admin != "" {
		if *lan || len(pos) > 0 {
			return c.UsageError("--admin reads one admin listener; it takes no ADDR and no --lan")
		}
		return c.adminRooms(*admin, *tokenFile, lf.timeout*time.Duration(lf.attempts), *asJSON)
	}
	if *tokenFile != "" {
		return c.UsageError("--token-file goes with --admin")
	}
	if *lan {
		if len(pos) > 0 {
			return c.UsageError("--lan finds lobbies itself; it takes no ADDR (got %q)", pos[0])
		}
		if *port == 0 || *port > 65535 {
			return c.UsageError("--port %d is not a UDP port", *port)
		}
		targets, err := parseAddrs(*broadcast)
		if err != nil {
			return c.UsageError("--broadcast: %v", err)
		}
		return c.lanRooms(uint16(*port), *wait, targets, *asJSON, lf)
	}
	return c.withLobby(pos, func(lc *client.Client) error {
		rooms, err := lc.List(context.Background())
		if err != nil {
			return err
		}
		switch {
		case *asJSON:
			writeJSON(stdout, lobbyJSON{Lobby: lc.Addr().String(), Rooms: roomsJSON(rooms)})
		case len(rooms) == 0:
			fmt.Fprintf(stdout, "no rooms on %s\n", lc.Addr())
		default:
			writeRooms(stdout, rooms)
		}
		return nil
	})
}

// entriesJSON are an extended listing's rooms in JSON output.
func entriesJSON(rooms []ext.Entry) []roomJSON {
	out := make([]roomJSON, 0, len(rooms))
	for _, e := range rooms {
		r := roomJSON{ID: e.ID, State: e.State.String(), Players: e.Players, MaxPlayers: e.MaxPlayers, Port: e.Port,
			Code: e.Code, Name: e.Name, Mode: e.Mode, Map: e.Map, Password: e.Password}
		for _, t := range e.Tags {
			if r.Tags == nil {
				r.Tags = map[string]string{}
			}
			r.Tags[t.Key] = t.Value
		}
		out = append(out, r)
	}
	return out
}

// writeEntries writes an extended listing as a table.
func writeEntries(w io.Writer, rooms []ext.Entry) {
	rows := make([][]string, 0, len(rooms))
	for _, e := range rooms {
		pr := packet.Room{ID: e.ID, Players: e.Players, MaxPlayers: e.MaxPlayers, Port: e.Port, State: e.State}
		var tags []string
		for _, t := range e.Tags {
			tags = append(tags, t.Key+"="+t.Value)
		}
		name := e.Name
		if e.Password {
			name += " (password)"
		}
		rows = append(rows, append(roomCells(pr), e.Code, orDash(name), orDash(e.Mode), orDash(e.Map), orDash(strings.Join(tags, ","))))
	}
	writeTable(w, append(slices.Clone(roomTitles), "CODE", "NAME", "MODE", "MAP", "TAGS"), rows)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lobbyJSON is one lobby and its rooms in JSON output.
type lobbyJSON struct {
	Lobby string     `json:"lobby"`
	Rooms []roomJSON `json:"rooms"`
}

func (c *Command) lanRooms(port uint16, wait time.Duration, targets []netip.Addr, asJSON bool, lf *lobbyFlags) int {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	opts := lf.options()
	if len(targets) > 0 {
		opts = append(opts, client.WithBroadcast(targets...))
	}
	lobbies, err := client.Discover(ctx, port, opts...)
	if errors.Is(err, client.ErrNoRoute) {
		fmt.Fprintln(c.stderr, "foyer: rooms --lan: this host has no network to broadcast on (no route for the query); "+
			"name the LAN's broadcast address, or a lobby's address, with --broadcast, e.g. --broadcast 192.168.1.255")
		return ExitFail
	}
	if err != nil {
		return c.Fail(err)
	}
	if asJSON {
		out := make([]lobbyJSON, 0, len(lobbies))
		for _, l := range lobbies {
			out = append(out, lobbyJSON{Lobby: l.Addr.String(), Rooms: roomsJSON(l.Rooms)})
		}
		writeJSON(c.stdout, out)
	} else if len(lobbies) > 0 {
		lanTable(c.stdout, lobbies)
	}
	if len(lobbies) == 0 {
		fmt.Fprintf(c.stderr, "foyer: rooms --lan: no lobby answered on UDP port %d within %v\n", port, wait)
		return ExitFail
	}
	return ExitOK
}

// lanTable is the room table with the lobby in front; a lobby without
// rooms still gets a row, so that it shows up at all.
func lanTable(w io.Writer, lobbies []client.Lobby) {
	var rows [][]string
	for _, l := range lobbies {
		if len(l.Rooms) == 0 {
			rows = append(rows, []string{l.Addr.String(), "(no rooms)"})
		}
		for _, r := range l.Rooms {
			rows = append(rows, append([]string{l.Addr.String()}, roomCells(r)...))
		}
	}
	writeTable(w, append([]string{"LOBBY"}, roomTitles...), rows)
}

// parseAddrs parses a comma-separated list of IP addresses; "" is none.
func parseAddrs(s string) ([]netip.Addr, error) {
	if s == "" {
		return nil, nil
	}
	var out []netip.Addr
	for _, f := range strings.Split(s, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// parseRoomID parses a room id as the lobby numbers them.
// isRoomID reports whether s is a room id rather than an address: a
// number alone, which no lobby address is.
func isRoomID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

func parseRoomID(s string) (uint32, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("room %q is not a room id (a number from 0 to %d)", s, uint32(1<<32-1))
	}
	return uint32(id), nil
}

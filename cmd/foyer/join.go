package main

import (
	"context"
	"fmt"
	"io"

	"github.com/foyerlobby/foyer/lobby/client"
)

var createHelp = help{
	usage: []string{"foyer create [flags] [ADDR]"},
	about: `Ask the lobby at ADDR to start a room, and print the room's id, its UDP
port, and the game address to send game traffic to. The lobby holds a seat
in the new room for this host. ADDR defaults to ` + defaultLobby + `.
Exits 1 if the lobby answers JOIN_FAILED (it cannot start a room) or does
not answer.`,
	example: []string{
		"foyer create 192.168.1.20:7777",
		"foyer create --json | jq .port",
	},
}

var joinHelp = help{
	usage: []string{"foyer join [flags] ADDR ROOM"},
	about: `Ask the lobby at ADDR for a seat in room ROOM, and print the room's UDP
port and the game address to send game traffic to. Exits 1 if the lobby
answers JOIN_FAILED (the room is unknown, full, or no longer waiting) or
does not answer.`,
	example: []string{
		"foyer join 127.0.0.1:7777 42",
		"foyer join --json 192.168.1.20 42",
	},
}

func runCreate(args []string, stdout, stderr io.Writer) int {
	c := newCLI("create", createHelp, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print JSON instead of a line of text")
	lf := c.lobbyFlags(client.DefaultTimeout, client.DefaultAttempts)
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := lf.check(c); !ok {
		return code
	}
	if len(pos) > 1 {
		return c.usageError("takes at most one ADDR, got %d arguments", len(pos))
	}
	addr := ""
	if len(pos) == 1 {
		addr = pos[0]
	}
	return c.seat(addr, lf, *asJSON, "created", func(lc *client.Client) (client.Seat, error) {
		return lc.Create(context.Background())
	})
}

func runJoin(args []string, stdout, stderr io.Writer) int {
	c := newCLI("join", joinHelp, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print JSON instead of a line of text")
	lf := c.lobbyFlags(client.DefaultTimeout, client.DefaultAttempts)
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := lf.check(c); !ok {
		return code
	}
	if len(pos) != 2 {
		return c.usageError("needs ADDR and ROOM, got %d arguments", len(pos))
	}
	id, err := parseRoomID(pos[1])
	if err != nil {
		return c.usageError("%v", err)
	}
	return c.seat(pos[0], lf, *asJSON, "joined", func(lc *client.Client) (client.Seat, error) {
		return lc.Join(context.Background(), id)
	})
}

// seatJSON is the JSON output of create and join.
type seatJSON struct {
	Lobby string `json:"lobby"`
	Room  uint32 `json:"room"`
	Port  uint16 `json:"port"`
	Addr  string `json:"addr"`
}

// seat runs one create or join and prints its outcome.
func (c *cli) seat(addr string, lf *lobbyFlags, asJSON bool, verb string, ask func(*client.Client) (client.Seat, error)) int {
	lc, code, ok := c.dial(addr, lf)
	if !ok {
		return code
	}
	defer lc.Close()
	s, err := ask(lc)
	if err != nil {
		return c.fail(err)
	}
	if asJSON {
		writeJSON(c.stdout, seatJSON{Lobby: lc.Addr().String(), Room: s.Room, Port: s.Port, Addr: s.Addr.String()})
		return exitOK
	}
	fmt.Fprintf(c.stdout, "%s room %d, port %d: game address %s\n", verb, s.Room, s.Port, s.Addr)
	return exitOK
}

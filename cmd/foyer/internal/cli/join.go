package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/foyerlobby/foyer/lobby/client"
)

var createHelp = Help{
	Usage: []string{"foyer create [flags] [ADDR]"},
	About: `Ask the lobby at ADDR to start a room, and print the room's id, its UDP
port, and the game address to send game traffic to. The lobby holds a seat
in the new room for this host. ADDR defaults to ` + defaultLobby + `.
Exits 1 if the lobby answers JOIN_FAILED (it cannot start a room) or does
not answer.

` + waitingAbout,
	Example: []string{
		"foyer create 192.168.1.20:7777",
		"foyer create --json | jq .port",
	},
}

var joinHelp = Help{
	Usage: []string{"foyer join [flags] [ADDR] ROOM"},
	About: `Ask the lobby at ADDR for a seat in room ROOM, and print the room's UDP
port and the game address to send game traffic to. ADDR defaults to
` + defaultLobby + `. Exits 1 if the lobby answers JOIN_FAILED or does not answer.
The native protocol does not say why a JOIN failed: join then reads the
lobby's room list and says what it shows (the room is not listed, is
full, or its match has begun), or that the reason is in the lobby's log.

` + waitingAbout,
	Example: []string{
		"foyer join 42",
		"foyer join 127.0.0.1:7777 42",
		"foyer join --json 192.168.1.20 42",
	},
}

func Create(args []string, stdout, stderr io.Writer) int {
	c, asJSON := newSeatCLI("create", createHelp, stdout, stderr)
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	return c.withLobby(pos, c.seat(*asJSON, "created", func(lc *client.Client) (client.Seat, error) {
		return lc.Create(context.Background())
	}))
}

func Join(args []string, stdout, stderr io.Writer) int {
	c, asJSON := newSeatCLI("join", joinHelp, stdout, stderr)
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return c.UsageError("needs [ADDR] ROOM, got %s", count(len(pos), "argument"))
	}
	id, err := parseRoomID(pos[len(pos)-1])
	if err != nil {
		return c.UsageError("%v", err)
	}
	// ROOM is checked; withLobby gets the ADDR alone, if any.
	return c.withLobby(pos[:len(pos)-1], c.seat(*asJSON, "joined", func(lc *client.Client) (client.Seat, error) {
		s, err := lc.Join(context.Background(), id)
		return s, lc.Why(context.Background(), err)
	}))
}

// newSeatCLI is the command line create and join share: the lobby flags
// and --json.
func newSeatCLI(name string, h Help, stdout, stderr io.Writer) (*Command, *bool) {
	c := New(name, h, stdout, stderr)
	asJSON := c.Flags.Bool("json", false, "print JSON instead of a line of text")
	c.lobbyFlags(client.DefaultTimeout, client.DefaultAttempts)
	return c, asJSON
}

// seatJSON is the JSON output of create and join.
type seatJSON struct {
	Lobby string `json:"lobby"`
	Room  uint32 `json:"room"`
	Port  uint16 `json:"port"`
	Addr  string `json:"addr"`
}

// seat is the work of a create or join: ask for a seat and print it.
func (c *Command) seat(asJSON bool, verb string, ask func(*client.Client) (client.Seat, error)) func(*client.Client) error {
	return func(lc *client.Client) error {
		s, err := ask(lc)
		if err != nil {
			return err
		}
		if asJSON {
			writeJSON(c.stdout, seatJSON{Lobby: lc.Addr().String(), Room: s.Room, Port: s.Port, Addr: s.Addr.String()})
			return nil
		}
		fmt.Fprintf(c.stdout, "%s room %d, port %d: game address %s\n", verb, s.Room, s.Port, s.Addr)
		return nil
	}
}

package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet/ext"
)

var createHelp = Help{
	Usage: []string{"foyer create [flags] [ADDR]"},
	About: `Ask the lobby at ADDR to start a room, and print the room's id, its UDP
port, and the game address to send game traffic to. The lobby holds a seat
in the new room for this host. ADDR defaults to ` + defaultLobby + `.
Exits 1 if the lobby answers JOIN_FAILED (it cannot start a room) or does
not answer.

With --name, --mode, --map, --tag, --private or --password-file, create
speaks the lobby's extension: the room is described as they say, private
rooms are listed nowhere, and the room's join code is printed too, which
'foyer join CODE' takes. A lobby that does not speak the extension starts
a plain room, or refuses a private one or one with a password.

` + waitingAbout,
	Example: []string{
		"foyer create 192.168.1.20:7777",
		"foyer create --json | jq .port",
		"foyer create --name \"Ann's room\" --mode ctf --tag region=eu --private",
	},
}

var joinHelp = Help{
	Usage: []string{"foyer join [flags] [ADDR] ROOM", "foyer join [flags] [ADDR] CODE"},
	About: `Ask the lobby at ADDR (` + defaultLobby + ` when left out) for a seat in
room ROOM, or in the room whose join code is CODE (6 letters, any case),
and print the room's UDP port and the game address to send game traffic
to. --password-file gives the room's password. Exits 1 if the lobby
refuses (the room is unknown, full, no longer waiting, or the password is
wrong) or does not answer. A lobby that speaks the extension says why; of
one that does not, join reads the room list and says what it shows (the
room is not listed, is full, or its match has begun), or that the reason
is in the lobby's log.

` + waitingAbout,
	Example: []string{
		"foyer join 42",
		"foyer join 127.0.0.1:7777 42",
		"foyer join --json 192.168.1.20 42",
		"foyer join KXMPRT",
		"foyer join --password-file pw.txt 192.168.1.20 KXMPRT",
	},
}

var quickHelp = Help{
	Usage: []string{"foyer quick [flags] [ADDR]"},
	About: `Take a seat in the fullest joinable room of the lobby at ADDR that
matches --filter, or in a new room when none does (described by the
filter's mode, map and tags), and print it as join does. ADDR defaults to
` + defaultLobby + `. Against a lobby without the extension, quick lists the rooms,
joins the fullest that matches on state and free places, or creates one.

` + waitingAbout,
	Example: []string{
		"foyer quick --filter mode=ctf,region=eu 192.168.1.20",
		"foyer quick 127.0.0.1:7777",
	},
}

func Create(args []string, stdout, stderr io.Writer) int {
	c, asJSON := newSeatCLI("create", createHelp, stdout, stderr)
	mf := c.metaFlags()
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if !mf.used() {
		return c.withLobby(pos, c.seat(*asJSON, "created", func(lc *client.Client) (client.Seat, error) {
			return lc.Create(context.Background())
		}))
	}
	o, err := mf.options()
	if err != nil {
		return c.UsageError("%v", err)
	}
	return c.withLobby(pos, c.seat(*asJSON, "created", func(lc *client.Client) (client.Seat, error) {
		return lc.CreateRoom(context.Background(), o)
	}))
}

func Join(args []string, stdout, stderr io.Writer) int {
	c, asJSON := newSeatCLI("join", joinHelp, stdout, stderr)
	pwFile := c.Flags.String("password-file", "", "the room's password is the first line of this `file`")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if len(pos) == 1 {
		pos = []string{"", pos[0]} // a ROOM or CODE alone: the local lobby
	}
	if len(pos) != 2 {
		return c.UsageError("needs [ADDR] ROOM, got %s", count(len(pos), "argument"))
	}
	password, err := readPassword(*pwFile)
	if err != nil {
		return c.UsageError("%v", err)
	}
	var ask func(lc *client.Client) (client.Seat, error)
	if isCode(pos[1]) {
		ask = func(lc *client.Client) (client.Seat, error) {
			return lc.JoinCode(context.Background(), pos[1], password)
		}
	} else {
		id, err := parseRoomID(pos[1])
		if err != nil {
			return c.UsageError("%v", err)
		}
		ask = func(lc *client.Client) (client.Seat, error) {
			if password == "" {
				s, err := lc.Join(context.Background(), id)
				return s, lc.Why(context.Background(), err)
			}
			return lc.JoinRoom(context.Background(), id, password)
		}
	}
	// ROOM is checked; withLobby gets the ADDR alone ("" for the local
	// lobby).
	addr := pos[:1]
	if addr[0] == "" {
		addr = nil
	}
	return c.withLobby(addr, c.seat(*asJSON, "joined", ask))
}

// isCode reports whether s is a join code, in any case.
func isCode(s string) bool { return ext.ValidCode(strings.ToUpper(s)) }

func Quick(args []string, stdout, stderr io.Writer) int {
	c, asJSON := newSeatCLI("quick", quickHelp, stdout, stderr)
	var filters listFlag
	c.Flags.Var(&filters, "filter", filterHelp)
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	f, err := parseFilter(filters)
	if err != nil {
		return c.UsageError("--filter: %v", err)
	}
	return c.withLobby(pos, c.seat(*asJSON, "joined", func(lc *client.Client) (client.Seat, error) {
		return lc.Quick(context.Background(), f)
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

// seatJSON is the JSON output of create, join and quick: with the room's
// code and the seat's token (hex) from a lobby of the extension.
type seatJSON struct {
	Lobby string `json:"lobby"`
	Room  uint32 `json:"room"`
	Port  uint16 `json:"port"`
	Addr  string `json:"addr"`
	Code  string `json:"code,omitempty"`
	Token string `json:"token,omitempty"`
}

// seat is the work of a create or join: ask for a seat and print it.
func (c *Command) seat(asJSON bool, verb string, ask func(*client.Client) (client.Seat, error)) func(*client.Client) error {
	return func(lc *client.Client) error {
		s, err := ask(lc)
		if err != nil {
			return err
		}
		if asJSON {
			writeJSON(c.stdout, seatJSON{Lobby: lc.Addr().String(), Room: s.Room, Port: s.Port, Addr: s.Addr.String(),
				Code: s.Code, Token: hex.EncodeToString([]byte(s.Token))})
			return nil
		}
		if s.Code != "" {
			fmt.Fprintf(c.stdout, "%s room %d, port %d, code %s: game address %s\n", verb, s.Room, s.Port, s.Code, s.Addr)
			return nil
		}
		fmt.Fprintf(c.stdout, "%s room %d, port %d: game address %s\n", verb, s.Room, s.Port, s.Addr)
		return nil
	}
}

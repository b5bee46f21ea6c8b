package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// adminTableLimit bounds what foyer rooms --admin reads of /rooms: far
// above the largest table a lobby keeps (a row is about 300 bytes).
const adminTableLimit = 64 << 20

// adminRoom is the part of a row of the admin listener's /rooms that
// foyer rooms --admin shows.
type adminRoom struct {
	ID         uint32 `json:"id"`
	State      string `json:"state"`
	Players    int    `json:"players"`
	Seats      int    `json:"seats"`
	MaxPlayers int    `json:"max_players"`
	Port       uint16 `json:"port"`
	Node       string `json:"node"`
}

// adminRooms lists the room table of the admin listener at addr: every
// room the lobby keeps, registered ones and those of other cluster hosts
// too, with the host of each when they are on more than one.
func (c *Command) adminRooms(addr, tokenFile string, timeout time.Duration, asJSON bool) int {
	base := adminBase(addr)
	rows, err := fetchRooms(base, tokenFile, timeout)
	if err != nil {
		return c.Fail(err)
	}
	rooms := make([]packet.Room, 0, len(rows))
	hosts := make(map[uint32]string, len(rows))
	several := false
	for _, r := range rows {
		rooms = append(rooms, packet.Room{ID: r.ID, State: stateNamed(r.State), Port: r.Port,
			Players: uint16(min(r.Players+r.Seats, 65535)), MaxPlayers: uint16(min(r.MaxPlayers, 65535))})
		hosts[r.ID] = r.Node
		several = several || r.Node != rows[0].Node
	}
	switch {
	case asJSON:
		out := roomsJSON(rooms)
		for i := range out {
			out[i].Host = hosts[out[i].ID]
		}
		writeJSON(c.stdout, lobbyJSON{Lobby: base, Rooms: out})
	case len(rooms) == 0:
		fmt.Fprintf(c.stdout, "no rooms on %s\n", base)
	case several:
		writeRooms(c.stdout, rooms, roomColumn{"HOST", func(r packet.Room) string { return hosts[r.ID] }})
	default:
		writeRooms(c.stdout, rooms)
	}
	return ExitOK
}

// fetchRooms reads the rows of /rooms.
func fetchRooms(base, tokenFile string, timeout time.Duration) ([]adminRoom, error) {
	status, body, err := adminCallTo(base, tokenFile, timeout, http.MethodGet, "/rooms", adminTableLimit)
	switch {
	case err != nil:
		return nil, err
	case status != http.StatusOK:
		return nil, fmt.Errorf("admin %s/rooms answered %d: %s", base, status, answer(body))
	}
	var table struct {
		Rooms []adminRoom `json:"rooms"`
	}
	if err := json.Unmarshal(body, &table); err != nil {
		return nil, fmt.Errorf("admin %s/rooms: %w", base, err)
	}
	return table.Rooms, nil
}

// stateNamed is the room state whose String is name; an unknown name is
// a state no room has, shown as such.
func stateNamed(name string) packet.RoomState {
	for s := packet.Waiting; s <= packet.Finished; s++ {
		if s.String() == name {
			return s
		}
	}
	return packet.RoomState(255)
}

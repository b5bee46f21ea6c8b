package supervisor

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/foyerlobby/foyer/internal/nftdoor"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/room"
)

// The door of exec rooms. A game built on the SDK admits only the players
// the lobby seated (package instance); a foreign server owns its socket,
// so the host keeps its door instead: an nftables table of the lobby's
// (package nftdoor), where each exec room's UDP port passes only the
// addresses holding one of its seats, and the keepers' probes from
// loopback. The door follows the table: a room is put in it before it is
// handed out, its seats on every change (keep, so the creator's seat is
// there before the creator hears of the room), and it leaves once its
// processes are gone (reap). The table's name is fixed for a state
// directory, like the cgroup tree's: it outlives a handover (Release
// leaves it be), and the lobby that adopts the rooms takes it over and
// drops what no adopted room claims. Shutdown removes it.
//
// Where the host keeps no door (not root, no nf_tables), exec rooms run
// with theirs open, as the start log says.

// openDoor opens the door for the exec rooms this supervisor may run: its
// own, if it runs foreign servers, and any a previous process left in the
// table. Called by New before the adoption; s.door stays nil without.
func (s *Supervisor) openDoor() {
	name := treeName(s.cfg.StateDir)
	if s.cfg.Probe == "" {
		if ok, _ := nftdoor.Exists(name); !ok {
			return // no exec room to guard
		}
	}
	// A lobby without a state directory that died (kill -9) left its
	// table: its rooms are gone, and so must be their doors, which would
	// judge their ports for the next lobby that uses them.
	if gone, err := nftdoor.Sweep(deadLobby); err != nil {
		s.log.Debug().Err(err).Msg("doors of lobbies that died not swept")
	} else if len(gone) > 0 {
		s.log.Info().Strs("tables", gone).Msg("doors of lobbies that died removed")
	}
	// A keeper probes from the rooms' bind address when it is one.
	d, err := nftdoor.Open(name, s.cfg.Bind)
	if err != nil {
		why, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), nftdoor.ErrUnavailable.Error()+": "), ": ")
		s.log.Warn().Err(err).Msg("the door of exec rooms is open: " + why)
		return
	}
	s.door = d
	s.log.Info().Str("table", "inet "+d.Name()).Int("rooms", len(d.Rooms())).Msg(doorShut)
}

// doorShut is what the start log says of a door that guards exec rooms.
const doorShut = "the door of exec rooms is shut: a room's port answers only the addresses holding its seats, and its keeper's probes from loopback"

// perProcess matches the name a lobby without a state directory gives its
// door and its cgroup tree (treeName): foyer-PID-N.
var perProcess = regexp.MustCompile(`^foyer-([0-9]+)-[0-9]+$`)

// deadLobby reports whether name is that of the door or the cgroup tree of
// a lobby without a state directory that no longer runs.
func deadLobby(name string) bool {
	m := perProcess.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	return err == nil && pid != os.Getpid() && !proc.Alive(pid)
}

// shutDoor puts room r, just spawned, in the door before it is handed
// out.
func (s *Supervisor) shutDoor(r *record) {
	if s.door == nil || r.row.Source != room.Exec {
		return
	}
	if err := s.door.Room(r.row.ID, r.row.Port); err != nil {
		s.log.Warn().Uint32("id", r.row.ID).Uint16("port", r.row.Port).Err(err).Msg("room's door not shut")
	}
}

// adoptDoor puts adopted room r in the door, with the flows of its
// players.
func (s *Supervisor) adoptDoor(r *record) {
	if s.door == nil || r.row.Source != room.Exec {
		return
	}
	if err := s.door.Adopt(r.row.ID, r.row.Port); err != nil {
		s.log.Warn().Uint32("id", r.row.ID).Uint16("port", r.row.Port).Err(err).Msg("adopted room's door not shut")
	}
}

// reconcileDoor drops from the door every room the adoption did not take,
// and gives every adopted exec room the seats it kept. Called by New
// after the adoption.
func (s *Supervisor) reconcileDoor() {
	if s.door == nil {
		return
	}
	keep := make(map[uint32]uint16)
	s.mu.Lock()
	for id, r := range s.live {
		if r.row.Source == room.Exec {
			keep[id] = r.row.Port
		}
	}
	s.mu.Unlock()
	if err := s.door.Reconcile(keep); err != nil {
		s.log.Warn().Err(err).Msg("door of exec rooms not reconciled with the rooms adopted")
	}
	for id := range keep {
		if seats, _, ok := s.table.Seats(id); ok {
			s.doorSeats(id, seats)
		}
	}
}

// doorSeats lets the holders of seats through room id's door. Called
// with the room's keepMu held, or before the room is shared.
func (s *Supervisor) doorSeats(id uint32, seats []room.Seat) {
	ds := make([]nftdoor.Seat, len(seats))
	for i, st := range seats {
		ds[i] = nftdoor.Seat{IP: st.Player.Addr(), Expires: st.Expires}
	}
	if err := s.door.Seats(id, ds); err != nil && !errors.Is(err, nftdoor.ErrNoRoom) {
		s.log.Warn().Uint32("id", id).Err(err).Msg("room's door not given its seats")
	}
}

// keepDoor is keep's part for the door: r's present seats, for an exec
// room.
func (s *Supervisor) keepDoor(r *record, seats []room.Seat) {
	if s.door != nil && r.row.Source == room.Exec {
		s.doorSeats(r.row.ID, seats)
	}
}

// closeDoor takes room r out of the door once its processes are gone:
// its port is no one's.
func (s *Supervisor) closeDoor(r *record) {
	if s.door == nil || r.row.Source != room.Exec {
		return
	}
	if err := s.door.Close(r.row.ID); err != nil {
		s.log.Warn().Uint32("id", r.row.ID).Err(err).Msg("room's door not removed")
	}
}

// removeDoor deletes the door's table once every room has ended.
func (s *Supervisor) removeDoor() {
	if s.door == nil {
		return
	}
	if err := s.door.Remove(); err != nil {
		s.log.Warn().Err(err).Str("table", "inet "+s.door.Name()).Msg("door of exec rooms not removed")
	}
}

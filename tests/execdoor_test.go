package tests

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/nftdoor"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/teeinfo/teeinfotest"
	"github.com/foyerlobby/foyer/supervisor"
)

// doorShut is the start log's line for a lobby whose exec rooms have a
// door.
const doorShut = "the door of exec rooms is shut: a room's port answers only the addresses holding its seats, and its keeper's probes from loopback"

// teeAnswers reports whether the Teeworlds server at to answers an info
// request sent from a socket of its own on the address from, asking up to
// tries times.
func teeAnswers(t *testing.T, from string, to netip.AddrPort, tries int) bool {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return teeinfotest.Answers(t, c, to, tries, 300*time.Millisecond)
}

// TestDDNetRoomsDoorAdmitsOnlySeats runs DDNet-Server, listening on every
// address, through the exec driver of a real `foyer serve` as root: the
// room's port answers its creator and no address without a seat, answers
// a player once its JOIN seated it, keeps answering its keeper's probes
// from loopback (the room stays healthy), and the lobby's door is gone
// once it stops. The creator is not on 127.0.0.1: its seat would let the
// probes in, and the test would not show that they pass by themselves.
func TestDDNetRoomsDoorAdmitsOnlySeats(t *testing.T) {
	requiretest.Root(t)
	ddnet := ddnetBinary(t)
	const health = 3 * time.Second
	s := startServer(t, "", fmt.Sprintf(`command = [%q, "sv_port {port}; sv_name Room {room_id}; sv_register 0; sv_max_clients {max_players}; sv_map Tutorial"]
probe = "teeworlds"
max_players = 6
health_timeout = "%s"
seat_ttl = "30s"
`, ddnet, health))
	var table string
	for deadline := time.Now().Add(10 * time.Second); table == ""; time.Sleep(20 * time.Millisecond) {
		if m := s.logs.lines(doorShut); len(m) > 0 {
			table, _ = m[0]["table"].(string)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lobby never said its exec rooms' door is shut:\n%s", s.logs)
		}
	}
	name, ok := cutInet(table)
	if !ok {
		t.Fatalf("door table %q", table)
	}

	c := newClient(t, "127.0.0.4", s.lobby)
	id, port := c.request(compact, createRoom, 1, nil).roomPort(t)
	if id == 0 || int(port) < s.ports[0] || int(port) > s.ports[1] {
		t.Fatalf("CREATE answered room %d port %d (pool %v)", id, port, s.ports)
	}
	at := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	if !teeAnswers(t, "127.0.0.4", at, 10) {
		t.Fatalf("DDNet-Server on port %d does not answer its creator:\n%s", port, s.logs)
	}
	if !teeAnswers(t, "127.0.0.1", at, 3) {
		t.Fatal("the room does not answer 127.0.0.1, where its keeper probes from")
	}
	if teeAnswers(t, "127.0.0.2", at, 3) {
		t.Fatal("the room answered 127.0.0.2, which holds no seat")
	}

	joiner := newClient(t, "127.0.0.3", s.lobby)
	if r := joiner.request(compact, joinRoom, 2, joinPayload(id)); r.typ != joinSuccess {
		t.Fatalf("JOIN from 127.0.0.3 answered %#x", r.typ)
	}
	if !teeAnswers(t, "127.0.0.3", at, 10) {
		t.Fatal("the room did not answer 127.0.0.3, seated by its JOIN")
	}
	if teeAnswers(t, "127.0.0.2", at, 3) {
		t.Fatal("the room answered 127.0.0.2 once another address was seated")
	}

	// Probed once a second from loopback, the room stays healthy through
	// twice its health timeout.
	for end := time.Now().Add(2*health + 500*time.Millisecond); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if len(s.logs.lines("room unhealthy, killing")) > 0 {
			t.Fatalf("the room was killed as unhealthy: its keeper's probes were shut out:\n%s", s.logs)
		}
	}
	if !slices.ContainsFunc(c.list(3), func(r room) bool { return r.id == id }) {
		t.Fatalf("room %d no longer listed after %v:\n%s", id, 2*health, s.logs)
	}

	s.stop()
	if ok, err := nftdoor.Exists(name); ok || err != nil {
		t.Fatalf("table inet %s still there after the lobby stopped (%v)", name, err)
	}
}

// cutInet returns the name of the table "inet NAME".
func cutInet(table string) (string, bool) {
	const prefix = "inet "
	if len(table) <= len(prefix) || table[:len(prefix)] != prefix {
		return "", false
	}
	return table[len(prefix):], true
}

// removeStateDoor deletes the door table of a lobby with state directory
// dir, if one is left: a lobby killed for good leaves it, named for the
// directory, for the process after it, and so may a lobby of a build
// broken on purpose (make mutate), whatever it logged. Without the right
// to list the tables, no lobby of the test could have made one.
func removeStateDoor(t testing.TB, dir string) {
	name := supervisor.StateName(dir)
	if _, err := nftdoor.Sweep(func(n string) bool { return n == name }); err != nil && os.Geteuid() == 0 {
		t.Errorf("door table %s not removed: %v", name, err)
	}
}

// The door of a DDNet room outlives its lobby: an upgrade hands it over
// with the room, a lobby killed leaves it shut, and the lobby started
// again adopts it with the room's seats; the room stays healthy
// throughout, and the door goes when the lobby stops.
func TestDDNetRoomsDoorOutlivesTheLobby(t *testing.T) {
	requiretest.Root(t)
	ddnet := ddnetBinary(t)
	const health = 3 * time.Second
	l := newKeptLobby(t, keptSettings{grace: 30 * time.Second, match: 60 * time.Second, ports: 4,
		supervise: fmt.Sprintf(`command = [%q, "sv_port {port}; sv_name Room {room_id}; sv_register 0; sv_max_clients {max_players}; sv_map Tutorial"]
probe = "teeworlds"
max_players = 6
health_timeout = "%s"
`, ddnet, health)})
	c := newClient(t, "127.0.0.4", l.lobby)
	id, port := c.request(compact, createRoom, 1, nil).roomPort(t)
	if r := newClient(t, "127.0.0.3", l.lobby).request(compact, joinRoom, 2, joinPayload(id)); r.typ != joinSuccess {
		t.Fatalf("JOIN from 127.0.0.3 answered %#x", r.typ)
	}
	at := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	shut := func(when string) {
		t.Helper()
		if !teeAnswers(t, "127.0.0.3", at, 10) {
			t.Fatalf("%s: the room does not answer 127.0.0.3, seated by its JOIN:\n%s", when, l.logs)
		}
		if teeAnswers(t, "127.0.0.2", at, 3) {
			t.Fatalf("%s: the room answered 127.0.0.2, which holds no seat", when)
		}
	}
	shut("at first")
	tables := func() []any {
		var names []any
		for _, m := range l.logs.lines(doorShut) {
			names = append(names, m["table"])
		}
		return names
	}

	l.upgrade()
	shut("after an upgrade")
	l.kill9()
	shut("with no lobby")
	l.start()
	l.awaitLog(doorShut, map[string]any{"rooms": float64(1)})
	shut("in the lobby started again")
	if r := l.adminRooms(); len(r) != 1 || r[0].ID != id || !r[0].Adopted {
		t.Fatalf("/rooms shows %+v", r)
	}
	names := tables()
	if want := "inet " + supervisor.StateName(l.stateDir); len(names) != 3 || names[0] != want || names[1] != want || names[2] != want {
		t.Fatalf("the door's table across the lobby's processes: %v, want %s each time", names, want)
	}
	for end := time.Now().Add(2*health + 500*time.Millisecond); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if len(l.logs.lines("room unhealthy, killing")) > 0 {
			t.Fatalf("the room was killed as unhealthy: its keeper's probes were shut out:\n%s", l.logs)
		}
	}
	l.stop()
	name, _ := cutInet(names[0].(string))
	if ok, err := nftdoor.Exists(name); ok || err != nil {
		t.Fatalf("table inet %s still there after the lobby stopped (%v)", name, err)
	}
}

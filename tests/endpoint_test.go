package tests

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// A game server in Python, with no Go in its process, is a Foyer room
// through its keeper's local endpoint (probe "endpoint").

// endpointRoom starts a lobby whose rooms run tests/testdata/endpointroom.py
// under /usr/bin/python3 (a path every room's user may run).
func endpointRoom(t *testing.T, health time.Duration) *server {
	t.Helper()
	python := requiretest.Command(t, "/usr/bin/python3")
	src, err := os.ReadFile("testdata/endpointroom.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := roomsSee(t)
	script := filepath.Join(dir, "endpointroom.py")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, "", fmt.Sprintf(`command = [%q, %q, "{port}", "{bind}"]
probe = "endpoint"
max_players = 4
health_timeout = "%s"
seat_ttl = "30s"
`, python, script, health))
}

// player is a game client's socket on ip.
func player(t *testing.T, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// say sends msg to the room's port from c and returns the first answer,
// asking up to tries times; "" if none came.
func say(t *testing.T, c *net.UDPConn, port uint16, msg string, tries int) string {
	t.Helper()
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port))
	buf := make([]byte, 256)
	for range tries {
		if _, err := c.WriteToUDP([]byte(msg), to); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, err := c.Read(buf); err == nil {
			return string(buf[:n])
		}
	}
	return ""
}

// endpointAdminRoom is a room of the admin listener's /rooms.
type endpointAdminRoom struct {
	ID      uint32 `json:"id"`
	Players int    `json:"players"`
	Seats   int    `json:"seats"`
	Source  string `json:"source"`
	Name    string `json:"name"`
	Game    string `json:"game"`
	Map     string `json:"map"`
}

// adminRoom returns room id as the admin listener lists it, once want
// holds of it, or fails after a few seconds.
func (s *server) adminRoom(t *testing.T, id uint32, want func(endpointAdminRoom) bool) endpointAdminRoom {
	t.Helper()
	base := s.adminBase(t)
	var last endpointAdminRoom
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(base + "/rooms")
		if err != nil {
			t.Fatal(err)
		}
		var table struct {
			Rooms []endpointAdminRoom `json:"rooms"`
		}
		err = json.NewDecoder(resp.Body).Decode(&table)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(table.Rooms, func(r endpointAdminRoom) bool { return r.ID == id }); i >= 0 {
			if last = table.Rooms[i]; want(last) {
				return last
			}
		}
	}
	t.Fatalf("room %d on /rooms: %+v\n%s", id, last, s.logs)
	return last
}

// TestPythonRoomThroughTheEndpoint runs a Python game server through the
// exec driver with the endpoint: the room is created and handed out once
// the server says it is ready; its seated creator and joiner come in and
// are counted, while addresses without a seat (127.0.0.1, which the host's
// door lets through as a keeper's probe address, and 127.0.0.2) get
// nothing; its metadata shows on /rooms; its health reports keep it
// listed past twice its health timeout; when it shuts itself down it is
// delisted and reaped; and a second room that stops reporting its health
// is reaped as unhealthy.
func TestPythonRoomThroughTheEndpoint(t *testing.T) {
	const health = 2 * time.Second
	s := endpointRoom(t, health)

	creator := newClient(t, "127.0.0.4", s.lobby)
	creator.list(1) // a player lists before it creates
	id, port := creator.request(compact, createRoom, 2, nil).roomPort(t)
	if id == 0 {
		t.Fatalf("CREATE answered room 0:\n%s", s.logs)
	}
	alice, bob := player(t, "127.0.0.4"), player(t, "127.0.0.3")
	if got := say(t, alice, port, "HELLO", 20); got != "WELCOME 1" {
		t.Fatalf("the creator's HELLO got %q, want WELCOME 1:\n%s", got, s.logs)
	}
	joiner := newClient(t, "127.0.0.3", s.lobby)
	if r := joiner.request(compact, joinRoom, 3, joinPayload(id)); r.typ != joinSuccess {
		t.Fatalf("JOIN answered %#x", r.typ)
	}
	if got := say(t, bob, port, "HELLO", 20); got != "WELCOME 2" {
		t.Fatalf("the joiner's HELLO got %q, want WELCOME 2:\n%s", got, s.logs)
	}
	for _, stranger := range []string{"127.0.0.1", "127.0.0.2"} {
		if got := say(t, player(t, stranger), port, "HELLO", 3); got != "" {
			t.Fatalf("%s, without a seat, got %q", stranger, got)
		}
	}
	r := s.adminRoom(t, id, func(r endpointAdminRoom) bool { return r.Players == 2 })
	if r.Source != "exec" || r.Seats != 0 || r.Name != fmt.Sprintf("Python room %d", id) || r.Game != "duel" || r.Map != "arena" {
		t.Fatalf("/rooms shows %+v", r)
	}
	listed := func() bool {
		return slices.ContainsFunc(creator.list(4), func(r room) bool { return r.id == id && r.players == 2 })
	}
	time.Sleep(2*health + 500*time.Millisecond)
	if !listed() || len(s.logs.lines("room unhealthy, killing")) > 0 {
		t.Fatalf("room %d not listed with 2 players after twice its health timeout:\n%s", id, s.logs)
	}
	if got := say(t, bob, port, "BYE", 5); got != "BYE 1" {
		t.Fatalf("BYE got %q", got)
	}
	s.adminRoom(t, id, func(r endpointAdminRoom) bool { return r.Players == 1 })

	pid := s.instancePID(id)
	say(t, alice, port, "END", 1)
	reaped := func() bool { // the line comes once the keeper is gone
		return slices.ContainsFunc(s.logs.lines("room reaped"), func(m map[string]any) bool {
			return m["id"] == float64(id) && m["cause"] == "finished"
		})
	}
	for deadline := time.Now().Add(10 * time.Second); listed() || proc.Alive(pid) || !reaped(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("room %d still listed (%v), its keeper %d alive (%v) or not reaped as finished (%v) after END:\n%s",
				id, listed(), pid, proc.Alive(pid), reaped(), s.logs)
		}
	}

	id2, port2 := creator.request(compact, createRoom, 5, nil).roomPort(t)
	if got := say(t, alice, port2, "HELLO", 20); got != "WELCOME 1" {
		t.Fatalf("the second room's HELLO got %q:\n%s", got, s.logs)
	}
	say(t, alice, port2, "MUTE", 1)
	for deadline := time.Now().Add(4 * health); ; time.Sleep(50 * time.Millisecond) {
		if slices.ContainsFunc(s.logs.lines("room unhealthy, killing"), func(m map[string]any) bool { return m["id"] == float64(id2) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("room %d, silent, not reaped as unhealthy:\n%s", id2, s.logs)
		}
	}
}

// TestEndpointSeatTokensAndTags: a Python game server verifies the seat
// token its player shows it through the endpoint (the lobby's token
// holds, a forged one does not), and the tags it sets there list its room
// in the extension's listings, found by a filter on them.
func TestEndpointSeatTokensAndTags(t *testing.T) {
	s := endpointRoom(t, 2*time.Second)
	p := newExtPeer(t, "127.0.0.4", s.lobby)
	seat := p.seat(createMsg())
	alice := player(t, "127.0.0.4")
	if got := say(t, alice, seat.Port, "TOKEN "+hex.EncodeToString(seat.SeatToken), 20); got != "SEAT 1" {
		t.Fatalf("the lobby's seat token got %q, want SEAT 1:\n%s", got, s.logs)
	}
	forged := append([]byte(nil), seat.SeatToken...)
	forged[len(forged)-1] ^= 1
	if got := say(t, alice, seat.Port, "TOKEN "+hex.EncodeToString(forged), 5); got != "NO SEAT" {
		t.Fatalf("a forged seat token got %q, want NO SEAT", got)
	}
	python := []ext.Tag{{Key: "lang", Value: "python"}}
	var rooms ext.Message
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rooms = p.ask(ext.Message{Header: packet.Header{Type: ext.List}, Filter: ext.Filter{Tags: python}})
		if len(rooms.Entries) > 0 {
			break
		}
	}
	if len(rooms.Entries) != 1 || rooms.Entries[0].ID != seat.RoomID || rooms.Entries[0].Mode != "duel" ||
		!slices.Equal(rooms.Entries[0].Tags, python) {
		t.Fatalf("a filter on the room's tags lists %+v, want room %d of mode duel tagged lang=python", rooms.Entries, seat.RoomID)
	}
}

package lobby

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

func listedIDs(m packet.Message) []uint32 {
	var ids []uint32
	for _, r := range m.Rooms {
		ids = append(ids, r.ID)
	}
	return ids
}

// A native client goes to the address it reached the lobby at, on the
// port the lobby names: a room registered from another address is not
// offered to it, and JOIN fails for it. A wildcard socket tells the
// addresses apart by where each datagram was sent.
func TestListOffersOnlyReachableRooms(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 1, Port: 30001, MaxPlayers: 4, State: packet.Waiting}) // this host's
	rooms.add(room.Room{ID: 2, Port: 9999, MaxPlayers: 4, State: packet.Waiting, Source: room.GG2,
		Host: netip.MustParseAddr("127.0.0.2")})
	rooms.add(room.Room{ID: 3, Port: 9998, MaxPlayers: 4, State: packet.Waiting, Source: room.GG2,
		Host: netip.MustParseAddr("::ffff:127.0.0.1")})
	rooms.add(room.Room{ID: 4, Port: 9997, MaxPlayers: 4, State: packet.Waiting, Source: room.GG2,
		Host: netip.MustParseAddr("192.0.2.7")})

	wildcard := testConfig()
	wildcard.Listen = []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:0")}
	_, wild := start(t, wildcard, rooms)
	_, bound := start(t, testConfig(), rooms) // 127.0.0.1
	for _, c := range []struct {
		name     string
		to       netip.AddrPort
		listed   []uint32
		unlisted uint32
	}{
		{"wildcard at 127.0.0.1", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), wild.Port()), []uint32{1, 3}, 2},
		{"wildcard at 127.0.0.2", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), wild.Port()), []uint32{1, 2}, 3},
		{"bound to 127.0.0.1", bound, []uint32{1, 3}, 2},
	} {
		cl := dial(t, "127.0.0.1", c.to)
		if got := listedIDs(cl.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)); !slices.Equal(got, c.listed) {
			t.Errorf("%s: listed %v, want %v", c.name, got, c.listed)
		}
		for _, id := range []uint32{c.unlisted, 4} {
			if r := cl.roundTrip(hdr(packet.Compact, packet.JoinRoom, uint16(10+id)), id); r.Type != packet.JoinFailed {
				t.Errorf("%s: JOIN of unreachable room %d answered %v", c.name, id, r.Type)
			}
		}
		if r := cl.roundTrip(hdr(packet.Compact, packet.JoinRoom, 20), c.listed[1]); r.Type != packet.JoinSuccess || r.RoomID != c.listed[1] {
			t.Errorf("%s: JOIN of reachable room %d answered %+v", c.name, c.listed[1], r)
		}
	}
}

// The seat guard: a JOIN refused because held seats fill the room turns
// it on; from then on each client's list shows its own masked ids, a JOIN
// naming a masked id reaches the table as proven and is answered with the
// id it named, and plain ids still work, proving nothing.
func TestSeatGuardMasksIdsAndProvesJoins(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.proofs = new([]room.Proof)
	rooms.add(room.Room{ID: 1, Port: 30001, MaxPlayers: 2, Seats: 2, State: packet.Waiting})
	rooms.add(room.Room{ID: 2, Port: 30002, MaxPlayers: 4, State: packet.Waiting})
	l, addr := start(t, testConfig(), rooms)
	a, b := dial(t, "127.0.0.1", addr), dial(t, "127.0.0.3", addr)
	if got := listedIDs(a.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)); !slices.Equal(got, []uint32{1, 2}) {
		t.Fatalf("before the guard: listed %v", got)
	}
	if r := a.roundTrip(hdr(packet.Compact, packet.JoinRoom, 2), 1); r.Type != packet.JoinFailed {
		t.Fatalf("JOIN of a room full of seats: %v", r.Type)
	}
	if !l.cookies.on(time.Now()) {
		t.Fatal("the guard is off after a JOIN refused for held seats")
	}
	la := listedIDs(a.roundTrip(hdr(packet.Compact, packet.ListRooms, 3), 0))
	lb := listedIDs(b.roundTrip(hdr(packet.Legacy, packet.ListRooms, 3), 0))
	if len(la) != 2 || len(lb) != 2 || la[1] == 2 || lb[1] == 2 || la[1] == lb[1] {
		t.Fatalf("under the guard: lists %v and %v, want masked ids of each client's own", la, lb)
	}
	if r := a.roundTrip(hdr(packet.Compact, packet.JoinRoom, 4), la[1]); r.Type != packet.JoinSuccess || r.RoomID != la[1] || r.Port != 30002 {
		t.Fatalf("JOIN with a's masked id: %+v", r)
	}
	if r := a.roundTrip(hdr(packet.Compact, packet.JoinRoom, 5), lb[1]); r.Type != packet.JoinFailed {
		t.Fatalf("JOIN with another client's masked id: %v", r.Type)
	}
	if r := b.roundTrip(hdr(packet.Legacy, packet.JoinRoom, 6), 2); r.Type != packet.JoinSuccess || r.RoomID != 2 {
		t.Fatalf("JOIN with the plain id: %+v", r)
	}
	rooms.mu.Lock()
	proofs := slices.Clone(*rooms.proofs)
	rooms.mu.Unlock()
	if want := []room.Proof{room.Unproven, room.SawListing, room.Unproven}; !slices.Equal(proofs, want) {
		t.Errorf("proofs reaching the table %v, want %v", proofs, want)
	}
	// The proof tells every edge that a's address receives; b proved
	// nothing.
	now := time.Now()
	if !l.guard.Receives(netip.MustParseAddr("127.0.0.1"), now) || l.guard.Receives(netip.MustParseAddr("127.0.0.3"), now) {
		t.Error("the guard did not hear who proved receiving")
	}
}

// A registered room whose address nothing proved is offered nowhere, not
// even when it claims the lobby's own address.
func TestUncheckedNeverOffered(t *testing.T) {
	local := netip.MustParseAddr("127.0.0.1")
	checked := room.Room{ID: 1, Port: 27015, Host: local, Source: room.GG2, MaxPlayers: 8}
	unchecked := checked
	unchecked.ID, unchecked.Unchecked = 2, true
	if !offered(&checked, local) || offered(&unchecked, local) {
		t.Errorf("offered: checked %v, unchecked %v", offered(&checked, local), offered(&unchecked, local))
	}
	rl := &roomList{rooms: []room.Room{checked, unchecked}}
	c := newCookies()
	if _, _, ok := c.resolve(rl, 2, local, local); ok {
		t.Error("a JOIN of the unchecked room resolves")
	}
	if got := listed(rl.rooms, local); len(got) != 1 || got[0].ID != 1 {
		t.Errorf("listed %+v", got)
	}
}

// What the seat guard is for, end to end with the table's seat rules: a
// room that JOINs proving nothing filled is refused to another such JOIN,
// and taken by a client that names it by its masked id, in place of the
// oldest of those seats; the room stays full.
func TestMaskedJoinTakesAnUnprovenSeat(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 1, Port: 30001, MaxPlayers: 2, Seats: 2, State: packet.Waiting})
	_, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	if r := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 1), 1); r.Type != packet.JoinFailed {
		t.Fatalf("unproven JOIN of a room full of seats: %v", r.Type)
	}
	masked := listedIDs(c.roundTrip(hdr(packet.Compact, packet.ListRooms, 2), 0))
	if len(masked) != 1 || masked[0] == 1 {
		t.Fatalf("under the guard: listed %v, want room 1 masked", masked)
	}
	if r := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 3), masked[0]); r.Type != packet.JoinSuccess || r.Port != 30001 {
		t.Fatalf("JOIN with the masked id: %+v", r)
	}
	if r, _ := rooms.Room(1); r.Occupied() != 2 || rooms.Stats().SeatsDisplaced != 1 {
		t.Errorf("room %+v, %d seats displaced; want it full, one unproven seat given up", r, rooms.Stats().SeatsDisplaced)
	}
}

package roomtable_test

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// TestCreateWithMetaPrivateAndCode: an extended CREATE's room carries its
// metadata and a code of the alphabet; a private one is joined by its
// code only, and the seat comes with a token the host's key signed for
// that room, seat and client.
func TestCreateWithMetaPrivateAndCode(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	meta := room.Meta{Name: "Ann's", Mode: "ctf", Map: "dust", Tags: room.TagsOf([]room.Tag{{Key: "region", Value: "eu"}})}
	client := [8]byte{9, 9}
	g, err := rooms.CreateWith(ctx, ep("192.0.2.1:1"), room.CreateOptions{Meta: meta, Private: true, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	if g.Room.Meta() != meta || !g.Room.Private || !ext.ValidCode(g.Room.Code) {
		t.Fatalf("created %+v", g.Room)
	}
	checkToken(t, rooms, g, client)
	if _, err := rooms.Join(ctx, g.Room.ID, ep("192.0.2.2:2"), room.Unproven); err != room.ErrNoRoom {
		t.Errorf("seed JOIN of a private room by id: %v, want no room", err)
	}
	if _, err := rooms.JoinWith(ctx, room.JoinRequest{ID: g.Room.ID, Player: ep("192.0.2.2:2")}); err != room.ErrNoRoom {
		t.Errorf("JOIN of a private room by id: %v, want no room", err)
	}
	j, err := rooms.JoinWith(ctx, room.JoinRequest{Code: g.Room.Code, Player: ep("192.0.2.2:2"), Client: [8]byte{7}})
	if err != nil || j.Room.ID != g.Room.ID {
		t.Fatalf("JOIN by code: %+v, %v", j.Room, err)
	}
	checkToken(t, rooms, j, [8]byte{7})
	if _, err := rooms.JoinWith(ctx, room.JoinRequest{Code: "ZZZZZZ", Player: ep("192.0.2.3:3")}); err != room.ErrNoRoom {
		t.Errorf("JOIN by an unknown code: %v", err)
	}
	other, _ := rooms.CreateWith(ctx, ep("192.0.2.4:4"), room.CreateOptions{})
	if other.Room.Code == g.Room.Code {
		t.Errorf("two rooms share code %s", other.Room.Code)
	}
	if id, ok := rooms.FindCode(other.Room.Code); !ok || id != other.Room.ID {
		t.Errorf("FindCode(%s) = %d, %v", other.Room.Code, id, ok)
	}
}

func checkToken(t *testing.T, rooms *roomtabletest.Rooms, g room.Grant, client [8]byte) {
	t.Helper()
	k := rooms.SeatKeys()
	tok, ok := ext.ReadToken(g.Token)
	if !ok || !ext.NewSigner(ext.RoomKey(k.Key, g.Room.ID)).Verify(g.Token) || tok.Room != g.Room.ID || tok.Epoch != k.Epoch || tok.Client != client || tok.Seat == 0 {
		t.Fatalf("token %x of room %d: %+v, %v", g.Token, g.Room.ID, tok, ok)
	}
	seats, _, _ := rooms.Seats(g.Room.ID)
	for _, s := range seats {
		if s.Serial == tok.Seat {
			return
		}
	}
	t.Fatalf("no seat %d among %+v", tok.Seat, seats)
}

// TestPassword: a room created with a password lists as one, refuses a
// seed JOIN, a JOIN without it and a wrong one, and seats the right one.
func TestPassword(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	g, err := rooms.CreateWith(ctx, ep("192.0.2.1:1"), room.CreateOptions{Password: "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Room.Password {
		t.Fatal("a room with a password does not say so")
	}
	id := g.Room.ID
	if _, err := rooms.Join(ctx, id, ep("192.0.2.2:2"), room.Unproven); err != room.ErrWrongPassword {
		t.Errorf("seed JOIN: %v", err)
	}
	for _, pw := range []string{"", "hunter3", "hunter2 "} {
		if _, err := rooms.JoinWith(ctx, room.JoinRequest{ID: id, Player: ep("192.0.2.2:2"), Password: pw}); err != room.ErrWrongPassword {
			t.Errorf("password %q: %v", pw, err)
		}
	}
	if _, err := rooms.JoinWith(ctx, room.JoinRequest{ID: id, Player: ep("192.0.2.2:2"), Password: "hunter2"}); err != nil {
		t.Errorf("the right password: %v", err)
	}
}

// TestQuickJoinRace: 100 clients quick-joining at once fill rooms exactly
// to their size: no room over, every client seated, the fewest rooms.
func TestQuickJoinRace(t *testing.T) {
	// Rooms that start at once, and rooms that take a while as a real
	// room's start does: the others come meanwhile.
	// The race is won differently each time: a few rounds of each.
	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			for range 10 {
				quickJoinRace(t, delay)
			}
		})
	}
}

func quickJoinRace(t *testing.T, delay time.Duration) {
	rooms := roomtabletest.New(t, roomtable.Config{SeatsPerAddress: 1000, RoomsPerNetwork: 1000})
	rooms.SetSpawnDelay(delay)
	const clients = 100
	f := room.Filter{Mode: "ctf"}
	var wg sync.WaitGroup
	got := make([]room.Grant, clients)
	errs := make([]error, clients)
	for i := range clients {
		wg.Go(func() {
			got[i], errs[i] = rooms.QuickJoin(ctx, f, ep(fmt.Sprintf("192.0.2.%d:%d", i%200+1, 1000+i)), [8]byte{byte(i)},
				func() error { return nil })
		})
	}
	wg.Wait()
	per := map[uint32]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		per[got[i].Room.ID]++
		if got[i].Room.Mode != "ctf" {
			t.Errorf("client %d got a room of mode %q", i, got[i].Room.Mode)
		}
	}
	full := 0
	for id, n := range per {
		r, _ := rooms.Room(id)
		if n > roomtabletest.MaxPlayers || r.Occupied() != n {
			t.Errorf("room %d: %d quick joins, %d occupied, of %d", id, n, r.Occupied(), roomtabletest.MaxPlayers)
		}
		if n == roomtabletest.MaxPlayers {
			full++
		}
	}
	if want := clients / roomtabletest.MaxPlayers; len(per) != want || full != want {
		t.Errorf("%d clients in %d rooms (%d full), want %d full rooms", clients, len(per), full, want)
	}
}

// TestQuickJoinPicksFullest: the fullest joinable matching room is picked,
// never a private one, one with a password or one the filter does not
// match; none leaves the quick join to create, if it may.
func TestQuickJoinPicksFullest(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{SeatsPerAddress: 1000, RoomsPerNetwork: 1000})
	mk := func(o room.CreateOptions, extra int) room.Room {
		g, err := rooms.CreateWith(ctx, ep("192.0.2.1:1"), o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range extra {
			if _, err := rooms.JoinWith(ctx, room.JoinRequest{Code: g.Room.Code, Player: ep(fmt.Sprintf("192.0.2.9:%d", 10+i)), Password: o.Password}); err != nil {
				t.Fatal(err)
			}
		}
		return g.Room
	}
	ctf := room.Meta{Mode: "ctf"}
	mk(room.CreateOptions{Meta: ctf}, 0)
	fuller := mk(room.CreateOptions{Meta: ctf}, 1)
	mk(room.CreateOptions{Meta: ctf, Private: true}, 2)
	mk(room.CreateOptions{Meta: ctf, Password: "x"}, 2)
	mk(room.CreateOptions{Meta: room.Meta{Mode: "dm"}}, 2)
	g, err := rooms.QuickJoin(ctx, room.Filter{Mode: "ctf"}, ep("192.0.2.5:5"), [8]byte{}, func() error { return errors.New("must not create") })
	if err != nil || g.Room.ID != fuller.ID {
		t.Fatalf("quick join got %+v, %v; want room %d", g.Room, err, fuller.ID)
	}
	if _, err := rooms.QuickJoin(ctx, room.Filter{Mode: "race"}, ep("192.0.2.5:6"), [8]byte{}, func() error { return room.ErrRateLimited }); err != room.ErrRateLimited {
		t.Fatalf("quick join that may not create: %v", err)
	}
}

// TestReconnectKeepsTheSeat: a room's report that it lost a token-holding
// player keeps a place for it ReconnectGrace; the player's return by its
// seat takes it again.
func TestReconnectKeepsTheSeat(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	g, _ := rooms.CreateWith(ctx, ep("192.0.2.1:1"), room.CreateOptions{})
	tok, _ := ext.ReadToken(g.Token)
	id := g.Room.ID
	rooms.Report(id, roomtable.Report{Players: 1, Connected: netip.MustParseAddr("192.0.2.1"), ConnectedSeat: tok.Seat})
	if r, _ := rooms.Room(id); r.Occupied() != 1 || r.Seats != 0 {
		t.Fatalf("after the creator came: %+v", r)
	}
	rooms.Report(id, roomtable.Report{Players: 0, Away: tok.Seat, AwayFrom: ep("192.0.2.1:1")})
	if r, _ := rooms.Room(id); r.Occupied() != 1 {
		t.Fatalf("the seat of a player away is not kept: %+v", r)
	}
	rooms.Report(id, roomtable.Report{Players: 1, Connected: netip.MustParseAddr("198.51.100.7"), ConnectedSeat: tok.Seat})
	if r, _ := rooms.Room(id); r.Occupied() != 1 || r.Seats != 0 {
		t.Fatalf("back from another address: %+v", r)
	}
}

package supervisor

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// listing is a registration of a room at addr.
func listing(addr string, players, max int) room.Listing {
	return room.Listing{Addr: netip.MustParseAddrPort(addr), Players: players, MaxPlayers: max, Name: "tee room", Game: "ctf", Map: "ctf5"}
}

func TestRegisterListsUpdatesAndUnregisters(t *testing.T) {
	s, sink := newTest(t, "game", 2, func(c *Config) { c.MaxInstances = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)

	a := listing("127.0.0.2:8190", 1, 8)
	a.Password = true
	r, err := s.Table().Register("udp 127.0.0.2:8190", a)
	if err != nil {
		t.Fatal(err)
	}
	want := room.Room{
		ID: r.ID, Port: 8190, State: packet.Waiting, Players: 1, MaxPlayers: 8, StartedAt: r.StartedAt,
		Source: "gg2", Name: "tee room", Game: "ctf", Map: "ctf5", Host: netip.MustParseAddr("127.0.0.2"), Password: true,
	}
	if r != want || r.ID == 0 || r.StartedAt.IsZero() {
		t.Fatalf("registered %+v, want %+v", r, want)
	}
	if ev := nextEvent(t, events); ev.Kind != room.Created || ev.Room != r {
		t.Fatalf("event %+v", ev)
	}
	if got, ok := listed(s, r.ID); !ok || got != r {
		t.Fatalf("listed %+v %v", got, ok)
	}
	sink.await(t, "room registered", `"source":"gg2"`)

	// The same registration again changes nothing, not even the version.
	v := s.Table().List().Version
	if again, err := s.Table().Register("udp 127.0.0.2:8190", a); err != nil || again != r {
		t.Fatalf("same registration: %+v %v", again, err)
	}
	if s.Table().List().Version != v {
		t.Fatal("version moved without a change")
	}
	// A change updates the room in place.
	a.Map, a.Players = "ctf2", 2
	up, err := s.Table().Register("udp 127.0.0.2:8190", a)
	if err != nil || up.ID != r.ID || up.Map != "ctf2" || up.Players != 2 || s.Table().List().Version == v {
		t.Fatalf("updated %+v %v (version %d, was %d)", up, err, s.Table().List().Version, v)
	}
	if ev := nextEvent(t, events); ev.Kind != room.Changed || ev.Room != up {
		t.Fatalf("event %+v", ev)
	}

	// Registered rooms take no port and no instance slot: with
	// MaxInstances 1, a room is still created, and a second is refused.
	b, err := s.Table().Register("udp 127.0.0.3:8303", listing("127.0.0.3:8303", 0, 4))
	if err != nil || b.ID == r.ID {
		t.Fatalf("second registration %+v %v", b, err)
	}
	nextEvent(t, events)
	c, err := s.Table().Create(context.Background(), ep("127.0.0.1:5000"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ID <= b.ID || b.ID <= r.ID {
		t.Fatalf("ids %d, %d, %d not from one increasing counter", r.ID, b.ID, c.ID)
	}
	if _, err := s.Table().Create(context.Background(), ep("127.0.0.1:5001")); !errors.Is(err, room.ErrCapacity) {
		t.Fatalf("second create with MaxInstances 1: %v", err)
	}
	if st := s.Stats(); st.Rooms != 3 || st.Registered != 2 || st.PortsInUse != 1 {
		t.Fatalf("stats: %d rooms (%d registered), %d ports in use", st.Rooms, st.Registered, st.PortsInUse)
	}
	nextEvent(t, events)

	s.Table().Unregister("udp 127.0.0.2:8190")
	s.Table().Unregister("udp 127.0.0.2:8190") // twice is harmless
	s.Table().Unregister("never registered")
	if ev := nextEvent(t, events); ev.Kind != room.Reaped || ev.Room.ID != r.ID || ev.Cause != "unregistered" {
		t.Fatalf("event %+v", ev)
	}
	if _, ok := listed(s, r.ID); ok {
		t.Fatal("unregistered room listed")
	}
	if _, err := s.Table().Join(context.Background(), r.ID, ep("127.0.0.1:5002"), room.Unproven); !errors.Is(err, room.ErrNoRoom) {
		t.Fatalf("join of unregistered room: %v", err)
	}
	if n := s.Stats().Reaped["unregistered"]; n != 1 {
		t.Fatalf("%d reaped as unregistered", n)
	}
	// A registration after the unregistration is a new room.
	again, err := s.Table().Register("udp 127.0.0.2:8190", a)
	if err != nil || again.ID <= c.ID {
		t.Fatalf("registered again: %+v %v", again, err)
	}
}

func TestRegisteredSeats(t *testing.T) {
	// Seats must live through the joins and registrations below, which
	// take milliseconds, and expire at the end: only a stall of the whole
	// test for the TTL could expire one early.
	s, _ := newTest(t, "game", 1, func(c *Config) { c.SeatTTL = 3 * time.Second })
	ctx := context.Background()
	const key = "udp 127.0.0.2:8190"
	r, err := s.Table().Register(key, listing("127.0.0.2:8190", 1, 3))
	if err != nil {
		t.Fatal(err)
	}
	// One player and two seats fill a room of three.
	if j, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5000"), room.Unproven); err != nil || j.Seats != 1 || j.Port != 8190 || j.Host != r.Host {
		t.Fatalf("join: %+v %v", j, err)
	}
	time.Sleep(5 * time.Millisecond) // the second seat is the younger
	if j, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5001"), room.Unproven); err != nil || j.Seats != 2 {
		t.Fatalf("join: %+v %v", j, err)
	}
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5002"), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("join of a full room: %v", err)
	}
	// A registration reporting one more player takes the oldest seat to
	// be that player: the first joiner holds no seat any more (joining
	// again takes a new one), the second still does.
	if up, err := s.Table().Register(key, listing("127.0.0.2:8190", 2, 3)); err != nil || up.Players != 2 || up.Seats != 1 {
		t.Fatalf("re-registered: %+v %v", up, err)
	}
	if j, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5001"), room.Unproven); err != nil || j.Seats != 1 {
		t.Fatalf("second joiner again: %+v %v", j, err)
	}
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:5000"), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("first joiner again in a full room: %v", err)
	}
	// Fewer players turn no seat into anything; unclaimed seats expire.
	if up, err := s.Table().Register(key, listing("127.0.0.2:8190", 0, 3)); err != nil || up.Seats != 1 {
		t.Fatalf("re-registered: %+v %v", up, err)
	}
	eventually(t, "the seat to expire", func() bool {
		got, ok := listed(s, r.ID)
		return ok && got.Seats == 0
	})
}

func TestRegisterRefusesAndShutdownClears(t *testing.T) {
	s, _ := newTest(t, "game", 1, nil)
	for _, l := range []room.Listing{
		{},
		{Addr: netip.MustParseAddrPort("127.0.0.2:0"), MaxPlayers: 4},
		{Addr: netip.MustParseAddrPort("127.0.0.2:1"), Players: -1, MaxPlayers: 4},
		{Addr: netip.MustParseAddrPort("127.0.0.2:1"), MaxPlayers: 1 << 16},
	} {
		if _, err := s.Table().Register("k", l); !errors.Is(err, room.ErrListing) {
			t.Errorf("Register(%+v): %v", l, err)
		}
	}
	if len(s.Table().List().Rooms) != 0 {
		t.Fatal("a refused listing is listed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)
	r, err := s.Table().Register("k", listing("127.0.0.2:8190", 0, 4))
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Kind != room.Reaped || ev.Room.ID != r.ID || ev.Cause != "stopped" {
		t.Fatalf("event %+v", ev)
	}
	if n := len(s.Table().List().Rooms); n != 0 {
		t.Fatalf("%d rooms after Shutdown", n)
	}
	if _, err := s.Table().Register("k", listing("127.0.0.2:8190", 0, 4)); !errors.Is(err, room.ErrClosed) {
		t.Fatalf("Register after Shutdown: %v", err)
	}
	s.Table().Unregister("k") // the edge may still unregister: harmless
}

package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// A lobby creates a supervisor at start-up, creates and joins rooms for its
// clients, and shuts it down before it exits.
func Example() {
	s, err := supervisor.New(supervisor.Config{
		FirstPort: 30000, LastPort: 30999,
		Warm: 2, // answer the next two creates without a spawn
		Room: map[string]string{"countdown": "3s", "match_duration": "2m"},
	}, zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()

	creator := netip.MustParseAddrPort("127.0.0.1:40000")
	r, err := s.Create(context.Background(), creator)
	if errors.Is(err, room.ErrCapacity) {
		fmt.Println("busy:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("play on port", r.Port)

	friend := netip.MustParseAddrPort("127.0.0.1:40001")
	if _, err := s.Join(context.Background(), r.ID, friend, room.Unproven); err != nil {
		fmt.Println("join:", err)
	}
}

// A game server that knows nothing of Foyer runs as a room with the exec
// driver; the supervisor learns its players by asking for its Teeworlds
// server info every second.
func Example_execDriver() {
	s, err := supervisor.New(supervisor.Config{
		FirstPort: 30000, LastPort: 30999,
		Command: []string{"/usr/games/DDNet-Server",
			"sv_port {port}; sv_name Room {room_id}; sv_max_clients {max_players}; sv_register 0"},
		Probe: "teeworlds",
	}, zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Shutdown(context.Background())
	r, err := s.Create(context.Background(), netip.MustParseAddrPort("127.0.0.1:40000"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("play on port", r.Port)
}

// An edge that hears of rooms running elsewhere registers them; they are
// listed and joined like the supervisor's own.
func ExampleSupervisor_Register() {
	s, err := supervisor.New(supervisor.Config{}, zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Shutdown(context.Background())
	r, err := s.Register("udp 192.0.2.7:8190", room.Listing{
		Addr: netip.MustParseAddrPort("192.0.2.7:8190"), Players: 1, MaxPlayers: 8, Name: "tee room",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Source, r.Host, r.Port, r.Players, r.MaxPlayers, r.State)
	s.Unregister("udp 192.0.2.7:8190")
	fmt.Println(len(s.List().Rooms), "rooms")
	// Output:
	// gg2 192.0.2.7 8190 1 8 waiting
	// 0 rooms
}

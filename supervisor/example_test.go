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
	cfg := supervisor.DefaultConfig()
	cfg.Warm = 2 // answer the next two creates without a spawn
	cfg.Room = map[string]string{"countdown": "3s", "match_duration": "2m"}
	s, err := supervisor.New(cfg, zerolog.Nop())
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
	r, err := s.Table().Create(context.Background(), creator)
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
	if _, err := s.Table().Join(context.Background(), r.ID, friend, room.Unproven); err != nil {
		fmt.Println("join:", err)
	}
}

// A game server that knows nothing of Foyer runs as a room with the exec
// driver; the supervisor learns its players by asking for its Teeworlds
// server info every second.
func Example_execDriver() {
	cfg := supervisor.DefaultConfig()
	cfg.Command = []string{"/usr/games/DDNet-Server",
		"sv_port {port}; sv_name Room {room_id}; sv_max_clients {max_players}; sv_register 0"}
	cfg.Probe = "teeworlds"
	s, err := supervisor.New(cfg, zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Shutdown(context.Background())
	r, err := s.Table().Create(context.Background(), netip.MustParseAddrPort("127.0.0.1:40000"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("play on port", r.Port)
}

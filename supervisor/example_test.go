package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/supervisor"
)

// A lobby creates a supervisor at start-up, creates and joins rooms for its
// clients, and shuts it down before it exits.
func Example() {
	s, err := supervisor.New(supervisor.Config{
		FirstPort: 30000, LastPort: 30999,
		Warm: 2, // answer the next two creates without a spawn
		Room: map[string]string{"countdown": "3s", "match_duration": "2m"},
	})
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
	room, err := s.Create(context.Background(), creator)
	if errors.Is(err, supervisor.ErrCapacity) {
		fmt.Println("busy:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("play on port", room.Port)

	friend := netip.MustParseAddrPort("127.0.0.1:40001")
	if _, err := s.Join(context.Background(), room.ID, friend); err != nil {
		fmt.Println("join:", err)
	}
}

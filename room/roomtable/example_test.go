package roomtable_test

import (
	"fmt"
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
)

// An edge that hears of rooms running elsewhere registers them; they are
// listed and joined like the rooms the table's Spawner runs.
func ExampleTable_Register() {
	t, err := roomtable.New(roomtable.DefaultConfig(), nil, zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	r, err := t.Register("udp 192.0.2.7:8190", room.Listing{
		Addr: netip.MustParseAddrPort("192.0.2.7:8190"), Players: 1, MaxPlayers: 8, Name: "tee room",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Source, r.Host, r.Port, r.Players, r.MaxPlayers, r.State)
	t.Unregister("udp 192.0.2.7:8190")
	fmt.Println(len(t.List().Rooms), "rooms")
	// Output:
	// gg2 192.0.2.7 8190 1 8 waiting
	// 0 rooms
}

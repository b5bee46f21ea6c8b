package gunzserver

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/gunz"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// BenchmarkResponse measures building and encoding a locator response.
func BenchmarkResponse(b *testing.B) {
	for _, rooms := range []int{10, 1000} {
		table := roomtabletest.New(b, roomtable.Config{})
		for range rooms {
			table.Add(room.Room{Port: 30000, State: packet.Waiting, MaxPlayers: 4})
		}
		r := responder{l: &Locator{rooms: table}}
		host := netip.MustParseAddr("127.0.0.1")
		b.Run(fmt.Sprintf("rooms=%d", rooms), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				resp := gunz.Response{Serial: 1, Servers: r.list(host, true)}
				if r.out, err = resp.Append(r.out[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package roomtable_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// BenchmarkQuickJoin100 is 100 clients quick-joining at once a table of
// rooms of 4 places, none there at first: what one quick join costs under
// that race, from the first pick to the last seat, room starts included
// (the test table starts a room without a process). Metric: ns per quick
// join, and the rooms started (exactly 25).
func BenchmarkQuickJoin100(b *testing.B) {
	const clients = 100
	players := make([]string, clients)
	for i := range players {
		players[i] = fmt.Sprintf("192.0.2.%d:%d", 1+i%200, 1000+i)
	}
	f := room.Filter{Mode: "ctf"}
	rooms := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		t := roomtabletest.New(b, roomtable.Config{SeatsPerAddress: 1000, RoomsPerNetwork: 1000})
		b.StartTimer()
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				if _, err := t.QuickJoin(ctx, f, ep(players[i]), [8]byte{}, func() error { return nil }); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		rooms = len(t.List().Rooms)
		t.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*clients), "ns/quick-join")
	b.ReportMetric(float64(rooms), "rooms")
}

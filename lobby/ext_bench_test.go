package lobby

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// benchLobby is a lobby without sockets over a table of n rooms, one in
// every 100 of mode "race", the rest "ctf"; its client at 127.0.0.1 is
// validated.
func benchLobby(b *testing.B, n int) *Lobby {
	rooms := roomtabletest.New(b, roomtable.Config{})
	for i := range n {
		mode := "ctf"
		if i%100 == 0 {
			mode = "race"
		}
		rooms.Add(room.Room{MaxPlayers: 8, Players: i % 8, Name: fmt.Sprintf("room %05d", i), Mode: mode, Map: "dust",
			Tags: room.TagsOf([]room.Tag{{Key: "region", Value: "eu"}})})
	}
	cfg := testConfig()
	cfg.Rate, cfg.Burst = 1e9, 1e9
	l := cfg.newLobby(rooms)
	l.guard.Received(netip.MustParseAddr("127.0.0.1"), time.Now())
	return l
}

// BenchmarkExtListVsSeedList is the extension's listing against the
// seed's, side by side in one run: an extended LIST with a filter that
// one room in 100 matches, over 10,000 rooms (each page scans the table
// until it is full), and a seed LIST of 10 rooms (a cached encoding).
// Both go through the whole of handle, parse to reply; the rooms are
// rows of the real table. Metrics: ns of each, and their ratio.
func BenchmarkExtListVsSeedList(b *testing.B) {
	big, small := benchLobby(b, 10000), benchLobby(b, 10)
	from := netip.MustParseAddrPort("127.0.0.1:4000")
	local := netip.MustParseAddr("127.0.0.1")
	extReq, err := (&ext.Message{Header: packet.Header{Type: ext.List}, Filter: ext.Filter{Mode: "race", MinFree: 1,
		Tags: []ext.Tag{{Key: "region", Value: "eu"}}}}).Append(nil)
	if err != nil {
		b.Fatal(err)
	}
	seedReq, _ := (&packet.Message{Header: packet.Header{Type: packet.ListRooms}}).Append(nil)
	var bigOffers, smallOffers offers
	out := make([]byte, 0, ext.MaxDatagram)
	// Warm both: the first LIST of a version builds its caches.
	out = big.handle(discard{}, discard{}, &bigOffers, extReq, from, arrival{to: local}, time.Now(), out[:0])
	if m, err := ext.Parse(out); err != nil || m.Type != ext.Rooms || len(m.Entries) == 0 {
		b.Fatalf("the extended LIST answered %x (%v)", out, err)
	}
	out = small.handle(discard{}, discard{}, &smallOffers, seedReq, from, arrival{to: local}, time.Now(), out[:0])
	const each = 100
	var extTime, seedTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range each {
			out = big.handle(discard{}, discard{}, &bigOffers, extReq, from, arrival{to: local}, time.Now(), out[:0])
		}
		t1 := time.Now()
		for range each {
			out = small.handle(discard{}, discard{}, &smallOffers, seedReq, from, arrival{to: local}, time.Now(), out[:0])
		}
		extTime += t1.Sub(t0)
		seedTime += time.Since(t1)
	}
	n := float64(b.N * each)
	b.ReportMetric(float64(extTime.Nanoseconds())/n, "ns/ext-list-10000")
	b.ReportMetric(float64(seedTime.Nanoseconds())/n, "ns/seed-list-10")
	b.ReportMetric(float64(extTime)/float64(seedTime), "ext/seed")
}

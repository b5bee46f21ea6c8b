package web

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// BenchmarkPage measures the pages of 1,000 registered servers: made
// afresh (the table changed) and from the cache.
func BenchmarkPage(b *testing.B) {
	const servers = 1000
	rt := roomtabletest.New(b, roomtable.Config{})
	d := &describer{details: map[uint16]Details{}}
	for i := range servers {
		port := uint16(10000 + i)
		rt.Register(fmt.Sprint(i), room.Listing{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), port),
			Players: i % 8, MaxPlayers: 8, Name: fmt.Sprintf("Bacon's <server> %d", i), Game: "Gang Garrison 2", Map: "ctf_truefort"})
		d.details[port] = Details{Lobby: gg2.GG2LobbyUUID, Bots: i % 3, GameVersion: "v2.3.7", GameURL: "https://www.ganggarrison.com/"}
	}
	s := newServer(DefaultConfig(), rt, d, nil, zerolog.Nop())
	host := netip.MustParseAddr("127.0.0.1")
	for _, kind := range []struct {
		name string
		k    pageKind
	}{{"html", htmlPage}, {"json", jsonPage}} {
		b.Run(fmt.Sprintf("servers=%d/%s/made", servers, kind.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.pages = pageCache{} // as after a change of the table
				s.page(kind.k, host)
			}
		})
		b.Run(fmt.Sprintf("servers=%d/%s/cached", servers, kind.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.page(kind.k, host)
			}
		})
	}
}

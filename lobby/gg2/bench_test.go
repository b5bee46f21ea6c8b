package gg2

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/lobby/internal/memrooms"
	"github.com/foyerlobby/foyer/packet"
	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// BenchmarkListReply measures the reply to a list query, from the cache
// (the table did not change) and encoded afresh (it changed every time).
func BenchmarkListReply(b *testing.B) {
	for _, rooms := range []int{10, 1000} {
		table := memrooms.New()
		cfg := DefaultConfig()
		cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
		cfg.LegacyListen = netip.AddrPort{}
		srv, err := New(cfg, table, table, nil, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		var last room.Room
		for range rooms {
			last = table.Add(room.Room{Port: 30000, State: packet.Waiting, MaxPlayers: 4})
		}
		host := netip.MustParseAddr("127.0.0.1")
		b.Run(fmt.Sprintf("rooms=%d/cached", rooms), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := srv.listReply(gg2wire.GG2LobbyUUID, host); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rooms=%d/changed", rooms), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				table.Update(last) // a new version
				if _, err := srv.listReply(gg2wire.GG2LobbyUUID, host); err != nil {
					b.Fatal(err)
				}
			}
		})
		srv.Close()
	}
}

package gg2server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// BenchmarkListReply measures the reply to a list query, from the cache
// (the table did not change) and encoded afresh (it changed every time).
func BenchmarkListReply(b *testing.B) {
	for _, rooms := range []int{10, 1000} {
		table := roomtabletest.New(b, roomtable.Config{})
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
				if _, err := srv.listReply(gg2.GG2LobbyUUID, host); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rooms=%d/changed", rooms), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				last.Players ^= 1 // a new player count: a new version
				table.Update(last)
				if _, err := srv.listReply(gg2.GG2LobbyUUID, host); err != nil {
					b.Fatal(err)
				}
			}
		})
		srv.Close()
	}
}

// legacyBenchServer is a served front-end with n registered servers of
// legacy version 1, its sources unlimited, and its legacy port's address.
func legacyBenchServer(b *testing.B, n int) (*Server, netip.AddrPort) {
	b.Helper()
	table := roomtabletest.New(b, roomtable.Config{})
	cfg := DefaultConfig()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.LegacyListen = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.MaxListConnsPerIP = cfg.MaxListConns
	cfg.MaxServersPerIP, cfg.MaxServersPerNetwork = n, n
	cfg.UDPTransport = true
	srv, err := New(cfg, table, table, limit.NewGuard(edgetest.Limits(1e9, 1e9)), zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	edgetest.Serve(b, srv.Serve)
	v1 := gg2.ShortLegacyVersion(1).ID
	host := netip.MustParseAddr("127.0.0.1")
	for i := range n {
		srv.handleDatagram(context.Background(), registration(byte(i), uint16(10000+i), gg2.UDP, gg2.Counted,
			"name", fmt.Sprintf("Bacon's server %d", i), "map", "ctf_truefort", "protocol_id", string(v1[:])), host, time.Now())
	}
	return srv, srv.Addrs()[1]
}

// BenchmarkLegacyReply measures the answer to a legacy query of 255
// servers, from the cache and made afresh.
func BenchmarkLegacyReply(b *testing.B) {
	srv, _ := legacyBenchServer(b, gg2.MaxLegacyServers)
	v1 := gg2.ShortLegacyVersion(1).ID
	host := netip.MustParseAddr("127.0.0.1")
	b.Run("servers=255/cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := srv.legacyReply(v1, host); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("servers=255/made", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			srv.lists = replyCache{} // as after a change of the table
			if _, err := srv.legacyReply(v1, host); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLegacyQueryTCP measures legacy queries answered per second over
// loopback TCP, one connection each as clients make them, against Foyer
// and against a bare TCP server that reads the version and writes the
// same reply from memory: the cost of Foyer's limits and bookkeeping.
func BenchmarkLegacyQueryTCP(b *testing.B) {
	srv, foyer := legacyBenchServer(b, 20)
	reply, err := srv.legacyReply(gg2.ShortLegacyVersion(1).ID, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		b.Fatal(err)
	}
	for _, target := range []struct {
		name string
		addr netip.AddrPort
	}{{"foyer", foyer}, {"bare", bareServer(b, reply)}} {
		b.Run(target.name, func(b *testing.B) {
			for b.Loop() {
				c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(target.addr))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write([]byte{1}); err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(c)
				c.Close()
				if err != nil || len(got) != len(reply) {
					b.Fatalf("read %d bytes, %v", len(got), err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// bareServer answers every connection that sends a byte with reply.
func bareServer(b *testing.B, reply []byte) netip.AddrPort {
	b.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.AcceptTCP()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var q [1]byte
				if _, err := io.ReadFull(c, q[:]); err == nil {
					c.Write(reply)
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

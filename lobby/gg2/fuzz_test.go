package gg2

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/lobby/internal/memrooms"
	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
)

// FuzzHandleDatagram feeds one datagram to the UDP path and checks the
// round trip: a server is registered exactly when the datagram is a valid
// registration for this lobby over UDP, and the list reply, parsed back,
// shows what the datagram said.
func FuzzHandleDatagram(f *testing.F) {
	// Seeds in testdata: both forms, TCP, another lobby, an unregister.
	host := netip.MustParseAddr("127.0.0.1")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // TCP checks fail at once, without dialling
	f.Fuzz(func(t *testing.T, b []byte) {
		table := memrooms.New()
		cfg := DefaultConfig()
		s := newServer(cfg, table, table, nil, zerolog.Nop())
		s.handleDatagram(cancelled, b, host, time.Now())
		s.work.Wait()

		r, err := gg2wire.ParseRegistration(b)
		want := err == nil && r.LobbyID == cfg.Lobby && r.Transport == gg2wire.UDP
		keys := table.Keys()
		if !want {
			if len(keys) != 0 {
				t.Fatalf("registered %v from %x (parse error %v)", keys, b, err)
			}
			return
		}
		if len(keys) != 1 || keys[0] != key(netip.AddrPortFrom(host, r.Port), gg2wire.UDP) {
			t.Fatalf("keys %v for a valid registration", keys)
		}
		reply, err := s.listReply(host)
		if err != nil {
			t.Fatal(err)
		}
		l, err := gg2wire.ParseListReply(reply)
		if err != nil {
			t.Fatalf("own list reply %x: %v", reply, err)
		}
		if len(l.Servers) != 1 {
			t.Fatalf("listed %d servers", len(l.Servers))
		}
		got := l.Servers[0]
		if !got.KeyValues.Equal(r.KeyValues) || got.V4 != netip.AddrPortFrom(host, r.Port) ||
			got.Slots != r.Slots || got.Players != r.Players || got.Bots != r.Bots || got.Flags != r.Flags {
			t.Fatalf("listed %+v, registered %+v", got, r)
		}
	})
}

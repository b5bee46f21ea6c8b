package gg2server

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// FuzzHandleDatagram feeds one datagram to the UDP path and checks the
// round trip: a server is registered exactly when the datagram is a valid
// registration over UDP whose name fits MaxKVBytes, and its lobby's list
// reply, parsed back, shows what the datagram said, within the bounds:
// counts capped at MaxPlayers, keys in order up to MaxKVBytes and maxKeys,
// and every key when they all fit.
func FuzzHandleDatagram(f *testing.F) {
	// Seeds in testdata: both forms, TCP, another lobby, an unregister.
	host := netip.MustParseAddr("127.0.0.1")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // TCP checks fail at once, without dialling
	f.Fuzz(func(t *testing.T, b []byte) {
		table := roomtabletest.New(t, roomtable.Config{})
		cfg := DefaultConfig()
		cfg.UDPTransport = true // UDP servers are listed at once
		s := newServer(cfg, table, table, nil, zerolog.Nop())
		s.handleDatagram(cancelled, b, host, time.Now())
		s.work.Wait()

		r, err := gg2.ParseRegistration(b)
		name, _ := r.KeyValues.Get("name")
		want := err == nil && r.Transport == gg2.UDP &&
			wireLen(gg2.KeyValue{Key: "name", Value: name}) <= cfg.MaxKVBytes
		keys := table.RegisteredKeys()
		if !want {
			if len(keys) != 0 {
				t.Fatalf("registered %v from %x (parse error %v)", keys, b, err)
			}
			return
		}
		if len(keys) != 1 || keys[0] != key(netip.AddrPortFrom(host, r.Port), gg2.UDP) {
			t.Fatalf("keys %v for a valid registration", keys)
		}
		reply, err := s.listReply(r.LobbyID, host)
		if err != nil {
			t.Fatal(err)
		}
		l, err := gg2.ParseListReply(reply)
		if err != nil {
			t.Fatalf("own list reply %x: %v", reply, err)
		}
		if len(l.Servers) != 1 {
			t.Fatalf("listed %d servers", len(l.Servers))
		}
		got := l.Servers[0]
		capped := func(n uint16) uint16 { return min(n, uint16(cfg.MaxPlayers)) }
		if !keptInOrder(got.KeyValues, r.KeyValues, cfg.MaxKVBytes) || got.V4 != netip.AddrPortFrom(host, r.Port) ||
			got.Slots != capped(r.Slots) || got.Players != capped(r.Players) || got.Bots != r.Bots || got.Flags != r.Flags {
			t.Fatalf("listed %+v, registered %+v", got, r)
		}
	})
}

// keptInOrder reports whether kept is sent cut to limit bytes and maxKeys:
// entries of sent in order, the name among them, within the bounds, and
// all of sent when it is within them.
func keptInOrder(kept, sent gg2.KeyValues, limit int) bool {
	size, all, j := 0, 0, 0
	for _, e := range sent {
		all += wireLen(e)
	}
	for _, e := range kept {
		for j < len(sent) && sent[j].Key != e.Key {
			j++
		}
		if j == len(sent) || !bytes.Equal(sent[j].Value, e.Value) {
			return false
		}
		size += wireLen(e)
	}
	_, named := kept.Get("name")
	if all <= limit && len(sent) <= maxKeys {
		return kept.Equal(sent)
	}
	return named && size <= limit && len(kept) <= maxKeys
}

// FuzzHandleLegacyDatagram feeds one datagram to the legacy UDP path: a
// server waits for its TCP check exactly when the datagram is a valid
// legacy registration, with the name and protocol id the datagram gives.
func FuzzHandleLegacyDatagram(f *testing.F) {
	// Seeds in testdata: both version forms, a mod, port 0, a cut datagram.
	host := netip.MustParseAddr("127.0.0.1")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // TCP checks fail at once, without dialling
	f.Fuzz(func(t *testing.T, b []byte) {
		table := roomtabletest.New(t, roomtable.Config{})
		s := newServer(DefaultConfig(), table, table, nil, zerolog.Nop())
		s.handleLegacyDatagram(cancelled, b, host, time.Now())
		s.work.Wait()

		r, err := gg2.ParseLegacyRegistration(b)
		st := s.Stats()
		if err != nil {
			if st.Pending != 0 || st.Registered != 0 {
				t.Fatalf("%x kept (parse error %v): %+v", b, err, st)
			}
			return
		}
		e := s.table.byKey[key(netip.AddrPortFrom(host, r.Port), gg2.TCP)]
		if st.Pending != 1 || e == nil {
			t.Fatalf("a valid registration is not pending: %+v", st)
		}
		in := gg2.ParseLegacyInfo(r.Info)
		if e.listing.Name != string(in.Name) || e.protocol != r.Version.ID || !e.hasProtocol || e.lobby != gg2.GG2LobbyUUID {
			t.Fatalf("kept %+v for %+v", e, r)
		}
	})
}

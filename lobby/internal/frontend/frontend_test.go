package frontend

import (
	"net/netip"
	"testing"

	"github.com/foyerlobby/foyer/supervisor"
)

func TestSourceLimiterBounded(t *testing.T) {
	l := NewSourceLimiter(0.001, 2, 100)
	a := netip.MustParseAddr("192.0.2.1")
	if !l.Allow(a) || !l.Allow(a) || l.Allow(a) {
		t.Error("burst of 2 not enforced")
	}
	// IPv4-mapped IPv6 is the same source.
	if l.Allow(netip.MustParseAddr("::ffff:192.0.2.1")) {
		t.Error("mapped address got a bucket of its own")
	}
	for i := range 1000 {
		l.Allow(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}))
	}
	if n := l.Len(); n != 100 {
		t.Errorf("%d sources tracked, want the bound 100", n)
	}
}

func TestByteBudgetPerNetwork(t *testing.T) {
	b := NewByteBudget(1, 10)
	if !b.Allow(netip.MustParseAddr("192.0.2.1"), MaxDatagram) {
		t.Fatal("one largest datagram must fit")
	}
	if b.Allow(netip.MustParseAddr("192.0.2.200"), 100) {
		t.Error("same /24 not charged together")
	}
	if !b.Allow(netip.MustParseAddr("192.0.3.1"), 100) {
		t.Error("another /24 charged")
	}
	if !b.Allow(netip.MustParseAddr("2001:db8:0:100::1"), 100) || b.Allow(netip.MustParseAddr("2001:db8:0:1ff::1"), MaxDatagram) {
		t.Error("IPv6 /56 not charged together")
	}
}

func TestRoomKeys(t *testing.T) {
	kv := RoomKeys(supervisor.Room{ID: 42}, "foyer")
	if kv.Name() != "Foyer room 42" || string(kv[1].Value) != "foyer" || string(kv[2].Value) != "default" {
		t.Errorf("defaults %+v", kv)
	}
	kv = RoomKeys(supervisor.Room{ID: 42, Name: "n", Game: "g", Map: "m"}, "foyer")
	if kv.Name() != "n" || string(kv[1].Value) != "g" || string(kv[2].Value) != "m" {
		t.Errorf("set %+v", kv)
	}
}

package client

import (
	"net/netip"
	"testing"
)

func TestDirectedBroadcast(t *testing.T) {
	for _, tc := range []struct {
		prefix   string
		maskBits int
		want     string // "" for none
	}{
		{"192.168.1.7/24", 32, "192.168.1.255"},
		{"10.1.2.3/8", 32, "10.255.255.255"},
		{"172.16.5.4/20", 32, "172.16.15.255"},
		{"192.168.1.9/30", 32, "192.168.1.11"},
		{"192.168.1.9/31", 32, ""},
		{"192.168.1.9/32", 32, ""},
		{"192.168.1.7/24", 128, ""}, // an IPv4 address under an IPv6-sized mask
		{"fd00::1/64", 128, ""},
	} {
		got, ok := directedBroadcast(netip.MustParsePrefix(tc.prefix), tc.maskBits)
		if tc.want == "" {
			if ok {
				t.Errorf("directedBroadcast(%s) = %s, want none", tc.prefix, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(tc.want) {
			t.Errorf("directedBroadcast(%s) = %s, %v; want %s", tc.prefix, got, ok, tc.want)
		}
	}
}

func TestBroadcastAddrsStartWithLimited(t *testing.T) {
	got := broadcastAddrs()
	if len(got) == 0 || got[0] != netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		t.Fatalf("broadcastAddrs() = %v, want 255.255.255.255 first", got)
	}
	for _, a := range got {
		if !a.Is4() || a.IsLoopback() {
			t.Fatalf("broadcastAddrs() has %s, want IPv4 non-loopback only", a)
		}
	}
}

func TestAllLoopback(t *testing.T) {
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	if !allLoopback(lo) {
		t.Error("allLoopback(127.0.0.1, 127.0.0.2) = false")
	}
	if allLoopback(append(lo, netip.MustParseAddr("192.168.1.255"))) {
		t.Error("allLoopback with a LAN address = true")
	}
	if allLoopback(nil) {
		t.Error("allLoopback(nothing) = true")
	}
}

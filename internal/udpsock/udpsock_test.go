package udpsock

import (
	"net"
	"net/netip"
	"testing"
)

// A room's port is bound at the address asked for, or at every address
// when none is.
func TestListenBindsWhereAsked(t *testing.T) {
	for _, tc := range []struct {
		bind netip.Addr
		want func(netip.Addr) bool
	}{
		{netip.MustParseAddr("127.0.0.1"), func(a netip.Addr) bool { return a.Unmap() == netip.MustParseAddr("127.0.0.1") }},
		{netip.Addr{}, netip.Addr.IsUnspecified},
	} {
		c, err := Listen(tc.bind, 0)
		if err != nil {
			t.Fatal(err)
		}
		if at := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr(); !tc.want(at) {
			t.Errorf("bound to %v for %v", at, tc.bind)
		}
		c.Close()
	}
}

// A descriptor passed on is taken if it is a UDP socket, and refused
// otherwise.
func TestFromFileTakesOnlyUDP(t *testing.T) {
	u, err := Listen(netip.MustParseAddr("127.0.0.1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	f, err := u.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := FromFile(f)
	if err != nil {
		t.Fatalf("UDP socket refused: %v", err)
	}
	if c.LocalAddr().String() != u.LocalAddr().String() {
		t.Errorf("took %v, passed %v", c.LocalAddr(), u.LocalAddr())
	}
	c.Close()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tf, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	if c, err := FromFile(tf); err == nil {
		c.Close()
		t.Error("a TCP listener taken for a UDP socket")
	}
}

//go:build linux

package replyaddr

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
)

// The source Append writes, Read reads back, for either family; an
// invalid or unspecified source writes nothing.
func TestAppendReadsBack(t *testing.T) {
	for _, a := range []string{"192.0.2.7", "2001:db8::7"} {
		src := netip.MustParseAddr(a)
		oob := Append([]byte("x"), src)[1:]
		if _, got := Find(oob); got != src {
			t.Errorf("%s: read back %v", a, got)
		}
	}
	for _, src := range []netip.Addr{{}, netip.IPv4Unspecified(), netip.IPv6Unspecified()} {
		if b := Append(nil, src); len(b) != 0 {
			t.Errorf("%v: appended %x", src, b)
		}
	}
}

// A socket bound to every address answers from the address a datagram
// was sent to: a client that sent to 127.0.0.2 hears from 127.0.0.2, not
// from 127.0.0.1, which the routes would pick for a reply to 127.0.0.1.
// The client's socket is connected to 127.0.0.2, as most clients' are,
// and would never see a reply from elsewhere.
func TestReplyLeavesFromTheAddressAsked(t *testing.T) {
	for _, network := range []string{"udp4", "udp"} { // IPv4 alone, and dual-stack
		srv, err := net.ListenUDP(network, &net.UDPAddr{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if err := Enable(srv, network == "udp"); err != nil {
			t.Fatal(err)
		}
		to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), srv.LocalAddr().(*net.UDPAddr).AddrPort().Port())
		c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, net.UDPAddrFromAddrPort(to))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, withSource := range []bool{false, true} {
			if _, err := c.Write([]byte("ask")); err != nil {
				t.Fatal(err)
			}
			buf, oob := make([]byte, 16), make([]byte, Space)
			srv.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, oobn, _, from, err := srv.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				t.Fatal(err)
			}
			dst, src := Find(oob[:oobn])
			if dst != to.Addr() || src != to.Addr() {
				t.Fatalf("%s: arrived at %v, answer from %v; sent to %v", network, dst, src, to.Addr())
			}
			var answer []byte
			if withSource {
				answer = Append(nil, src)
			}
			if _, _, err := srv.WriteMsgUDPAddrPort([]byte("answer"), answer, from); err != nil {
				t.Fatal(err)
			}
			b, err := udptest.Read(c, to, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if got := b != nil; got != withSource {
				t.Errorf("%s: answered with the source %v: the client heard it %v", network, withSource, got)
			}
		}
	}
}

// Package udptest holds the UDP client pieces that the tests of several
// packages share: a loopback socket that lives as long as the test, a send
// that fails the test, and a read bounded by a deadline. What a test sends
// and how it decodes the answer stay with the test, so that each suite
// keeps its own view of the wire.
package udptest

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

// Listen opens a UDP socket on ip at a free port and closes it when the
// test ends.
func Listen(t testing.TB, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Send writes one datagram b from c to to, failing the test if it cannot.
func Send(t testing.TB, c *net.UDPConn, to netip.AddrPort, b []byte) {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatal(err)
	}
}

// Read waits up to wait for one datagram from from on c. A nil datagram
// with a nil error means none came in time: a test proving that no answer
// is sent needs that to be an outcome, not a failure. Datagrams from any
// other address are dropped unread: the port Listen chose may have been
// another test's a moment before, whose peer can still be answering it.
// Read does not fail the test itself so that goroutines other than the
// test's may call it.
func Read(c *net.UDPConn, from netip.AddrPort, wait time.Duration) ([]byte, error) {
	buf := make([]byte, 1<<16)
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return nil, err
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	for {
		n, src, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil, nil
			}
			return nil, err
		}
		if netip.AddrPortFrom(src.Addr().Unmap(), src.Port()) == from {
			return buf[:n], nil
		}
	}
}

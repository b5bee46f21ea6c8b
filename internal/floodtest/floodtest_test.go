//go:build linux

package floodtest

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// The datagrams arrive, from the forged sources, with the payload.
func TestRunDelivers(t *testing.T) {
	requiretest.RawSocket(t)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{To: c.LocalAddr().(*net.UDPAddr).AddrPort(), Payload: []byte("hello"), Sources: 3, Rate: 1000})
		done <- err
	}()
	seen := map[netip.AddrPort]bool{}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(seen) < 3 {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			cancel()
			t.Fatalf("read: %v (run: %v)", err, <-done)
		}
		if string(buf[:n]) != "hello" {
			t.Fatalf("payload %q", buf[:n])
		}
		seen[from] = true
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if !seen[Source(i)] {
			t.Errorf("source %d (%v) not seen among %v", i, Source(i), seen)
		}
	}
}

// Spread over networks, consecutive sources come from networks of their
// own, and the datagrams arrive from them.
func TestRunSpreadsOverNetworks(t *testing.T) {
	if a, b := SpreadSource(0, 3).Addr(), SpreadSource(1, 3).Addr(); a.As4()[2] == b.As4()[2] {
		t.Errorf("sources 0 and 1 of 3 networks: %v and %v", a, b)
	}
	if a, b := SpreadSource(0, 3).Addr(), SpreadSource(3, 3).Addr(); a.As4()[2] != b.As4()[2] || a == b {
		t.Errorf("sources 0 and 3 of 3 networks: %v and %v", a, b)
	}
	requiretest.RawSocket(t) // the sources below are forged
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{To: c.LocalAddr().(*net.UDPAddr).AddrPort(), Payload: []byte("hello"), Sources: 6, Networks: 3, Rate: 1000})
		done <- err
	}()
	seen := map[netip.AddrPort]bool{}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(seen) < 6 {
		_, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			cancel()
			t.Fatalf("read: %v (run: %v)", err, <-done)
		}
		seen[from] = true
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if !seen[SpreadSource(i, 3)] {
			t.Errorf("source %d (%v) not seen among %v", i, SpreadSource(i, 3), seen)
		}
	}
}

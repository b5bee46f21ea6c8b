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

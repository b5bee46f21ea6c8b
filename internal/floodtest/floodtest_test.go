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

// flood runs cfg against a socket of its own until the "hello" datagrams
// have come from n sources, and returns those sources.
func flood(t *testing.T, cfg Config, n int) map[netip.AddrPort]bool {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg.To, cfg.Payload, cfg.Rate = c.LocalAddr().(*net.UDPAddr).AddrPort(), []byte("hello"), 1000
	go func() {
		_, err := Run(ctx, cfg)
		done <- err
	}()
	seen := map[netip.AddrPort]bool{}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(seen) < n {
		m, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			cancel()
			t.Fatalf("read: %v (run: %v)", err, <-done)
		}
		if string(buf[:m]) != "hello" {
			t.Fatalf("payload %q", buf[:m])
		}
		seen[from] = true
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return seen
}

// The datagrams arrive, from the forged sources, with the payload.
func TestRunDelivers(t *testing.T) {
	requiretest.RawSocket(t)
	seen := flood(t, Config{Sources: 3}, 3)
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
	seen := flood(t, Config{Sources: 6, Networks: 3}, 6)
	for i := range 6 {
		if !seen[SpreadSource(i, 3)] {
			t.Errorf("source %d (%v) not seen among %v", i, SpreadSource(i, 3), seen)
		}
	}
}

// A flood sent once ends when every source has sent one datagram, and
// each arrives once.
func TestRunOnceSendsEachSourceOnce(t *testing.T) {
	requiretest.RawSocket(t)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadBuffer(1 << 20); err != nil { // all of it is queued before the reads
		t.Fatal(err)
	}
	// Full batches and a last part; a timeout for a flood that does not end.
	const sources = 3*batch + 5
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent, err := Run(ctx, Config{To: c.LocalAddr().(*net.UDPAddr).AddrPort(), Payload: []byte("hello"), Sources: sources, Once: true})
	if err != nil || sent != sources {
		t.Fatalf("sent %d of %d sources: %v", sent, sources, err)
	}
	seen := map[netip.AddrPort]int{}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(time.Second)) // the datagrams are queued already
	for {
		_, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			break
		}
		seen[from]++
	}
	for i := range sources {
		if seen[Source(i)] != 1 {
			t.Errorf("source %d (%v) arrived %d times", i, Source(i), seen[Source(i)])
		}
	}
	if len(seen) != sources {
		t.Errorf("%d sources arrived, want %d", len(seen), sources)
	}
}

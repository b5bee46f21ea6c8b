package loadtest

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
)

func listen(t *testing.T) (*net.UDPConn, netip.AddrPort) {
	t.Helper()
	c := udptest.Listen(t, "127.0.0.1")
	return c, c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func mix(t *testing.T) [][]byte {
	t.Helper()
	list, err := (&packet.Message{Header: packet.Header{Type: packet.ListRooms}}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{list}
}

func TestRunAgainstEcho(t *testing.T) {
	c, addr := listen(t)
	go Echo(c, func(req []byte) int { return len(req) })
	sources := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	res, err := Run(context.Background(), Config{Target: addr, Sources: sources, Workers: 2, Requests: 1001, Mix: mix(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answered != 1001 || res.Lost != 0 || res.Rate <= 0 || res.P50 <= 0 || res.P99 < res.P50 {
		t.Errorf("result %v", res)
	}
}

// Both echoes answer a request with its own bytes, zero-padded to the
// length asked for it, and never shorter than the request.
func TestEchoesPadToTheAskedSize(t *testing.T) {
	for name, echo := range map[string]func(*net.UDPConn, func([]byte) int){"Echo": Echo, "EchoBatched": EchoBatched} {
		t.Run(name, func(t *testing.T) {
			c, addr := listen(t)
			go echo(c, func(req []byte) int { return int(req[0]) })
			client, _ := listen(t)
			for _, req := range [][]byte{{124, 1, 2}, {2, 7, 7, 7}, {4, 9, 9, 9}} {
				if _, err := client.WriteToUDPAddrPort(req, addr); err != nil {
					t.Fatal(err)
				}
				b, err := udptest.Read(client, addr, 5*time.Second)
				if err != nil || b == nil {
					t.Fatalf("%x: no answer (%v)", req, err)
				}
				want := append(bytes.Clone(req), make([]byte, max(int(req[0])-len(req), 0))...)
				if !bytes.Equal(b, want) {
					t.Errorf("%x answered %x, want %x", req, b, want)
				}
			}
		})
	}
}

// A server that never answers costs each request its timeout, as lost.
func TestRunCountsLost(t *testing.T) {
	_, addr := listen(t) // bound, never read
	res, err := Run(context.Background(), Config{Target: addr, Workers: 3, Requests: 6, Mix: mix(t), Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answered != 0 || res.Lost != 6 {
		t.Errorf("result %v", res)
	}
}

func TestRunRefusesEmptyConfig(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); err == nil {
		t.Error("an empty config ran")
	}
}

// An open run keeps its window full for its duration: an echo answers
// every request but those still in flight at the end, by the request's
// own type.
func TestWindowAgainstEcho(t *testing.T) {
	c, addr := listen(t)
	go EchoBatched(c, func(req []byte) int { return len(req) })
	sources := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("127.0.0.2:0")}
	res, err := Window(context.Background(), WindowConfig{Target: addr, Sources: sources, Window: 4,
		Duration: 200 * time.Millisecond, Mix: mix(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answered == 0 || res.Lost != 0 || res.Sent-res.Answered > 8 || res.Types[uint8(packet.ListRooms)] != res.Answered ||
		res.Rate <= 0 || res.P99 < res.P50 {
		t.Errorf("result %v, types %v", res, res.Types)
	}
}

// Requests a server never answers are lost after the timeout and make
// room for others.
func TestWindowCountsLost(t *testing.T) {
	_, addr := listen(t) // bound, never read
	res, err := Window(context.Background(), WindowConfig{Target: addr, Sources: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Window: 2, Duration: 250 * time.Millisecond, Mix: mix(t), Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answered != 0 || res.Lost < 4 || res.Sent != res.Lost+2 {
		t.Errorf("result %v", res)
	}
}

func TestWindowRefusesEmptyConfig(t *testing.T) {
	if _, err := Window(context.Background(), WindowConfig{}); err == nil {
		t.Error("an empty config ran")
	}
}

package lobby

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/room"
)

// A batch reads what is queued on its socket, hands each datagram to the
// handler with reply space, and sends the replies it queued in one go;
// with the batched I/O (package mmsg) and with the standard library's, over
// IPv4 and IPv6. A reply the handler does not queue is not sent.
func TestBatchReadsAnswersAndFlushes(t *testing.T) {
	for _, batched := range []bool{true, false} {
		for _, ip := range []string{"127.0.0.1", "::1"} {
			srv, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := dial(t, ip, srv.LocalAddr().(*net.UDPAddr).AddrPort())
			sent := [][]byte{[]byte("one"), []byte("drop"), []byte("three")}
			for _, b := range sent {
				c.sendRaw(b)
			}
			q := newBatch(srv, batched, 1) // raw where a processor is left
			srv.SetReadDeadline(time.Now().Add(5 * time.Second))
			var got [][]byte
			var flushed []string
			for len(got) < len(sent) {
				n, _, err := q.read()
				if err != nil {
					t.Fatalf("batched %v, %s: read: %v", batched, ip, err)
				}
				q.answer(n, func(b []byte, from netip.AddrPort, _ arrival, out []byte) []byte {
					got = append(got, slices.Clone(b))
					out = append(append(out, "re:"...), b...)
					if !bytes.Equal(b, []byte("drop")) {
						q.WriteFrom(out, from, netip.Addr{})
					}
					return out
				})
				q.flush(func(b []byte, ok bool) {
					if !ok {
						t.Errorf("batched %v, %s: %q not sent", batched, ip, b)
					}
					flushed = append(flushed, string(b))
				})
			}
			if !slices.EqualFunc(got, sent, bytes.Equal) {
				t.Errorf("batched %v, %s: read %q, sent %q", batched, ip, got, sent)
			}
			if !slices.Equal(flushed, []string{"re:one", "re:three"}) {
				t.Errorf("batched %v, %s: flushed %q", batched, ip, flushed)
			}
			buf := make([]byte, 64)
			for _, want := range flushed {
				c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := c.conn.Read(buf)
				if err != nil || string(buf[:n]) != want {
					t.Errorf("batched %v, %s: client got %q, %v; want %q", batched, ip, buf[:n], err, want)
				}
			}
		}
	}
}

// JOIN runs on the read loop only for a Rooms that says its Join never
// waits; any other gets the worker pool.
func TestInlineJoinOnlyWhenRoomsNeverWaits(t *testing.T) {
	gated := newMemRooms(t, 1)
	gated.joinGate = make(chan struct{})
	for _, c := range []struct {
		name   string
		rooms  room.Table
		inline bool
	}{
		{"never waits", newMemRooms(t, 1), true},
		{"says it may wait", gated, false},
		{"says nothing", struct{ room.Table }{newMemRooms(t, 1)}, false},
	} {
		l := testConfig().newLobby(c.rooms)
		if l.inlineJoin != c.inline || (l.jobs == nil) != c.inline {
			t.Errorf("%s: inline %v, queue %v", c.name, l.inlineJoin, l.jobs != nil)
		}
		l.stop()
	}
}

// A reply that cannot be sent (to port 0, which the kernel refuses) is
// reported unsent, and the replies queued after it still go out, batched
// or not.
func TestFlushGoesOnPastAFailedReply(t *testing.T) {
	for _, batched := range []bool{true, false} {
		srv := udptest.Listen(t, "127.0.0.1")
		c := dial(t, "127.0.0.1", srv.LocalAddr().(*net.UDPAddr).AddrPort())
		to := c.conn.LocalAddr().(*net.UDPAddr).AddrPort()
		q := newBatch(srv, batched, 1) // raw where a processor is left
		for _, r := range []struct {
			b  string
			to netip.AddrPort
		}{{"one", to}, {"lost", netip.MustParseAddrPort("127.0.0.1:0")}, {"three", to}, {"four", to}} {
			q.WriteFrom([]byte(r.b), r.to, netip.Addr{})
		}
		var sent, unsent []string
		q.flush(func(b []byte, ok bool) {
			if ok {
				sent = append(sent, string(b))
			} else {
				unsent = append(unsent, string(b))
			}
		})
		if !slices.Equal(sent, []string{"one", "three", "four"}) || !slices.Equal(unsent, []string{"lost"}) {
			t.Errorf("batched %v: sent %q, unsent %q", batched, sent, unsent)
		}
		buf := make([]byte, 64)
		for _, want := range []string{"one", "three", "four"} {
			c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := c.conn.Read(buf)
			if err != nil || string(buf[:n]) != want {
				t.Errorf("batched %v: client got %q, %v; want %q", batched, buf[:n], err, want)
			}
		}
	}
}

// settle asks the reply budget once per network for the replies a batch
// owes it; when they do not fit together, each asks alone, and the ones
// that do not fit are dropped, the rest keeping their order. Replies
// queued already charged are left alone, and no reply buffer is lost.
func TestSettleChargesANetworkOnce(t *testing.T) {
	q := newBatch(udptest.Listen(t, "127.0.0.1"), false, 0)
	budget := map[netip.Prefix]int{ // bytes left per network
		netip.MustParsePrefix("192.0.2.0/24"):    100,
		netip.MustParsePrefix("198.51.100.0/24"): 5,
		netip.MustParsePrefix("2001:db8::/56"):   3,
	}
	var asked []string
	allow := func(to netip.Addr, n int) bool {
		p := limit.PrefixOf(to)
		asked = append(asked, fmt.Sprint(p, " ", n))
		if budget[p] < n {
			return false
		}
		budget[p] -= n
		return true
	}
	for _, r := range []struct {
		b, to string
		owed  bool
	}{
		{"aaaa", "192.0.2.1:1", true},
		{"bb", "198.51.100.7:1", true},
		{"cccc", "198.51.100.8:1", true},
		{"charged", "198.51.100.9:1", false},
		{"ddd", "192.0.2.200:2", true},
		{"e", "198.51.100.7:1", true},
		{"ffff", "[2001:db8::1]:1", true},
	} {
		to := netip.MustParseAddrPort(r.to)
		if r.owed {
			q.owe([]byte(r.b), to, netip.Addr{})
		} else {
			q.WriteFrom([]byte(r.b), to, netip.Addr{})
		}
	}
	buffers := map[*byte]bool{}
	for _, r := range q.out {
		buffers[unsafe.SliceData(r.oob[:cap(r.oob)])] = true
	}
	dropped := 0
	q.settle(allow, func() { dropped++ })
	var kept []string
	for _, r := range q.out[:q.queued] {
		kept = append(kept, string(r.b))
	}
	// 198.51.100.0/24 owes 7 bytes, more than its 5: alone, bb (2) and
	// e (1) fit, cccc (4) no longer does.
	want := []string{"aaaa", "bb", "charged", "ddd", "e"}
	if !slices.Equal(kept, want) || dropped != 2 {
		t.Errorf("kept %q, %d dropped; want %q, 2 dropped", kept, dropped, want)
	}
	wantAsked := []string{"192.0.2.0/24 7", "198.51.100.0/24 7", "198.51.100.0/24 2", "198.51.100.0/24 4",
		"198.51.100.0/24 1", "2001:db8::/56 4"}
	if !slices.Equal(asked, wantAsked) {
		t.Errorf("asked %q, want %q", asked, wantAsked)
	}
	for _, r := range q.out {
		delete(buffers, unsafe.SliceData(r.oob[:cap(r.oob)]))
		if r.owed {
			t.Errorf("%q still owed after settle", r.b)
		}
	}
	if len(buffers) != 0 {
		t.Errorf("%d reply buffers lost", len(buffers))
	}
}

//go:build linux

package mmsg

import (
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"golang.org/x/sys/unix"
)

// A batch reads what is queued on its socket, each datagram with its
// sender, and sends replies to those senders, over IPv4 and IPv6, its
// calls raw (one caller of two processors) or not (callers 0); a read
// takes no more than the batch's slots or the count asked for.
func TestBatchRoundTrip(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, tc := range []struct {
		ip  string
		raw bool
	}{{"127.0.0.1", false}, {"::1", false}, {"127.0.0.1", true}, {"::1", true}} {
		callers := 0
		if tc.raw {
			callers = 1
		}
		ip := tc.ip
		srv, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		to := srv.LocalAddr().(*net.UDPAddr).AddrPort()
		var clients []*net.UDPConn
		for range 3 {
			c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
		}
		for i, c := range clients {
			if _, err := c.Write([]byte{byte('a' + i)}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := New(srv, 4, callers)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := New(srv, 4, callers)
		bufs := make([][]byte, r.Len())
		for i := range bufs {
			bufs[i] = make([]byte, 16)
			r.SetBuffer(i, bufs[i], nil)
		}
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		var got []byte
		for len(got) < len(clients) {
			n, err := r.Recv(2)
			if err != nil {
				t.Fatalf("%s (raw %v): %v", ip, tc.raw, err)
			}
			if n < 1 || n > 2 {
				t.Fatalf("%s: read %d datagrams, asked for at most 2", ip, n)
			}
			for i := range n {
				k, oobn, from := r.Received(i)
				cl := clients[bufs[i][0]-'a']
				if k != 1 || oobn != 0 || from != cl.LocalAddr().(*net.UDPAddr).AddrPort() {
					t.Errorf("%s (raw %v): datagram %q of %d bytes (%d of control) from %v, want 1 from %v", ip, tc.raw, bufs[i][:k], k, oobn, from, cl.LocalAddr())
				}
				got = append(got, bufs[i][0])
				w.SetDatagram(i, append([]byte("re:"), bufs[i][0]), nil, from)
			}
			if sent, err := w.Send(n); sent != n || err != nil {
				t.Fatalf("%s: sent %d of %d: %v", ip, sent, n, err)
			}
		}
		if r.raw != tc.raw || w.raw != tc.raw {
			t.Errorf("%s: %d callers of 2 processors: raw calls %v, %v; want %v", ip, callers, r.raw, w.raw, tc.raw)
		}
		buf := make([]byte, 16)
		for i, cl := range clients {
			cl.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := cl.Read(buf)
			if want := "re:" + string(rune('a'+i)); err != nil || string(buf[:n]) != want {
				t.Errorf("%s (raw %v): client %d got %q, %v; want %q", ip, tc.raw, i, buf[:n], err, want)
			}
		}
	}
}

// A read on a socket with nothing queued waits, and ends at the socket's
// read deadline with the deadline's error.
func TestRecvWaitsForTheDeadline(t *testing.T) {
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r, _ := New(srv, 2, 1)
	for i := range r.Len() {
		r.SetBuffer(i, make([]byte, 8), nil)
	}
	srv.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := r.Recv(2); n != 0 || !isTimeout(err) {
		t.Fatalf("Recv on an empty socket: %d, %v; want a timeout", n, err)
	}
}

// A batch of raw calls gives its processor up while its callers leave
// none to spare, which it looks at again every rawRecheck calls: Go
// changes GOMAXPROCS when the process's CPU quota changes. Its calls stay
// raw whatever GOMAXPROCS says.
func TestYieldFollowsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	srv, cl := udptest.Listen(t, "127.0.0.1"), udptest.Listen(t, "127.0.0.1")
	to := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	r, _ := New(srv, 1, 1)
	r.SetBuffer(0, make([]byte, 8), nil)
	srv.SetReadDeadline(time.Now().Add(time.Minute))
	reads := func(n int) {
		for range n {
			udptest.Send(t, cl, to, []byte{1})
			if _, err := r.Recv(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, procs := range []int{2, 1, 3, 2} {
		runtime.GOMAXPROCS(procs)
		reads(rawRecheck)
		if want := procs <= 1; r.yield != want || !r.raw {
			t.Errorf("1 caller, GOMAXPROCS %d, after %d calls: yields %v, raw %v; want %v, true", procs, rawRecheck, r.yield, r.raw, want)
		}
	}
}

// A caller that leaves no processor to spare, and never waits on the
// poller (its sends always go), lets a goroutine that is ready run within
// rawYield calls: with one processor, nothing else would run it before
// the runtime preempted the caller, after 10 ms at the soonest.
func TestYieldLetsTheReadyRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv, cl := udptest.Listen(t, "127.0.0.1"), udptest.Listen(t, "127.0.0.1")
	w, _ := New(cl, 1, 1)
	w.SetDatagram(0, []byte{1}, nil, srv.LocalAddr().(*net.UDPAddr).AddrPort())
	ran := make(chan struct{})
	go close(ran)
	for range rawYield {
		if _, err := w.Send(1); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ran:
	default:
		t.Errorf("a ready goroutine did not run in %d raw calls of a caller that leaves no processor to spare", rawYield)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Addresses go into a sockaddr and come back out as they were: IPv4 on an
// AF_INET socket, IPv4-mapped and scoped IPv6 on an AF_INET6 one.
func TestSockaddrRoundTrip(t *testing.T) {
	for _, c := range []struct {
		to   string
		v6   bool
		want string
	}{
		{"192.0.2.7:4000", false, "192.0.2.7:4000"},
		{"[::ffff:192.0.2.7]:4000", false, "192.0.2.7:4000"},
		{"[::ffff:192.0.2.7]:4000", true, "[::ffff:192.0.2.7]:4000"},
		{"[2001:db8::1]:1", true, "[2001:db8::1]:1"},
		{"[fe80::1%7]:65535", true, "[fe80::1%7]:65535"},
	} {
		var sa unix.RawSockaddrInet6
		n := putSockaddr(&sa, netip.MustParseAddrPort(c.to), c.v6)
		want := uint32(unix.SizeofSockaddrInet4)
		if c.v6 {
			want = unix.SizeofSockaddrInet6
		}
		if got := addrPortOf(&sa); got.String() != c.want || n != want {
			t.Errorf("%s (v6 %v): came back as %v in %d bytes, want %s in %d", c.to, c.v6, got, n, c.want, want)
		}
	}
}

// A round trip of a batch allocates nothing: no closure per call.
func TestBatchAllocatesNothing(t *testing.T) {
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	to := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	r, _ := New(srv, 1, 1)
	w, _ := New(srv, 1, 0)
	buf := make([]byte, 8)
	r.SetBuffer(0, buf, nil)
	msg := []byte("x")
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	allocs := testing.AllocsPerRun(100, func() {
		w.SetDatagram(0, msg, nil, to) // to itself
		if n, err := w.Send(1); n != 1 || err != nil {
			t.Fatalf("send: %d, %v", n, err)
		}
		if n, err := r.Recv(1); n != 1 || err != nil {
			t.Fatalf("recv: %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a send and a read allocate %v times", allocs)
	}
}

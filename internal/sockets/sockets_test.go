package sockets

import (
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// reset empties the registry between tests: it is the process's.
func reset() {
	reg.mu.Lock()
	reg.bound, reg.inherited = nil, nil
	reg.mu.Unlock()
}

// A successor that asks for the same keys gets the very sockets, with
// what was queued in them, in the order they were bound; its own
// listeners keep working, and the predecessor's stay non-blocking.
func TestHandOverAndInherit(t *testing.T) {
	reset()
	t.Cleanup(reset)
	laddr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	u1, err := ListenUDP("udp4", laddr)
	if err != nil {
		t.Fatal(err)
	}
	defer u1.Close()
	u2, err := ListenUDP("udp4", laddr)
	if err != nil {
		t.Fatal(err)
	}
	defer u2.Close()
	tl, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	closed, _ := ListenUDP("udp4", laddr)
	closed.Close() // not handed over

	files, keys, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"udp4 127.0.0.1:0", "udp4 127.0.0.1:0", "tcp 127.0.0.1:0"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	// A datagram waiting in the first socket is the successor's to read.
	c, _ := net.DialUDP("udp4", nil, u1.LocalAddr().(*net.UDPAddr))
	c.Write([]byte("queued"))
	c.Close()
	// What os/exec will do with them (Fd) leaves them, and the originals
	// sharing their file status, non-blocking.
	for _, f := range files {
		if fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
			t.Fatalf("a handed-over descriptor is blocking (%v): the original would be too", err)
		}
	}
	u2.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, _, err := u2.ReadFrom(make([]byte, 1)); !os.IsTimeout(err) {
		t.Fatalf("the original's read deadline: %v", err)
	}

	reset()
	if err := Inherit(files, keys); err != nil {
		t.Fatal(err)
	}
	g1, err := ListenUDP("udp4", laddr)
	if err != nil {
		t.Fatal(err)
	}
	defer g1.Close()
	g2, _ := ListenUDP("udp4", laddr)
	defer g2.Close()
	if g1.LocalAddr().String() != u1.LocalAddr().String() || g2.LocalAddr().String() != u2.LocalAddr().String() {
		t.Fatalf("inherited %v %v, bound %v %v", g1.LocalAddr(), g2.LocalAddr(), u1.LocalAddr(), u2.LocalAddr())
	}
	buf := make([]byte, 16)
	g1.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := g1.ReadFrom(buf); err != nil || string(buf[:n]) != "queued" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if ln, err := Listen("tcp", "127.0.0.1:0"); err != nil || ln.Addr().String() != tl.Addr().String() {
		t.Fatalf("inherited listener %v, %v; want %v", ln, err, tl.Addr())
	} else {
		ln.Close()
	}
	// A key asked for anew binds anew; one nobody asks for is closed.
	g3, err := ListenUDP("udp4", laddr)
	if err != nil || g3.LocalAddr().String() == u1.LocalAddr().String() {
		t.Fatalf("a third socket %v, %v", g3, err)
	}
	g3.Close()
	if left := CloseUnclaimed(); len(left) != 0 {
		t.Fatalf("unclaimed %q", left)
	}
}

func TestCloseUnclaimed(t *testing.T) {
	reset()
	t.Cleanup(reset)
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	f, err := u.File()
	if err != nil {
		t.Fatal(err)
	}
	if err := Inherit([]*os.File{f}, []string{"udp4 127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	if left := CloseUnclaimed(); !slices.Equal(left, []string{"udp4 127.0.0.1:9"}) {
		t.Fatalf("unclaimed %q", left)
	}
	if err := Inherit([]*os.File{f}, nil); err == nil {
		t.Fatal("files without keys accepted")
	}
}

// A group shares one port: every socket gets some of many senders'
// datagrams, a sender's all go to one socket, and the port stays closed
// to a socket that does not ask to share it.
func TestGroupSharesAPort(t *testing.T) {
	reset()
	t.Cleanup(reset)
	group, err := ListenUDPGroup("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range group {
		defer c.Close()
	}
	addr := group[0].LocalAddr().(*net.UDPAddr)
	for _, c := range group[1:] {
		if c.LocalAddr().String() != addr.String() {
			t.Fatalf("group bound %v and %v", addr, c.LocalAddr())
		}
	}
	if c, err := net.ListenUDP("udp4", addr); err == nil {
		c.Close()
		t.Fatal("a plain socket bound the group's port")
	}
	const senders = 60
	for i := range senders {
		c, err := net.DialUDP("udp4", nil, addr)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			c.Write([]byte{byte(i)})
		}
		c.Close()
	}
	from := map[int]int{} // sender: socket
	got := 0
	for s, c := range group {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		buf := make([]byte, 1)
		n := 0
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
			if prev, ok := from[int(buf[0])]; ok && prev != s {
				t.Fatalf("sender %d reached sockets %d and %d", buf[0], prev, s)
			}
			from[int(buf[0])] = s
			n++
		}
		if n == 0 {
			t.Errorf("socket %d of the group got none of %d senders' datagrams", s, senders)
		}
		got += n
	}
	if got != 3*senders {
		t.Errorf("the group got %d datagrams of %d", got, 3*senders)
	}
}

// A port another process holds is refused to a group, as to ListenUDP.
func TestGroupRefusesAPortInUse(t *testing.T) {
	reset()
	t.Cleanup(reset)
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if g, err := ListenUDPGroup("udp4", u.LocalAddr().(*net.UDPAddr), 2); err == nil {
		g[0].Close()
		t.Fatal("a group bound a port in use")
	}
}

// A successor's group takes its predecessor's sockets, and binds next to
// them those it has more of, whether or not the predecessor shared its
// port.
func TestGroupHandedOver(t *testing.T) {
	for _, tc := range []struct{ before, after int }{{1, 3}, {2, 2}, {2, 3}} {
		reset()
		old, err := ListenUDPGroup("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, tc.before)
		if err != nil {
			t.Fatal(err)
		}
		laddr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
		files, keys, err := Files()
		if err != nil {
			t.Fatal(err)
		}
		reset()
		if err := Inherit(files, keys); err != nil {
			t.Fatal(err)
		}
		group, err := ListenUDPGroup("udp4", laddr, tc.after)
		if err != nil {
			t.Fatalf("%d sockets after %d: %v", tc.after, tc.before, err)
		}
		if left := CloseUnclaimed(); len(left) != 0 {
			t.Errorf("%d sockets after %d: unclaimed %q", tc.after, tc.before, left)
		}
		if len(group) != tc.after || group[tc.after-1].LocalAddr().String() != old[0].LocalAddr().String() {
			t.Errorf("%d sockets after %d: %d at %v, want %v", tc.after, tc.before, len(group), group[tc.after-1].LocalAddr(), old[0].LocalAddr())
		}
		for _, c := range append(old, group...) {
			c.Close()
		}
	}
	reset()
}

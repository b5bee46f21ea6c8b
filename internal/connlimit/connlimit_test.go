package connlimit

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

// pair returns the server end of a fresh loopback TCP connection from
// local, and the client end.
func pair(t *testing.T, l *net.TCPListener, local string) (server, client net.Conn) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	client, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

func listen(t *testing.T) *net.TCPListener {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func src(c net.Conn) netip.Addr { return c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr() }

func TestPerSource(t *testing.T) {
	ln := listen(t)
	l := New(Config{Max: 10, PerSource: 2, PerNetwork: 10})
	var places []*Conn
	for range 2 {
		c, _ := pair(t, ln, "127.0.0.2")
		p, v := l.Admit(c, src(c))
		if v != Admitted {
			t.Fatalf("verdict %d", v)
		}
		places = append(places, p)
	}
	c, _ := pair(t, ln, "127.0.0.2")
	if _, v := l.Admit(c, src(c)); v != SourceFull {
		t.Fatalf("third from one source: verdict %d", v)
	}
	c, _ = pair(t, ln, "127.0.0.3")
	if _, v := l.Admit(c, src(c)); v != Admitted {
		t.Fatalf("another source: verdict %d", v)
	}
	places[0].Release()
	places[0].Release() // a second release gives nothing back
	c, _ = pair(t, ln, "127.0.0.2")
	if _, v := l.Admit(c, src(c)); v != Admitted {
		t.Fatalf("after a release: verdict %d", v)
	}
	if n := l.Len(); n != 3 {
		t.Errorf("Len %d, want 3", n)
	}
}

func TestIPv6SourceIsSlash64(t *testing.T) {
	l := New(Config{Max: 10, PerSource: 1, PerNetwork: 10})
	a, b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff:2")
	if _, v := l.Admit(nil, a); v != Admitted {
		t.Fatal(v)
	}
	if _, v := l.Admit(nil, b); v != SourceFull {
		t.Errorf("same /64: verdict %d", v)
	}
	if _, v := l.Admit(nil, netip.MustParseAddr("2001:db8:0:1::1")); v != Admitted {
		t.Errorf("next /64: verdict %d", v)
	}
	// An IPv4 source is the same whether mapped or not.
	if _, v := l.Admit(nil, netip.MustParseAddr("192.0.2.1")); v != Admitted {
		t.Fatal(v)
	}
	if _, v := l.Admit(nil, netip.MustParseAddr("::ffff:192.0.2.1")); v != SourceFull {
		t.Errorf("mapped IPv4: verdict %d", v)
	}
}

// A full listener cuts the connection idle longest, never a busy one.
func TestFullCutsLongestIdle(t *testing.T) {
	ln := listen(t)
	l := New(Config{Max: 3, PerSource: 3, PerNetwork: 10})
	var places []*Conn
	var clients []net.Conn
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		c, cl := pair(t, ln, ip)
		p, _ := l.Admit(c, src(c))
		places, clients = append(places, p), append(clients, cl)
	}
	places[0].Busy() // the oldest is being served
	c, _ := pair(t, ln, "127.0.0.5")
	p, v := l.Admit(c, src(c))
	if v != AdmittedCut {
		t.Fatalf("verdict %d, want AdmittedCut", v)
	}
	// The second (idle longest) was closed: its client reads the end.
	_ = clients[1].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := clients[1].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("cut client read %v, want EOF", err)
	}
	if n := l.Len(); n != 3 {
		t.Errorf("Len %d, want 3", n)
	}
	// Its release gives back its source's share, not a second place.
	places[1].Release()
	if n := l.Len(); n != 3 {
		t.Errorf("Len after the cut one's release %d, want 3", n)
	}
	// Busy ones are never cut: with the rest busy too, newcomers are refused.
	places[2].Busy()
	p.Busy()
	c, _ = pair(t, ln, "127.0.0.6")
	if _, v := l.Admit(c, src(c)); v != Full {
		t.Fatalf("verdict %d, want Full", v)
	}
	// Idle again (keep-alive): cut first.
	p.Idle()
	c, _ = pair(t, ln, "127.0.0.6")
	if _, v := l.Admit(c, src(c)); v != AdmittedCut {
		t.Fatalf("verdict %d, want AdmittedCut", v)
	}
}

// A network holds at most PerNetwork places, whatever its sources.
func TestPerNetwork(t *testing.T) {
	l := New(Config{Max: 10, PerSource: 2, PerNetwork: 3})
	for i, ip := range []string{"192.0.2.1", "192.0.2.1", "192.0.2.2"} {
		if _, v := l.Admit(nil, netip.MustParseAddr(ip)); v != Admitted {
			t.Fatalf("%d: verdict %d", i, v)
		}
	}
	if _, v := l.Admit(nil, netip.MustParseAddr("192.0.2.3")); v != NetworkFull {
		t.Errorf("fourth of 192.0.2.0/24: verdict %d", v)
	}
	if _, v := l.Admit(nil, netip.MustParseAddr("192.0.3.1")); v != Admitted {
		t.Errorf("another network: verdict %d", v)
	}
	// IPv6 networks are /56s.
	for i, ip := range []string{"2001:db8:0:1::1", "2001:db8:0:2::1", "2001:db8:0:3::1"} {
		if _, v := l.Admit(nil, netip.MustParseAddr(ip)); v != Admitted {
			t.Fatalf("IPv6 %d: verdict %d", i, v)
		}
	}
	if _, v := l.Admit(nil, netip.MustParseAddr("2001:db8:0:ff::1")); v != NetworkFull {
		t.Errorf("fourth of 2001:db8::/56: verdict %d", v)
	}
}

// With CutBusyAfter, a full listener without idle connections cuts the
// one busy longest once it has been busy that long.
func TestFullCutsLongestBusy(t *testing.T) {
	ln := listen(t)
	l := New(Config{Max: 2, PerSource: 2, PerNetwork: 10, CutBusyAfter: time.Second})
	now := time.Now()
	l.now = func() time.Time { return now }
	var clients []net.Conn
	var places []*Conn
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		c, cl := pair(t, ln, ip)
		p, _ := l.Admit(c, src(c))
		p.Busy()
		places, clients = append(places, p), append(clients, cl)
		now = now.Add(100 * time.Millisecond)
	}
	c, _ := pair(t, ln, "127.0.0.4")
	if _, v := l.Admit(c, src(c)); v != Full {
		t.Fatalf("busy under a second: verdict %d, want Full", v)
	}
	now = now.Add(time.Second)
	p, v := l.Admit(c, src(c))
	if v != AdmittedBusyCut || Reason(v) != "busy_cut" {
		t.Fatalf("verdict %d, want AdmittedBusyCut", v)
	}
	_ = clients[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := clients[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the longest busy read %v, want EOF", err)
	}
	places[0].Release()
	p.Release()
	if n := l.Len(); n != 1 {
		t.Errorf("Len %d, want 1", n)
	}
}

// MinRate cuts a peer that does not read, within the grace and a chunk
// at the rate once the buffers are full, and lets one that reads through.
func TestMinRate(t *testing.T) {
	ln := listen(t)
	reply := make([]byte, 1<<20)
	c, cl := pair(t, ln, "127.0.0.2")
	cl.(*net.TCPConn).SetReadBuffer(4096)
	rc := MinRate(c, 64<<10)
	start := time.Now()
	_, err := rc.Write(reply)
	if !errors.Is(err, ErrSlowReader) || !errors.Is(err, os.ErrDeadlineExceeded) || !rc.Slow() {
		t.Fatalf("write to a peer that never reads: %v", err)
	}
	// Generous: the point is that it ends, not when.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("cut after %v", d)
	}

	c, cl = pair(t, ln, "127.0.0.3")
	rc = MinRate(c, 64<<10)
	read := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, cl)
		read <- n
	}()
	if n, err := rc.Write(reply); err != nil || n != len(reply) || rc.Slow() {
		t.Fatalf("write to a reader: %d, %v", n, err)
	}
	c.Close()
	if n := <-read; n != int64(len(reply)) {
		t.Errorf("read %d", n)
	}

	// The caller's own deadline still applies, and is not the rate's; a
	// write it cut is slow all the same.
	c, _ = pair(t, ln, "127.0.0.4")
	rc = MinRate(c, 1<<30)
	rc.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := rc.Write(reply); !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ErrSlowReader) || !rc.Slow() {
		t.Errorf("write past the caller's deadline: %v", err)
	}
}

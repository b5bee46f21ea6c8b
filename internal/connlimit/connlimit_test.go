package connlimit

import (
	"errors"
	"io"
	"net"
	"net/netip"
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
	l := New(10, 2)
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
	l := New(10, 1)
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
	l := New(3, 3)
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

//go:build linux

package instance

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// dupOf returns a descriptor of its own for f, as a child inherits one.
func dupOf(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// The socket the host passes is the game's when it is bound where Start
// says the game's port is; anything else at the descriptor it names is
// not taken for one.
func TestInheritedSocket(t *testing.T) {
	loopback := netip.MustParseAddr("127.0.0.1")
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, 0)))
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	f, err := c.File()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	got := inheritedSocket(strconv.Itoa(dupOf(t, f)))
	if got == nil {
		t.Fatal("a UDP socket passed was not taken")
	}
	defer got.Close()
	for _, tc := range []struct {
		a    Assignment
		want bool
	}{
		{Assignment{Port: port, Bind: loopback}, true},
		{Assignment{Port: port, Bind: netip.MustParseAddr("::ffff:127.0.0.1")}, true},
		{Assignment{Port: port + 1, Bind: loopback}, false},
		{Assignment{Port: port}, false}, // every address: not this socket's
		{Assignment{Port: port, Bind: netip.MustParseAddr("127.0.0.2")}, false},
	} {
		if boundOn(got, tc.a) != tc.want {
			t.Errorf("bound on port %d at %v: %v, want %v", tc.a.Port, tc.a.Bind, !tc.want, tc.want)
		}
	}

	every, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	if !boundOn(every, Assignment{Port: every.LocalAddr().(*net.UDPAddr).AddrPort().Port()}) {
		t.Error("a socket bound on every address is not bound where a room without bind address plays")
	}
	every.Close()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pipe, closed := dupOf(t, r), dupOf(t, w)
	syscall.Close(closed)
	for _, v := range []string{"", "x", "-1", "2", strconv.Itoa(pipe), strconv.Itoa(closed)} {
		if c := inheritedSocket(v); c != nil {
			c.Close()
			t.Errorf("%q taken for the room's socket", v)
		}
	}
}

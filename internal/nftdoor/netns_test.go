//go:build linux

package nftdoor_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// netns is a network namespace of the test's own, where the door's table
// is made, so that nothing of the host's ruleset changes: one goroutine,
// locked to a thread that left the host's namespace, runs what must run
// there (opening the door and sockets, which stay in it wherever they are
// used from). The thread is never unlocked, so it ends with the
// goroutine, and the namespace with the last socket in it.
type netns struct {
	t    testing.TB
	jobs chan func()
}

// newNetns makes the namespace, with its loopback interface up and
// fd00::2 on it (a second IPv6 source), or fails the test; it needs
// root.
func newNetns(t testing.TB) *netns {
	t.Helper()
	requiretest.Root(t)
	n := &netns{t: t, jobs: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread() // for good: see netns
		err := unix.Unshare(unix.CLONE_NEWNET)
		if err == nil {
			err = loUp()
		}
		ready <- err
		if err != nil {
			return
		}
		for job := range n.jobs {
			job()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("a network namespace of the test's own: %v", err)
	}
	t.Cleanup(func() { close(n.jobs) })
	return n
}

// do runs f in the namespace and returns when it has.
func (n *netns) do(f func()) {
	done := make(chan struct{})
	n.jobs <- func() {
		defer close(done)
		f()
	}
	<-done
}

// loUp brings the loopback interface up and gives it fd00::2/128.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return err
	}
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	a := netip.MustParseAddr("fd00::2").AsSlice()
	attrs, err := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: unix.IFA_LOCAL, Data: a},
		{Type: unix.IFA_ADDRESS, Data: a},
		{Type: unix.IFA_FLAGS, Data: binaryLE32(unix.IFA_F_NODAD)},
	})
	if err != nil {
		return err
	}
	// struct ifaddrmsg: family, prefix length, flags, scope, index.
	msg := append([]byte{unix.AF_INET6, 128, 0, 0}, binaryLE32(1)...)
	_, err = c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_NEWADDR, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl},
		Data:   append(msg, attrs...),
	})
	return err
}

func binaryLE32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// echo is a UDP server in the namespace, on every address, that sends
// every datagram back.
func (n *netns) echo() uint16 {
	n.t.Helper()
	var c *net.UDPConn
	var err error
	n.do(func() { c, err = net.ListenUDP("udp", &net.UDPAddr{}) })
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			k, from, err := c.ReadFromUDPAddrPort(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				c.WriteToUDPAddrPort(buf[:k], from)
			}
		}
	}()
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}

// player is a UDP socket in the namespace, on ip: one flow per port it
// talks to.
type player struct {
	t testing.TB
	c *net.UDPConn
}

func (n *netns) player(ip string) *player {
	n.t.Helper()
	var c *net.UDPConn
	var err error
	n.do(func() {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
	})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { c.Close() })
	return &player{t: n.t, c: c}
}

// heard reports whether the echo on port answers p, asking up to three
// times (a datagram the door drops gets no answer: each try waits wait).
func (p *player) heard(port uint16, wait time.Duration) bool {
	p.t.Helper()
	dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	if !p.c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Is4() {
		dst = netip.AddrPortFrom(netip.IPv6Loopback(), port)
	}
	buf := make([]byte, 64)
	for i := range 3 {
		msg := fmt.Sprintf("ping %d %d", i, time.Now().UnixNano())
		if _, err := p.c.WriteToUDPAddrPort([]byte(msg), dst); err != nil {
			p.t.Fatal(err)
		}
		p.c.SetReadDeadline(time.Now().Add(wait))
		for {
			k, err := p.c.Read(buf)
			if err != nil {
				break
			}
			if string(buf[:k]) == msg {
				return true
			}
		}
	}
	return false
}

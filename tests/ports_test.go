package tests

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The ports a test picks for a listener of its lobby are numbered, not
// the kernel's choice: 31000-32767, below the kernel's ephemeral range
// (32768 on), where a socket that binds port 0 or connects lands, so that
// between the pick and the lobby's bind no such socket can take the port;
// and above the room pools of config.toml (30000-30999) and of every
// package's tests (6000-29999). Within this process the picks go in turn,
// from a start that differs by process, so that no two tests share one.
const (
	pickFirst = 31000
	pickLast  = 32767
)

var picks struct {
	once sync.Once
	ok   bool // the kernel's ephemeral range starts above pickLast
	mu   sync.Mutex
	next int
}

// freePort returns a loopback port free a moment ago for UDP (udp) and
// for TCP (tcp). Where the kernel's ephemeral range reaches below
// pickLast, it is a port the kernel chose, free for both, as it can.
func freePort(t testing.TB, udp, tcp bool) uint16 {
	t.Helper()
	picks.once.Do(func() {
		b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		low, err2 := strconv.Atoi(strings.Fields(string(b) + " 0")[0])
		picks.ok = err == nil && err2 == nil && low > pickLast
		picks.next = os.Getpid() % (pickLast - pickFirst + 1)
	})
	for range pickLast - pickFirst + 1 {
		port := 0
		if picks.ok {
			picks.mu.Lock()
			port = pickFirst + picks.next%(pickLast-pickFirst+1)
			picks.next++
			picks.mu.Unlock()
		}
		if p, ok := bindable(t, port, udp, tcp); ok {
			return p
		}
	}
	t.Fatal("no loopback port free")
	return 0
}

// bindable binds port (0: the kernel's choice) on 127.0.0.1 for UDP and
// TCP as asked, releases it and says which port it was and whether every
// bind took.
func bindable(t testing.TB, port int, udp, tcp bool) (uint16, bool) {
	t.Helper()
	lo := net.IPv4(127, 0, 0, 1)
	if udp {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: lo, Port: port})
		if err != nil {
			return 0, false
		}
		defer c.Close()
		port = c.LocalAddr().(*net.UDPAddr).Port
	}
	if tcp {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: lo, Port: port})
		if err != nil {
			return 0, false
		}
		defer l.Close()
		port = l.Addr().(*net.TCPAddr).Port
	}
	return uint16(port), true
}

// Picked ports are free when picked, each for what it was asked for, and
// two picks in one process never give the same port (where the kernel's
// ephemeral range leaves the numbered ones).
func TestFreePortsDiffer(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	low, _ := strconv.Atoi(strings.Fields(string(b))[0])
	numbered := low > pickLast
	seen := map[uint16]bool{}
	for i := range 40 {
		udp, tcp := i%3 != 1, i%3 != 0
		p := freePort(t, udp, tcp)
		if seen[p] && numbered {
			t.Fatalf("port %d picked twice", p)
		}
		seen[p] = true
		if _, ok := bindable(t, int(p), udp, tcp); !ok {
			t.Errorf("port %d (udp %v, tcp %v) not free after the pick", p, udp, tcp)
		}
		if numbered && (p < pickFirst || p > pickLast) {
			t.Errorf("port %d outside %d-%d", p, pickFirst, pickLast)
		}
	}
}

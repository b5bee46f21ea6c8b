package supervisor

import (
	"maps"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestPortPoolCooldownAndQuarantine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPortPool(100, 102, 2*time.Second, 30*time.Second)
	var got []uint16
	for range 3 {
		port, ok := p.acquire(t0)
		if !ok {
			t.Fatal("fresh pool ran dry")
		}
		got = append(got, port)
	}
	if got[0] != 100 || got[1] != 101 || got[2] != 102 {
		t.Fatalf("acquired %v, want 100 101 102", got)
	}
	if port, ok := p.acquire(t0); ok {
		t.Fatalf("empty pool gave %d", port)
	}
	p.release(101, t0)
	p.quarantineAcquired(100, t0)
	if port, ok := p.acquire(t0.Add(time.Second)); ok {
		t.Fatalf("port %d handed out during its cooldown", port)
	}
	if port, ok := p.acquire(t0.Add(2 * time.Second)); !ok || port != 101 {
		t.Fatalf("after cooldown got %d %v, want 101", port, ok)
	}
	if port, ok := p.acquire(t0.Add(29 * time.Second)); ok {
		t.Fatalf("quarantined port %d handed out early", port)
	}
	ready, cooling, quarantined, inUse := p.counts(t0.Add(29 * time.Second))
	if ready != 0 || cooling != 0 || quarantined != 1 || inUse != 2 {
		t.Fatalf("counts %d %d %d %d, want 0 0 1 2", ready, cooling, quarantined, inUse)
	}
	if port, ok := p.acquire(t0.Add(30 * time.Second)); !ok || port != 100 {
		t.Fatalf("after quarantine got %d %v, want 100", port, ok)
	}
}

func TestPortFree(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(c.LocalAddr().(*net.UDPAddr).Port)
	if portFree(port) {
		t.Fatalf("port %d is bound but reported free", port)
	}
	c.Close()
	if !portFree(port) {
		t.Fatalf("port %d is released but reported taken", port)
	}
}

// counts tells each port's state at a time: ready (fresh, cooled down or
// out of quarantine), cooling, quarantined, handed out; and an adopted
// room's claim takes its port out of the pool wherever it waits, once.
func TestPortPoolCountsAndClaims(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPortPool(100, 105, 2*time.Second, 30*time.Second)
	counts := func(at time.Time, want [4]int) {
		t.Helper()
		r, c, q, u := p.counts(at)
		if got := [4]int{r, c, q, u}; got != want {
			t.Errorf("counts at +%v: ready, cooling, quarantined, in use %v; want %v", at.Sub(t0), got, want)
		}
	}
	counts(t0, [4]int{6, 0, 0, 0})
	for range 3 {
		p.acquire(t0) // 100, 101, 102
	}
	p.release(100, t0)
	p.quarantineAcquired(101, t0)
	counts(t0, [4]int{3, 1, 1, 1})
	counts(t0.Add(2*time.Second), [4]int{4, 0, 1, 1})
	counts(t0.Add(30*time.Second), [4]int{5, 0, 0, 1})
	for _, c := range []struct {
		port uint16
		ok   bool
	}{{104, true}, {104, false}, {101, true}, {102, false}, {99, false}} {
		if got := p.claim(c.port); got != c.ok {
			t.Errorf("claim %d: %v, want %v", c.port, got, c.ok)
		}
	}
	counts(t0.Add(30*time.Second), [4]int{3, 0, 0, 3})
}

// udpInodes finds the sockets bound to the ports asked, IPv4 and IPv6,
// by the inodes their descriptors name, and nothing else.
func TestUDPInodesOfBoundPorts(t *testing.T) {
	var ports []uint16
	want := map[uint64]uint16{}
	for _, ip := range []string{"127.0.0.1", "::1"} {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		port := uint16(c.LocalAddr().(*net.UDPAddr).Port)
		f, err := c.File()
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		err = syscall.Fstat(int(f.Fd()), &st)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, port)
		want[st.Ino] = port
		if !udpBound(port) {
			t.Errorf("%s port %d: bound, not seen", ip, port)
		}
	}
	asked := map[uint16]bool{}
	for _, p := range ports {
		asked[p] = true
	}
	if got := udpInodes(asked); !maps.Equal(got, want) {
		t.Errorf("inodes %v, want %v", got, want)
	}
}

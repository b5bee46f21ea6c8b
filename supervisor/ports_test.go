package supervisor

import (
	"net"
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

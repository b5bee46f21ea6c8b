package roomtable

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func seatOf(ip string, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(ip), port)
}

func TestSeatsKeepExpiryOrder(t *testing.T) {
	var ss seats
	t0 := time.Unix(1000, 0)
	a, b, c := seatOf("192.0.2.1", 1), seatOf("192.0.2.2", 1), seatOf("192.0.2.1", 2)
	for i, p := range []netip.AddrPort{a, b, c} {
		if !ss.hold(p, t0.Add(time.Duration(i)*time.Second), seatKind{}) {
			t.Fatalf("seat %v not new", p)
		}
	}
	if ss.hold(a, t0.Add(3*time.Second), seatKind{}) || ss.len() != 3 {
		t.Fatalf("refreshing a seat made another: %d seats", ss.len())
	}
	// Order now b (1s), c (2s), a (3s).
	if n := ss.expire(t0.Add(1500 * time.Millisecond)); n != 1 || ss.find(b) != nil {
		t.Fatalf("expire dropped %d, b held %v; want b alone", n, ss.find(b) != nil)
	}
	// The oldest seat of 192.0.2.1 is c now that a was refreshed.
	if !ss.dropOldestOf(netip.MustParseAddr("::ffff:192.0.2.1")) || ss.find(c) != nil || ss.find(a) == nil {
		t.Fatal("a connecting player from 192.0.2.1 did not take its oldest seat")
	}
	if ss.dropOldestOf(netip.MustParseAddr("192.0.2.2")) {
		t.Fatal("an IP without seats gave one up")
	}
	if n := ss.dropOldest(5); n != 1 || ss.len() != 0 {
		t.Fatalf("dropOldest dropped %d, %d left", n, ss.len())
	}
	if n := ss.expire(t0.Add(time.Hour)); n != 0 {
		t.Fatalf("empty seats expired %d", n)
	}
	// Emptied chains take new seats again.
	if !ss.hold(b, t0, seatKind{}) || ss.len() != 1 || !ss.dropOldestOf(b.Addr()) {
		t.Fatal("seats unusable once emptied")
	}
}

// BenchmarkSeatChurn holds, refreshes, expires and fills seats of one room
// holding 20,000 of them: each operation costs the same at any size.
func BenchmarkSeatChurn(b *testing.B) {
	for _, n := range []int{100, 20000} {
		b.Run(fmt.Sprintf("seats=%d", n), func(b *testing.B) {
			var ss seats
			t0 := time.Unix(1000, 0)
			players := make([]netip.AddrPort, n)
			for i := range players {
				players[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 7777)
				ss.hold(players[i], t0, seatKind{})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := players[i%n]
				ss.hold(p, t0.Add(time.Duration(i)), seatKind{})
				ss.dropOldestOf(p.Addr())
				ss.hold(p, t0.Add(time.Duration(i)), seatKind{})
				ss.expire(t0)
				i++
			}
		})
	}
}

func TestSeatsProvenDisplaceUnproven(t *testing.T) {
	var ss seats
	t0 := time.Unix(1000, 0)
	forged, real := seatOf("127.9.9.9", 1), seatOf("192.0.2.7", 1)
	ss.hold(forged, t0, seatKind{})
	ss.hold(real, t0, seatKind{proven: true})
	ss.hold(seatOf("127.9.9.10", 1), t0, seatKind{})
	if !ss.dropOldestUnproven() || (ss.find(forged) != nil) || !(ss.find(real) != nil) {
		t.Fatal("the oldest unproven seat was not the one given up")
	}
	if !ss.dropOldestUnproven() || ss.dropOldestUnproven() || ss.len() != 1 {
		t.Fatal("a proven seat was given up")
	}
	// Proven once, proven for good: a later unproven refresh keeps it.
	ss.hold(real, t0.Add(time.Second), seatKind{})
	if ss.dropOldestUnproven() {
		t.Fatal("a refreshed proven seat lost its proof")
	}
}

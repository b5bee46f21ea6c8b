package limit

import (
	"net/netip"
	"testing"
	"time"
)

func TestGuardDenyList(t *testing.T) {
	g := NewGuard(DefaultConfig())
	g.SetDeny([]netip.Prefix{
		netip.MustParsePrefix("203.0.113.7/32"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("198.51.100.64/26"), // inside the /24, ending before it: merged, the /24 kept whole
		netip.MustParsePrefix("2001:db8::/48"),
	})
	for ip, denied := range map[string]bool{
		"203.0.113.7": true, "::ffff:203.0.113.7": true, "203.0.113.8": false, "203.0.113.6": false,
		"198.51.100.0": true, "198.51.100.200": true, "198.51.100.255": true, "198.51.101.0": false, "198.51.99.255": false,
		"2001:db8::1": true, "2001:db8:0:ffff::1": true, "2001:db8:1::1": false, "::": false,
	} {
		if got := g.Denied(netip.MustParseAddr(ip)); got != denied {
			t.Errorf("%s denied = %v, want %v", ip, got, denied)
		}
	}
	g.SetDeny(nil)
	if g.Denied(netip.MustParseAddr("203.0.113.7")) {
		t.Error("denied after the list was emptied")
	}
	if c := g.Counts(); c.Denied != 7 {
		t.Errorf("denied counted %d times, want 7", c.Denied)
	}
}

// Never-seen sources enter only within the admission budget; past it the
// guard is under pressure: sources it already serves go on being served,
// and replies to those that enter draw from the unverified budget.
func TestGuardPressure(t *testing.T) {
	c := DefaultConfig()
	c.UnverifiedReplyLimit = MaxDatagram
	g := NewGuard(c)
	now := time.Now()
	known := netip.MustParseAddr("192.0.2.1")
	if v := g.Admit(known, now); v != Served {
		t.Fatalf("before pressure: %v", v)
	}
	admitted, refused := 0, 0
	for i := range 3 * DefaultConfig().AdmitBurst {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		switch v := g.Admit(ip, now); v {
		case Served:
			admitted++
		case Unadmitted:
			refused++
		default:
			t.Fatalf("new source %v: %v", ip, v)
		}
	}
	if admitted != DefaultConfig().AdmitBurst-1 || refused != 2*DefaultConfig().AdmitBurst+1 || int(g.Counts().Unadmitted) != refused {
		t.Fatalf("%d new sources admitted at once, %d refused; want %d and %d", admitted, refused, DefaultConfig().AdmitBurst-1, 2*DefaultConfig().AdmitBurst+1)
	}
	if g.Sources.Len() != DefaultConfig().AdmitBurst {
		t.Fatalf("%d sources stored; refused ones must leave nothing", g.Sources.Len())
	}
	if !g.UnderPressure(now) || g.UnderPressure(now.Add(pressureHold)) {
		t.Fatal("refused admissions do not put the guard under pressure for exactly its hold")
	}
	if v := g.Admit(known, now); v != Served {
		t.Fatalf("a known source under pressure: %v", v)
	}
	later := now.Add(time.Second) // the admission budget refills
	firstNew := netip.MustParseAddr("10.200.0.1")
	if v := g.Admit(firstNew, later); v != ServedUnverified {
		t.Fatalf("a new source admitted under pressure: %v", v)
	}
	// Replies to unverified sources share one budget, known ones do not.
	if !g.AllowReply(firstNew, MaxDatagram, ServedUnverified, later) || g.AllowReply(netip.MustParseAddr("10.9.9.9"), 1, ServedUnverified, later) {
		t.Fatal("the unverified budget does not hold")
	}
	if !g.AllowReply(known, 100, Served, later) {
		t.Fatal("a known source's reply charged to the unverified budget")
	}
	// Once the pressure is over, a source seen again is verified.
	if v := g.Admit(firstNew, later.Add(pressureHold)); v != Served {
		t.Fatalf("after the pressure: %v", v)
	}
}

// BenchmarkGuardUnadmitted is the cost of dropping a forged request under
// pressure: the drop path must be cheaper than the flood's arrival.
func BenchmarkGuardUnadmitted(b *testing.B) {
	g := NewGuard(DefaultConfig())
	now := time.Now()
	g.Pressure(now.Add(time.Hour))
	for i := range DefaultConfig().AdmitBurst { // spend the admission budget
		g.Admit(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		g.Admit(netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}), now)
		i++
	}
}

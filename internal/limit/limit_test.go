package limit

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func TestSourcesBuckets(t *testing.T) {
	s := NewSources(Config{Rate: 0.001, Burst: 2, CreateRate: 0.001, CreateBurst: 1, MaxSources: 100, AdmitRate: 1e9, AdmitBurst: 1e9})
	now := time.Now()
	a := netip.MustParseAddr("192.0.2.1")
	if ok, _ := allow(s, a, now, false); !ok {
		t.Fatal("first request refused")
	}
	if ok, _ := allow(s, a, now, true); !ok {
		t.Fatal("first create refused")
	}
	if ok, newly := allow(s, a, now, true); ok || !newly {
		t.Errorf("second create: ok %v, newly limited %v; want refused, newly", ok, newly)
	}
	// The create bucket is separate: the general one still has a token.
	if ok, _ := allow(s, a, now, false); !ok {
		t.Error("general bucket drawn by creates")
	}
	if ok, newly := allow(s, a, now, false); ok || !newly {
		t.Errorf("third request: ok %v, newly %v", ok, newly)
	}
	if ok, newly := allow(s, a, now, false); ok || newly {
		t.Errorf("fourth request: ok %v, newly %v; an episode counts once", ok, newly)
	}
	// IPv4-mapped IPv6 is the same source, whichever edge saw it.
	if ok, _ := allow(s, netip.MustParseAddr("::ffff:192.0.2.1"), now, false); ok {
		t.Error("mapped address got a bucket of its own")
	}
	// Tokens come back with time.
	if ok, _ := allow(s, a, now.Add(1001*time.Second), false); !ok {
		t.Error("bucket never refilled")
	}
	if ok, _ := allow(s, netip.MustParseAddr("192.0.2.2"), now, false); !ok {
		t.Error("another source limited")
	}
	if n := s.Len(); n != 2 {
		t.Errorf("%d sources tracked, want 2", n)
	}
}

func TestSourcesBounded(t *testing.T) {
	s := NewSources(Config{Rate: 1, Burst: 1, CreateRate: 1, CreateBurst: 1, MaxSources: 100, AdmitRate: 1e9, AdmitBurst: 1e9})
	now := time.Now()
	for i := range 1000 {
		s.Allow(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now, false, false)
	}
	if n := s.Len(); n != 100 {
		t.Errorf("%d sources tracked, want the bound 100", n)
	}
}

func TestBudgetPerNetwork(t *testing.T) {
	b := NewBudget(1, 10)
	now := time.Now()
	if !b.Allow(netip.MustParseAddr("192.0.2.1"), MaxDatagram, now) {
		t.Fatal("one largest datagram must fit")
	}
	if b.Allow(netip.MustParseAddr("192.0.2.200"), 100, now) {
		t.Error("same /24 not charged together")
	}
	if b.Allow(netip.MustParseAddr("::ffff:192.0.2.7"), 100, now) {
		t.Error("mapped address of the same /24 not charged with it")
	}
	if !b.Allow(netip.MustParseAddr("192.0.3.1"), 100, now) {
		t.Error("another /24 charged")
	}
	if !b.Allow(netip.MustParseAddr("2001:db8:0:100::1"), 100, now) || b.Allow(netip.MustParseAddr("2001:db8:0:1ff::1"), MaxDatagram, now) {
		t.Error("IPv6 /56 not charged together")
	}
	if !b.Allow(netip.MustParseAddr("2001:db8:0:200::1"), MaxDatagram, now) {
		t.Error("another /56 charged")
	}
	if n := b.Len(); n != 4 {
		t.Errorf("%d networks tracked, want 4", n)
	}
}

// A source that takes an evicted source's place starts afresh: a full
// general bucket, a full create bucket, not limited.
func TestEvictedSourceReusedAfresh(t *testing.T) {
	s := NewSources(Config{Rate: 0.001, Burst: 3, CreateRate: 0.001, CreateBurst: 2, MaxSources: 1, AdmitRate: 1e9, AdmitBurst: 1e9})
	now := time.Now()
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for range 4 {
		allow(s, a, now, false)
	}
	for range 3 {
		allow(s, a, now, true)
	}
	for i := range 3 {
		if ok, newly := allow(s, b, now, false); !ok || newly {
			t.Fatalf("request %d of the new source: ok %v, newly limited %v", i, ok, newly)
		}
	}
	if ok, newly := allow(s, b, now, false); ok || !newly {
		t.Errorf("past the burst: ok %v, newly limited %v", ok, newly)
	}
	for i := range 2 {
		if ok, _ := allow(s, b, now, true); !ok {
			t.Fatalf("create %d of the new source refused", i)
		}
	}
	if ok, _ := allow(s, b, now, true); ok {
		t.Error("create past the burst allowed")
	}
	// And a, evicted in turn, comes back afresh too.
	if ok, newly := allow(s, a, now, false); !ok || newly {
		t.Errorf("returning source: ok %v, newly %v", ok, newly)
	}
	if n := s.Len(); n != 1 {
		t.Errorf("%d sources tracked, bound is 1", n)
	}
}

// A network that takes an evicted one's place gets a full budget.
func TestEvictedNetworkReusedAfresh(t *testing.T) {
	b := NewBudget(1, 1)
	now := time.Now()
	if !b.Allow(netip.MustParseAddr("192.0.2.1"), MaxDatagram, now) || b.Allow(netip.MustParseAddr("192.0.2.1"), 1, now) {
		t.Fatal("budget not spent by one largest datagram")
	}
	if !b.Allow(netip.MustParseAddr("198.51.100.1"), MaxDatagram, now) {
		t.Error("the network taking the evicted one's place has no full budget")
	}
}

// A known source costs no allocation: the edges call Allow per datagram.
func TestAllowKnownSourceAllocatesNothing(t *testing.T) {
	s := NewSources(Config{Rate: 1e9, Burst: 1e9, CreateRate: 1e9, CreateBurst: 1e9, MaxSources: 10, AdmitRate: 1e9, AdmitBurst: 1e9})
	b := NewBudget(1<<30, 10)
	ip := netip.MustParseAddr("192.0.2.1")
	now := time.Now()
	allow(s, ip, now, true)
	b.Allow(ip, 1, now)
	if n := testing.AllocsPerRun(100, func() {
		allow(s, ip, now, false)
		allow(s, ip, now, true)
		b.Allow(ip, 100, now)
	}); n != 0 {
		t.Errorf("%v allocations per known source", n)
	}
	// Nor does a new source once the table is full: a spoofed flood.
	full := NewSources(Config{Rate: 1, Burst: 1, CreateRate: 1, CreateBurst: 1, MaxSources: 1, AdmitRate: 1e9, AdmitBurst: 1e9})
	fullB := NewBudget(1<<30, 1)
	other := netip.MustParseAddr("192.0.2.2")
	allow(full, ip, now, true)
	fullB.Allow(ip, 1, now)
	if n := testing.AllocsPerRun(100, func() {
		allow(full, other, now, true)
		allow(full, ip, now, true)
		fullB.Allow(netip.MustParseAddr("198.51.100.1"), 1, now)
		fullB.Allow(ip, 1, now)
	}); n != 0 {
		t.Errorf("%v allocations per evicting source", n)
	}
}

func BenchmarkSources(b *testing.B) {
	for _, bc := range []struct {
		name       string
		sources    int
		maxSources int
	}{
		{"one", 1, 100000},
		{"many", 4096, 100000},
		{"evicting", 4096, 256},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := NewSources(Config{Rate: 1e9, Burst: 1e9, CreateRate: 1, CreateBurst: 1, MaxSources: bc.maxSources})
			ips := make([]netip.Addr, bc.sources)
			for i := range ips {
				ips[i] = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
			}
			now := time.Now()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				allow(s, ips[i%len(ips)], now, false)
				i++
			}
		})
	}
}

// allow is Sources.Allow without pressure, as the (ok, newly limited) pair
// the assertions read.
func allow(s *Sources, ip netip.Addr, now time.Time, create bool) (ok, newlyLimited bool) {
	v := s.Allow(ip, now, create, false)
	return v.OK(), v == NewlyLimited
}

// A source that showed it receives is remembered for ReceiverTTL, mapped
// or not; others never are.
func TestReceivers(t *testing.T) {
	r := NewReceivers(2)
	now := time.Now()
	a, b, c := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::1")
	if r.Has(a, now) {
		t.Fatal("a never-seen source receives")
	}
	r.Add(a, now)
	if !r.Has(a, now.Add(ReceiverTTL-time.Second)) || !r.Has(netip.MustParseAddr("::ffff:192.0.2.1"), now) {
		t.Error("a receiver forgotten within its time")
	}
	if r.Has(a, now.Add(ReceiverTTL)) {
		t.Error("a receiver remembered past its time")
	}
	if r.Has(b, now) {
		t.Error("its neighbour receives")
	}
	// The table is bounded: a third source takes a place.
	r.Add(b, now)
	r.Add(c, now)
	if n := r.Len(); n != 2 || !r.Has(c, now) {
		t.Errorf("%d remembered, the newest: %v", n, r.Has(c, now))
	}
}

// Two readers take from the same budgets, each with the time it read
// before it queued for the lock, so one's times trail the other's by half
// a step. They ask for more than the rate, which leaves a token for the
// trailing reader now and then. No budget grants more than its burst and
// its rate over the time that passed: a bucket handed a time before its
// last must not credit the gap between them again.
func TestBudgetsHoldWhenClocksArriveOutOfOrder(t *testing.T) {
	const perSecond, burst, steps, step = 1500, 2, 10000, time.Millisecond
	many := Config{Rate: 1e9, Burst: 1e9, CreateRate: 1e9, CreateBurst: 1e9, CreateNetworkRate: 1e9, CreateNetworkBurst: 1e9,
		MaxSources: 1 << 12, AdmitRate: 1e9, AdmitBurst: 1e9, ReflectionLimit: 1 << 30, MaxPrefixes: 16,
		UnverifiedReplyLimit: 1 << 30, UnverifiedCreateRate: 1e9, UnverifiedCreateBurst: 1e9}
	ip := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }
	one := netip.MustParseAddr("192.0.2.1")
	type taker func(i int, now time.Time) bool
	for name, build := range map[string]func() (taker, int){
		"admission": func() (taker, int) {
			c := many
			c.AdmitRate, c.AdmitBurst = perSecond, burst
			s := NewSources(c)
			return func(i int, now time.Time) bool { return s.Allow(ip(i), now, false, false).OK() }, burst
		},
		"source": func() (taker, int) {
			c := many
			c.Rate, c.Burst = perSecond, burst
			s := NewSources(c)
			return func(_ int, now time.Time) bool { return s.Allow(one, now, false, false).OK() }, burst
		},
		"network": func() (taker, int) {
			b := NewNetworkLimit(perSecond, burst, 16)
			return func(_ int, now time.Time) bool { return b.Allow(one, 1, now) }, burst
		},
		"keyed": func() (taker, int) {
			b := NewBuckets[int](perSecond, burst, 16)
			return func(_ int, now time.Time) bool { return b.Allow(0, now) }, burst
		},
		"unverified replies": func() (taker, int) {
			c := many
			c.UnverifiedReplyLimit = perSecond * MaxDatagram // and as much at once
			g := NewGuard(c)
			return func(_ int, now time.Time) bool { return g.AllowReply(one, MaxDatagram, ServedUnverified, now) }, perSecond
		},
		"unverified creates": func() (taker, int) {
			c := many
			c.UnverifiedCreateRate, c.UnverifiedCreateBurst = perSecond, burst
			g := NewGuard(c)
			return func(i int, now time.Time) bool { return g.AdmitCreate(ip(i), now).OK() }, burst
		},
	} {
		t.Run(name, func(t *testing.T) {
			take, burst := build()
			base := time.Now()
			granted := 0
			for i := range steps {
				ahead := base.Add(time.Duration(i) * step)
				for j, now := range []time.Time{ahead, ahead.Add(-step / 2)} {
					if take(2*i+j, now) {
						granted++
					}
				}
			}
			span := time.Duration(steps-1) * step
			if most := burst + int(perSecond*span.Seconds()); granted > most {
				t.Errorf("%d granted over %v, at most %d: a burst of %d and %d a second", granted, span, most, burst, perSecond)
			}
		})
	}
}

// AllowN for n requests at one time answers as n calls of Allow in turn
// would: the same verdicts, in order, and the same state after, which
// the steps that follow read. The model is a second table asked in turn,
// through random rates, bursts, pressure, creates (which ask alone, as
// the lobby's do), time steps, and tables small enough that sources are
// evicted and admission refused.
func TestAllowNIsAllowInTurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ips := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"),
		netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("198.51.100.9")}
	for trial := range 300 {
		// Whole rates and times in ms meet the bucket's rounding (it
		// serves a token it lacks by less than a ns of refill); the
		// others, any rate and time.
		rate, unit := 0.1+40*rng.Float64(), 1
		if trial%2 == 0 {
			rate, unit = float64(1+rng.IntN(40)), int(time.Millisecond)
		}
		c := Config{Rate: rate, Burst: 1 + rng.IntN(8), CreateRate: 1, CreateBurst: 1 + rng.IntN(3),
			MaxSources: 1 + rng.IntN(len(ips)), AdmitRate: float64(1 + rng.IntN(10)), AdmitBurst: 1 + rng.IntN(3)}
		together, inTurn := NewSources(c), NewSources(c)
		now := time.Unix(1_000_000_000, 0)
		for step := range 200 {
			now = now.Add(time.Duration(rng.IntN(150_000_000/unit) * unit)) // up to 150 ms
			ip, pressure := ips[rng.IntN(len(ips))], rng.IntN(4) == 0
			if rng.IntN(6) == 0 { // a create, alone, with or without its general take
				create := rng.IntN(2) == 0
				if got, want := together.Allow(ip, now, create, pressure), inTurn.Allow(ip, now, create, pressure); got != want {
					t.Fatalf("trial %d step %d: Allow(%v, create %v) %v, in turn %v", trial, step, ip, create, got, want)
				}
				continue
			}
			n := 1 + rng.IntN(16)
			var got, want []Verdict
			if a, ok := together.AllowN(ip, now, n, pressure); ok {
				for i := range n {
					switch {
					case i < a.Served:
						got = append(got, a.Verdict)
					case i == a.Served:
						got = append(got, a.Refused)
					default:
						got = append(got, Limited)
					}
				}
			} else {
				for range n {
					got = append(got, together.Allow(ip, now, false, pressure))
				}
			}
			for range n {
				want = append(want, inTurn.Allow(ip, now, false, pressure))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d step %d: %d from %v: %v, in turn %v", trial, step, n, ip, got, want)
			}
		}
	}
}

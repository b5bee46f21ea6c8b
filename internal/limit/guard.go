package limit

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Verdict is what a Guard says of one request.
type Verdict uint8

// The verdicts. Only the Served ones are answered.
const (
	// Served: answer it.
	Served Verdict = iota
	// ServedUnverified: answer it, charging the reply to the budget of
	// sources first seen under pressure (see Guard.AllowReply).
	ServedUnverified
	// Limited: its source is over its rate.
	Limited
	// NewlyLimited: its source is over its rate and was served until
	// now, so that limited sources are counted once per episode.
	NewlyLimited
	// Unadmitted: a never-seen source beyond the admission budget.
	Unadmitted
	// Denied: its source is on the deny list (see Guard.Denied).
	Denied
	// NetworkLimited: a CREATE past its source network's bucket.
	NetworkLimited
	// Unverified: a CREATE of an unverified source past the one budget
	// they all share.
	Unverified
)

// OK reports whether the request is to be served.
func (v Verdict) OK() bool { return v <= ServedUnverified }

// Reason is the drop reason of a refused request, for counters:
// "rate_limited", "unadmitted" or "denied"; empty when it is served.
func (v Verdict) Reason() string {
	switch v {
	case Limited, NewlyLimited:
		return "rate_limited"
	case Unadmitted:
		return "unadmitted"
	case Denied:
		return "denied"
	case NetworkLimited:
		return "network_rate_limited"
	case Unverified:
		return "unverified_create"
	}
	return ""
}

// pressureHold is how long the guard stays under pressure after the last
// sign of it: long enough to span the gaps of a bursty flood.
const pressureHold = 2 * time.Second

// Guard is what every edge of one Foyer shares, checked in this order for
// every request and every reply:
//
//   - the deny list (Denied): denied sources are dropped before any other
//     work;
//   - per-source token buckets (Sources); never-seen sources are admitted
//     only within a global budget, and nothing is stored for the others;
//   - a per-network budget of reply bytes (Replies), so forged sources
//     cannot aim replies at a network;
//   - under pressure, one global budget of reply bytes to sources first
//     seen during it, so the lobby is never a reflector.
//
// Sharing them means a source's allowance spans the protocols it speaks,
// and a victim network's cap is the same whichever edge its forged
// requests reach. The guard is under pressure when new sources come faster
// than it admits them, or when an edge says so with Pressure (its socket
// drops datagrams); the state lasts pressureHold after the last sign. It
// is safe for concurrent use.
type Guard struct {
	Sources *Sources
	Replies *Budget
	// Receivers are the sources that showed they receive (see
	// Received): an edge may send them more than a never-seen source.
	Receivers *Receivers

	deny     atomic.Pointer[denyList]
	pressure atomic.Int64 // Unix ns until which the guard is under pressure

	mu         sync.Mutex // guards clock, unverified and unverifiedCreates
	clock      monotone
	unverified rate.Limiter
	// unverifiedCreates is the CREATE budget of every unverified source.
	unverifiedCreates rate.Limiter
	// createNets are the networks' CREATE buckets.
	createNets *Budget

	unadmitted, denied, unverifiedDropped atomic.Uint64
}

// NewGuard builds the tables c describes; c must pass Check.
func NewGuard(c Config) *Guard {
	g := &Guard{Sources: NewSources(c), Replies: NewBudget(c.ReflectionLimit, c.MaxPrefixes),
		createNets: NewNetworkLimit(rate.Limit(c.CreateNetworkRate), c.CreateNetworkBurst, c.MaxPrefixes),
		Receivers:  NewReceivers(min(c.MaxSources, maxReceivers))}
	fill(&g.unverified, rate.Limit(c.UnverifiedReplyLimit), max(c.UnverifiedReplyLimit, MaxDatagram))
	fill(&g.unverifiedCreates, rate.Limit(c.UnverifiedCreateRate), c.UnverifiedCreateBurst)
	g.SetDeny(c.Deny)
	return g
}

// Pressure records that an edge is overwhelmed at now.
func (g *Guard) Pressure(now time.Time) {
	until := now.Add(pressureHold).UnixNano()
	if g.pressure.Load() < until {
		g.pressure.Store(until)
	}
}

// UnderPressure reports whether an edge was overwhelmed lately.
func (g *Guard) UnderPressure(now time.Time) bool { return now.UnixNano() < g.pressure.Load() }

// Admit decides whether a request from ip is served, drawing a token from
// its general bucket.
func (g *Guard) Admit(ip netip.Addr, now time.Time) Verdict { return g.admit(ip, now, false) }

// AdmitCreate draws a token from ip's create bucket, after Admit let the
// request through, then one from its network's; a CREATE of an
// unverified source (its first request, or first seen under pressure)
// also draws on the budget all such CREATEs share.
func (g *Guard) AdmitCreate(ip netip.Addr, now time.Time) Verdict {
	v := g.admit(ip, now, true)
	if !v.OK() {
		return v
	}
	if !g.createNets.Allow(ip, 1, now) {
		return NetworkLimited
	}
	if v == ServedUnverified {
		g.mu.Lock()
		ok := g.unverifiedCreates.AllowN(g.clock.at(now), 1)
		g.mu.Unlock()
		if !ok {
			return Unverified
		}
	}
	return v
}

func (g *Guard) admit(ip netip.Addr, now time.Time, create bool) Verdict {
	v := g.Sources.Allow(ip, now, create, g.UnderPressure(now))
	if v == Unadmitted {
		// New sources faster than the admission budget: a flood from
		// forged addresses, whether or not the socket keeps up.
		g.unadmitted.Add(1)
		g.Pressure(now)
	}
	return v
}

// AdmitN is Admit for n requests from ip read at now, none a CREATE, at
// once (see Sources.AllowN); when it reports false, the caller asks
// Admit for each.
func (g *Guard) AdmitN(ip netip.Addr, now time.Time, n int) (Admission, bool) {
	return g.Sources.AllowN(ip, now, n, g.UnderPressure(now))
}

// AllowReply charges a reply of n bytes to ip's network, and to the
// unverified budget when the request's verdict was ServedUnverified, and
// reports whether it may be sent.
func (g *Guard) AllowReply(ip netip.Addr, n int, v Verdict, now time.Time) bool {
	if v == ServedUnverified {
		g.mu.Lock()
		ok := g.unverified.AllowN(g.clock.at(now), n)
		g.mu.Unlock()
		if !ok {
			g.unverifiedDropped.Add(1)
			return false
		}
	}
	return g.Replies.Allow(ip, n, now)
}

// Received records that ip showed at now that it receives what is sent to
// its address: it completed a TCP handshake with an edge, passed a TCP
// check, or named a room id only a listing sent to it carried.
func (g *Guard) Received(ip netip.Addr, now time.Time) { g.Receivers.Add(ip, now) }

// Validated records that ip showed at now that it receives by echoing a
// token sent to its address (the native extension's retry token): it is
// a receiver for every edge, and a verified source, whose CREATEs no
// longer draw on the unverified budget.
func (g *Guard) Validated(ip netip.Addr, now time.Time) {
	g.Receivers.Add(ip, now)
	g.Sources.Verify(ip)
}

// Receives reports whether ip showed lately that it receives; a UDP edge
// may then send it a reply that grows with what others registered, where
// a never-seen source gets no more than the host's own rooms justify.
func (g *Guard) Receives(ip netip.Addr, now time.Time) bool { return g.Receivers.Has(ip, now) }

// Counts are the guard's cumulative counters.
type Counts struct {
	// Unadmitted counts requests of never-seen sources refused under
	// pressure; Denied those from the deny list; UnverifiedDropped the
	// replies the unverified budget held back.
	Unadmitted, Denied, UnverifiedDropped uint64
}

// Counts returns the guard's counters.
func (g *Guard) Counts() Counts {
	return Counts{Unadmitted: g.unadmitted.Load(), Denied: g.denied.Load(), UnverifiedDropped: g.unverifiedDropped.Load()}
}

// SetDeny replaces the deny list; requests in flight see the old list or
// the new one.
func (g *Guard) SetDeny(prefixes []netip.Prefix) { g.deny.Store(newDenyList(prefixes)) }

// Denied reports whether ip is on the deny list, counting it if so. Edges
// ask it first, before any other work on a datagram or connection.
func (g *Guard) Denied(ip netip.Addr) bool {
	if !g.deny.Load().contains(ip) {
		return false
	}
	g.denied.Add(1)
	return true
}

// denyList is a set of networks as sorted, disjoint ranges of 16-byte
// (IPv4-mapped) addresses: a lookup is a binary search.
type denyList struct{ ranges []addrRange }

type addrRange struct{ lo, hi [16]byte }

func newDenyList(prefixes []netip.Prefix) *denyList {
	d := &denyList{}
	for _, p := range prefixes {
		p = p.Masked()
		lo := p.Addr().Unmap()
		bits := p.Bits()
		if lo.Is4() {
			bits += 96
		}
		r := addrRange{lo: lo.As16()}
		r.hi = r.lo
		for i := bits; i < 128; i++ {
			r.hi[i/8] |= 1 << (7 - i%8)
		}
		d.ranges = append(d.ranges, r)
	}
	slices.SortFunc(d.ranges, func(a, b addrRange) int { return compare16(a.lo, b.lo) })
	// Merge overlaps, so that the ranges are disjoint and sorted by both
	// ends.
	merged := d.ranges[:0]
	for _, r := range d.ranges {
		if n := len(merged); n > 0 && compare16(r.lo, merged[n-1].hi) <= 0 {
			if compare16(r.hi, merged[n-1].hi) > 0 {
				merged[n-1].hi = r.hi
			}
			continue
		}
		merged = append(merged, r)
	}
	d.ranges = merged
	return d
}

func compare16(a, b [16]byte) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (d *denyList) contains(ip netip.Addr) bool {
	if len(d.ranges) == 0 {
		return false
	}
	a := ip.Unmap().As16()
	// The first range whose top is at or above a holds a, if any does.
	i, _ := slices.BinarySearchFunc(d.ranges, a, func(r addrRange, a [16]byte) int { return compare16(r.hi, a) })
	return i < len(d.ranges) && compare16(d.ranges[i].lo, a) <= 0
}

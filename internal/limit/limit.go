// Package limit is the rate limiting every Foyer edge shares: per-source
// token buckets (Sources) checked before a request is served, and a
// per-network budget of reply bytes (Budget) checked before a reply is
// sent. One Sources and one Budget serve all of a Foyer's edges, so a
// source's allowance spans the protocols it speaks and a victim network's
// cap is the same whichever edge its forged requests reach.
//
// Both keep their entries in a table of fixed size with second-chance
// eviction (package bounded): a flood from millions of spoofed sources costs at
// most the table, allocates nothing once it is full (an evicted entry's
// buckets are reset for the newcomer), and sources seen recently survive
// it.
package limit

import (
	"errors"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/foyerlobby/foyer/internal/bounded"
)

// Config sizes a Guard.
type Config struct {
	// Rate and Burst are each source IP's general bucket (requests per
	// second); CreateRate and CreateBurst its stricter bucket for requests
	// that start something (the native CREATE). An IPv6 source is its /64:
	// one host holds a /64 and may send from any address of it.
	Rate        float64
	Burst       int
	CreateRate  float64
	CreateBurst int
	// CreateNetworkRate and CreateNetworkBurst are each network's (an
	// IPv4 /24, an IPv6 /56) CREATE bucket, all its sources together.
	CreateNetworkRate  float64
	CreateNetworkBurst int
	// UnverifiedCreateRate and UnverifiedCreateBurst are the one bucket
	// every CREATE of an unverified source draws on: a source whose
	// first request it is, or one first seen under pressure. Such a
	// sender may be a forged address, and its room costs the host until
	// it is found abandoned.
	UnverifiedCreateRate  float64
	UnverifiedCreateBurst int
	// MaxSources bounds the sources tracked; idle ones are evicted first.
	MaxSources int
	// AdmitRate and AdmitBurst bound how many never-seen sources enter
	// the table per second, so that a flood from forged addresses neither
	// evicts the sources already served nor earns a reply per address;
	// past them the guard is under pressure.
	AdmitRate  float64
	AdmitBurst int
	// ReflectionLimit is the reply bytes per second one /24 (IPv4) or /56
	// (IPv6) may be sent by all edges together; MaxPrefixes bounds the
	// networks tracked.
	ReflectionLimit int
	MaxPrefixes     int
	// UnverifiedReplyLimit is the reply bytes per second all edges
	// together may send, while under pressure, to sources first seen
	// during it: the lobby is never a reflector, whatever the flood.
	UnverifiedReplyLimit int
	// Deny are the addresses and networks every edge drops first.
	Deny []netip.Prefix
}

// DefaultConfig returns the defaults documented in config.toml.
func DefaultConfig() Config {
	return Config{
		Rate: 20, Burst: 40, CreateRate: 1, CreateBurst: 3, CreateNetworkRate: 4, CreateNetworkBurst: 8,
		UnverifiedCreateRate: 0.2, UnverifiedCreateBurst: 2, MaxSources: 100000, AdmitRate: 2000, AdmitBurst: 4096,
		ReflectionLimit: 256 << 10, MaxPrefixes: 65536, UnverifiedReplyLimit: 1 << 20,
	}
}

// Check reports a Config no Guard can be built from.
func (c Config) Check() error {
	if !(c.Rate > 0) || c.Burst < 1 || !(c.CreateRate > 0) || c.CreateBurst < 1 || c.MaxSources < 1 ||
		!(c.CreateNetworkRate > 0) || c.CreateNetworkBurst < 1 || !(c.UnverifiedCreateRate > 0) || c.UnverifiedCreateBurst < 1 ||
		!(c.AdmitRate > 0) || c.AdmitBurst < 1 ||
		c.ReflectionLimit < 1 || c.MaxPrefixes < 1 || c.UnverifiedReplyLimit < 1 {
		return errors.New("limit: rates, bursts, max sources, admission, reflection limit, max prefixes and unverified reply limit must be positive")
	}
	return nil
}

// Sources holds the token buckets of the source IPs seen lately. It is
// safe for concurrent use.
type Sources struct {
	mu      sync.Mutex
	t       *bounded.Table[sourceKey, source] // buckets in place: no pointer to chase per datagram
	general rate.Limit
	burst   int
	create  rate.Limit
	cburst  int
	// admit bounds how many never-seen sources enter the table per
	// second; guarded by mu, as is clock.
	admit rate.Limiter
	clock monotone
}

// sourceKey is a source IP as 16 bytes, IPv4 mapped, so that an IPv4
// source is one entry however it arrived (AF_INET, or mapped on a
// dual-stack socket) and the table hashes and compares one block of
// memory, not netip.Addr's fields. A zone is left out: link-local peers
// with one address on two links share a bucket.
type sourceKey [16]byte

// source is one source's state. An evicted source's is reset and reused
// for the source that takes its place.
type source struct {
	general rate.Limiter
	create  rate.Limiter // filled on the source's first create
	created bool
	limited bool // the last request was refused
	// unverified: first seen under pressure, and not seen since it
	// ended, so perhaps a forged address; its replies are charged to the
	// guard's unverified budget.
	unverified bool
	// fresh: the request that put it in the table is its only one yet,
	// so nothing shows it receives what it is sent.
	fresh bool
}

// fill makes lim a full bucket of burst b refilling at r, without the
// allocation of rate.NewLimiter: a Limiter last updated at the zero time
// has had ages to fill, so its first use finds burst tokens.
func fill(lim *rate.Limiter, r rate.Limit, b int) {
	*lim = rate.Limiter{}
	lim.SetBurstAt(time.Time{}, b)
	lim.SetLimitAt(time.Time{}, r)
}

// monotone passes on the times its owner's callers read, never one
// before the latest: callers read the clock before they queue for the
// owner's lock, so they arrive out of order, and a rate.Limiter handed a
// time before its last one credits the gap between the two again. Under
// a flood, with a reader per core, that gap is a batch's work, and the
// budgets would grant more than their rate. Guarded by its owner's lock.
type monotone struct{ last time.Time }

// at returns now, or the latest time seen if now is before it.
func (m *monotone) at(now time.Time) time.Time {
	if now.Before(m.last) {
		return m.last
	}
	m.last = now
	return now
}

// NewSources returns an empty table sized by c; c.MaxSources must be
// positive.
func NewSources(c Config) *Sources {
	s := &Sources{
		t:       bounded.New[sourceKey, source](c.MaxSources),
		general: rate.Limit(c.Rate), burst: c.Burst,
		create: rate.Limit(c.CreateRate), cburst: c.CreateBurst,
	}
	fill(&s.admit, rate.Limit(c.AdmitRate), c.AdmitBurst)
	return s
}

// Allow takes a token from ip's general bucket (ip's create bucket with
// create, which the caller takes after the general one). A source not in
// the table yet enters it only within the admission budget; otherwise it
// gets Unadmitted, and nothing is stored for it. One that enters under
// pressure is unverified until it is seen again after the pressure. An
// IPv4-mapped IPv6 address is the IPv4 source.
func (s *Sources) Allow(ip netip.Addr, now time.Time, create, pressure bool) Verdict {
	switch a, ok := s.take(ip, now, 1, create, pressure); {
	case !ok:
		return Unadmitted
	case a.Served == 1:
		return a.Verdict
	default:
		return a.Refused
	}
}

// Admission is what n requests of one source asked for together got (see
// Sources.AllowN): the first Served of them are served with Verdict, the
// next is refused with Refused, and any after it with Limited.
type Admission struct {
	Served           int
	Verdict, Refused Verdict
}

// AllowN is Allow, not for a create, for n requests from ip at one time
// (a batch of them read at now) at once: the first ones are served, as
// many as the bucket holds tokens for, and the rest refused, as they
// would be asked one after another, for at one time the bucket cannot
// refill in between. It reports false, having stored nothing, for a
// source new to the table that the admission budget refuses; the caller
// then asks Allow for each request, and each is counted as refused.
func (s *Sources) AllowN(ip netip.Addr, now time.Time, n int, pressure bool) (Admission, bool) {
	return s.take(ip, now, n, false, pressure)
}

// take is AllowN for n requests, creates with create (which ask one at
// a time: n is then 1), and Allow with n = 1.
func (s *Sources) take(ip netip.Addr, now time.Time, n int, create, pressure bool) (Admission, bool) {
	k := keyOf(ip)
	s.mu.Lock()
	defer s.mu.Unlock()
	now = s.clock.at(now)
	src, found := s.t.Get(k)
	switch {
	case found:
		src.unverified = src.unverified && pressure
		src.fresh = src.fresh && create // a create follows its own general take
	case !s.admit.AllowN(now, 1):
		return Admission{}, false
	default:
		src = s.t.Insert(k)
		fill(&src.general, s.general, s.burst)
		// Fresh: this is its only request yet (n > 1 are its later ones too).
		src.created, src.limited, src.unverified, src.fresh = false, false, pressure, n == 1
	}
	bucket := &src.general
	if create {
		if !src.created {
			fill(&src.create, s.create, s.cburst)
			src.created = true
		}
		bucket = &src.create
	}
	a := Admission{Served: n}
	if !bucket.AllowN(now, n) {
		a.Served = most(bucket, now, n-1)
	}
	if a.Served > 0 {
		a.Verdict = src.verdict(true, create)
	}
	if a.Served < n {
		a.Refused = src.verdict(false, create)
	}
	return a, true
}

// most takes from lim at now as many tokens as it serves, up to n, and
// returns how many: the tokens it holds, or one more, for it serves a
// token it lacks by less than a nanosecond's refill.
func most(lim *rate.Limiter, now time.Time, n int) int {
	if n == 0 {
		return 0
	}
	t := int(lim.TokensAt(now))
	if k := min(n, t+1); k > 0 && lim.AllowN(now, k) {
		return k
	}
	if k := min(n, t); k > 0 && t < n && lim.AllowN(now, k) {
		return k
	}
	return 0
}

// verdict is the verdict on a request of src that its bucket served
// (ok) or refused, a create with create; it records whether src is
// limited now.
func (src *source) verdict(ok, create bool) Verdict {
	was := src.limited
	src.limited = !ok
	switch {
	case ok && (src.unverified || create && src.fresh):
		return ServedUnverified
	case ok:
		return Served
	case was:
		return Limited
	}
	return NewlyLimited
}

// Verify marks ip as a source that showed it receives what is sent to
// its address (it echoed a token only a receiver could know): neither
// fresh nor unverified from now on, if the table has it.
func (s *Sources) Verify(ip netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src, found := s.t.Get(keyOf(ip)); found {
		src.fresh, src.unverified = false, false
	}
}

// keyOf is ip's key in the table: the address, IPv4 mapped; for IPv6 its
// /64, which one host holds whole.
func keyOf(ip netip.Addr) sourceKey {
	if ip.Is6() && !ip.Is4In6() {
		p, _ := ip.Prefix(64)
		return sourceKey(p.Addr().As16())
	}
	return sourceKey(ip.As16())
}

// Len is the number of sources tracked now.
func (s *Sources) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Len()
}

// MaxDatagram is the largest UDP payload over IPv4. A network's budget
// holds at least this much, or a reply of that size could never be sent.
const MaxDatagram = 65507

// Budget is a token bucket per network, /24 for IPv4 and /56 for IPv6,
// in a table of fixed size. The edges spend reply bytes from it: source
// addresses can be forged, so per-IP limits alone would let a spoofer aim
// large replies to small requests (65 KB for a 12-byte LIST) at a victim
// network from many forged IPs. It is safe for concurrent use.
type Budget struct {
	mu    sync.Mutex
	t     *bounded.Table[netip.Prefix, rate.Limiter]
	clock monotone
	limit rate.Limit
	burst int
}

// NewBudget allows perSecond bytes to each network, tracking at most
// maxPrefixes networks; both must be positive. A network's burst holds at
// least one datagram of the largest size.
func NewBudget(perSecond, maxPrefixes int) *Budget {
	return NewNetworkLimit(rate.Limit(perSecond), max(perSecond, MaxDatagram), maxPrefixes)
}

// NewNetworkLimit allows each network r events per second with bursts of
// burst, tracking at most maxPrefixes networks.
func NewNetworkLimit(r rate.Limit, burst, maxPrefixes int) *Budget {
	return &Budget{
		t:     bounded.New[netip.Prefix, rate.Limiter](maxPrefixes),
		limit: r,
		burst: burst,
	}
}

// PrefixOf returns the network ip is counted in: its /24 for IPv4 (and
// IPv4-mapped IPv6), its /56 for IPv6.
func PrefixOf(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	bits := 56
	if ip.Is4() {
		bits = 24
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Allow charges n tokens (bytes, for a reply budget) to ip's network and
// reports whether they fit; tokens that do not fit are not charged.
func (b *Budget) Allow(ip netip.Addr, n int, now time.Time) bool {
	p := PrefixOf(ip)
	b.mu.Lock()
	defer b.mu.Unlock()
	lim, found := b.t.Get(p)
	if !found {
		lim = b.t.Insert(p)
		fill(lim, b.limit, b.burst)
	}
	return lim.AllowN(b.clock.at(now), n)
}

// Len is the number of networks tracked now.
func (b *Budget) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.t.Len()
}

package lobby

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sources holds the token buckets of the source IPs seen lately.
type sources struct {
	mu      sync.Mutex
	t       *table[netip.Addr, *source]
	general rate.Limit
	burst   int
	create  rate.Limit
	cburst  int
}

type source struct {
	general *rate.Limiter
	create  *rate.Limiter // made on the source's first CREATE
	limited bool          // the last request was refused
}

func newSources(cfg Config) *sources {
	return &sources{
		t:       newTable[netip.Addr, *source](cfg.MaxSources),
		general: rate.Limit(cfg.Rate), burst: cfg.Burst,
		create: rate.Limit(cfg.CreateRate), cburst: cfg.CreateBurst,
	}
}

// allow takes a token from ip's general bucket; allowCreate from its
// CREATE bucket. newlyLimited reports a source that was being served and
// now is not, so limited sources are counted once per episode rather than
// once per packet.
func (s *sources) allow(ip netip.Addr, now time.Time) (ok, newlyLimited bool) {
	return s.take(ip, now, func(src *source) *rate.Limiter { return src.general })
}

func (s *sources) allowCreate(ip netip.Addr, now time.Time) (ok, newlyLimited bool) {
	return s.take(ip, now, func(src *source) *rate.Limiter {
		if src.create == nil {
			src.create = rate.NewLimiter(s.create, s.cburst)
		}
		return src.create
	})
}

func (s *sources) take(ip netip.Addr, now time.Time, bucket func(*source) *rate.Limiter) (ok, newlyLimited bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, found := s.t.get(ip)
	if !found {
		src = &source{general: rate.NewLimiter(s.general, s.burst)}
		s.t.put(ip, src)
	}
	ok = bucket(src).AllowN(now, 1)
	newlyLimited = !ok && !src.limited
	src.limited = !ok
	return ok, newlyLimited
}

func (s *sources) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.len()
}

// reflection caps the bytes sent to each /24 (IPv4) or /56 (IPv6) per
// second. Source addresses can be forged, so per-IP limits alone would let
// a spoofer aim the lobby's replies, up to 65 KB for a 12-byte LIST, at a
// victim network from many forged IPs.
type reflection struct {
	mu    sync.Mutex
	t     *table[netip.Prefix, *rate.Limiter]
	limit rate.Limit
	burst int
}

// maxDatagram is the largest UDP payload over IPv4; a bucket must hold at
// least one such reply or a full ROOM_LIST could never be sent.
const maxDatagram = 65507

func newReflection(cfg Config) *reflection {
	return &reflection{
		t:     newTable[netip.Prefix, *rate.Limiter](cfg.MaxPrefixes),
		limit: rate.Limit(cfg.ReflectionLimit),
		burst: max(cfg.ReflectionLimit, maxDatagram),
	}
}

// prefixOf returns the network a reply's bytes are charged to.
func prefixOf(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	bits := 56
	if ip.Is4() {
		bits = 24
	}
	p, _ := ip.Prefix(bits)
	return p
}

// allow charges n bytes to ip's network.
func (r *reflection) allow(ip netip.Addr, n int, now time.Time) bool {
	p := prefixOf(ip)
	r.mu.Lock()
	defer r.mu.Unlock()
	lim, found := r.t.get(p)
	if !found {
		lim = rate.NewLimiter(r.limit, r.burst)
		r.t.put(p, lim)
	}
	return lim.AllowN(now, n)
}

func (r *reflection) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.t.len()
}

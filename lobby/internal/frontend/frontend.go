// Package frontend holds what the neighbour-protocol front-ends (lobby/gg2,
// lobby/gunz, lobby/announce) share: the per-source limiter they accept, a
// small default one, the per-network budget of reply bytes, counters that
// are summed into one log line per interval rather than one per packet, and
// how Foyer's own rooms describe themselves to GG2-style browsers.
package frontend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/supervisor"
)

// Limiter decides whether a source IP may be served now. Every Foyer edge
// should share one implementation so that a source has one budget
// whichever protocol it speaks.
type Limiter interface {
	Allow(ip netip.Addr) bool
}

// buckets is a bounded map of token buckets. When full, an arbitrary
// entry makes room for a new key: a flood of new keys cannot grow it, at
// the price of occasionally giving an evicted source a fresh bucket.
type buckets[K comparable] struct {
	mu    sync.Mutex
	m     map[K]*rate.Limiter
	max   int
	limit rate.Limit
	burst int
}

func newBuckets[K comparable](limit float64, burst, max int) *buckets[K] {
	return &buckets[K]{m: make(map[K]*rate.Limiter), max: max, limit: rate.Limit(limit), burst: burst}
}

func (b *buckets[K]) allowN(k K, n int, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	lim, ok := b.m[k]
	if !ok {
		if len(b.m) >= b.max {
			for old := range b.m { // map order is unspecified: a random victim
				delete(b.m, old)
				break
			}
		}
		lim = rate.NewLimiter(b.limit, b.burst)
		b.m[k] = lim
	}
	return lim.AllowN(now, n)
}

func (b *buckets[K]) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// SourceLimiter is the default Limiter: one token bucket per source IP,
// in a table of at most maxSources entries.
type SourceLimiter struct{ b *buckets[netip.Addr] }

// NewSourceLimiter allows each source perSecond requests with the given
// burst, tracking at most maxSources sources.
func NewSourceLimiter(perSecond float64, burst, maxSources int) *SourceLimiter {
	return &SourceLimiter{newBuckets[netip.Addr](perSecond, burst, maxSources)}
}

// Allow takes one token from ip's bucket.
func (s *SourceLimiter) Allow(ip netip.Addr) bool { return s.b.allowN(ip.Unmap(), 1, time.Now()) }

// Len is the number of sources tracked now.
func (s *SourceLimiter) Len() int { return s.b.len() }

// MaxDatagram is the largest UDP payload over IPv4. A byte budget holds at
// least this much, or a reply of that size could never be sent.
const MaxDatagram = 65507

// ByteBudget caps the reply bytes sent to each /24 (IPv4) or /56 (IPv6)
// per second. Source addresses of UDP requests can be forged, so per-IP
// limits alone would let a spoofer aim large replies to small requests at
// a victim network from many forged addresses.
type ByteBudget struct{ b *buckets[netip.Prefix] }

// NewByteBudget allows perSecond bytes to each network, tracking at most
// maxPrefixes networks.
func NewByteBudget(perSecond, maxPrefixes int) *ByteBudget {
	return &ByteBudget{newBuckets[netip.Prefix](float64(perSecond), max(perSecond, MaxDatagram), maxPrefixes)}
}

// Allow charges n bytes to ip's network and reports whether they fit.
func (r *ByteBudget) Allow(ip netip.Addr, n int) bool {
	ip = ip.Unmap()
	bits := 56
	if ip.Is4() {
		bits = 24
	}
	p, _ := ip.Prefix(bits)
	return r.b.allowN(p, n, time.Now())
}

// Len is the number of networks tracked now.
func (r *ByteBudget) Len() int { return r.b.len() }

// Counters are cumulative counts by name. The front-ends' rates are bounded
// by their limiters, so one mutex is cheap enough.
type Counters struct {
	mu sync.Mutex
	m  map[string]uint64
}

// Add counts one event of the given name.
func (c *Counters) Add(name string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]uint64)
	}
	c.m[name]++
	c.mu.Unlock()
}

// Snapshot copies the counts; never nil.
func (c *Counters) Snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return map[string]uint64{}
	}
	return maps.Clone(c.m)
}

// Report logs, every interval until ctx is done, what drops counted since
// the last report, if any: one line per interval, never one per packet.
func Report(ctx context.Context, log zerolog.Logger, every time.Duration, drops *Counters) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := drops.Snapshot()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := drops.Snapshot()
		d := zerolog.Dict()
		grew := false
		for k, v := range now {
			if v > last[k] {
				d.Uint64(k, v-last[k])
				grew = true
			}
		}
		if grew {
			log.Info().Dict("dropped", d).Dur("interval", every).Msg("drops")
		}
		last = now
	}
}

// Clamp16 converts a count to a u16 wire field, saturating.
func Clamp16(n int) uint16 {
	return uint16(min(max(n, 0), 0xFFFF))
}

// RoomKeys is the key/value table a GG2-style list or registration shows
// for one of Foyer's own rooms: its name, game and map, or defaults for
// those it does not set ("Foyer room N", game, "default").
func RoomKeys(r supervisor.Room, game string) gg2wire.KeyValues {
	name, mapName := r.Name, r.Map
	if name == "" {
		name = fmt.Sprintf("Foyer room %d", r.ID)
	}
	if r.Game != "" {
		game = r.Game
	}
	if mapName == "" {
		mapName = "default"
	}
	return gg2wire.KeyValues{
		{Key: "name", Value: []byte(name)},
		{Key: "game", Value: []byte(game)},
		{Key: "map", Value: []byte(mapName)},
	}
}

// maxReadErrors is how many read errors in a row end a UDP loop: a
// transient error is counted and skipped, a socket that only fails must
// not spin.
const maxReadErrors = 100

// ReadError decides what a UDP read error means for a read loop: a closed
// socket ends it cleanly (stop, nil); maxReadErrors errors in a row end it
// with the last (stop, err); anything else is counted as "read_error" and
// skipped. run counts the errors in a row; the loop zeroes it on success.
func ReadError(err error, run *int, drops *Counters) (stop bool, result error) {
	if errors.Is(err, net.ErrClosed) {
		return true, nil
	}
	drops.Add("read_error")
	if *run++; *run >= maxReadErrors {
		return true, err
	}
	return false, nil
}

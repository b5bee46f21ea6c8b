package limit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/foyerlobby/foyer/internal/bounded"
)

// Buckets is a token bucket per key (a room, a source) in a table of
// fixed size, for budgets that are neither a source's requests nor a
// network's replies: a room's password guesses, say. It is safe for
// concurrent use.
type Buckets[K comparable] struct {
	mu    sync.Mutex
	t     *bounded.Table[K, rate.Limiter]
	clock monotone
	limit rate.Limit
	burst int
}

// NewBuckets allows each key r events a second in bursts of burst,
// tracking at most max keys (the least recently seen make room).
func NewBuckets[K comparable](r rate.Limit, burst, max int) *Buckets[K] {
	return &Buckets[K]{t: bounded.New[K, rate.Limiter](max), limit: r, burst: burst}
}

// Allow takes a token from k's bucket, if it has one.
func (b *Buckets[K]) Allow(k K, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bucket(k).AllowN(b.clock.at(now), 1)
}

// Has reports whether k's bucket has a token, taking none.
func (b *Buckets[K]) Has(k K, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bucket(k).TokensAt(now) >= 1
}

func (b *Buckets[K]) bucket(k K) *rate.Limiter {
	lim, found := b.t.Get(k)
	if !found {
		lim = b.t.Insert(k)
		fill(lim, b.limit, b.burst)
	}
	return lim
}

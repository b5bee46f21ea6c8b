package lobby

import (
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// retryKey names one request: a client that repeats it (same endpoint,
// type and sequence) is retrying, not asking again.
type retryKey struct {
	from netip.AddrPort
	typ  packet.Type
	seq  uint16
}

// maxAnswer is the longest CREATE or JOIN answer: ROOM_CREATED in the
// legacy framing (17-byte header, 6-byte payload, CRC).
const maxAnswer = packet.LegacyHeaderLen + 6 + 4

// answer is the outcome of one CREATE or JOIN, held inline so the cache
// allocates nothing per request. n is 0 while the request runs.
type answer struct {
	at    time.Time
	gen   uint64 // tells this entry from a later one under the same key
	n     uint8
	reply [maxAnswer]byte
}

// retries remembers the answers of recent CREATE and JOIN requests, so a
// retry gets the same reply and never runs the request twice. Entries live
// for the retry window; the cache holds at most max of them, dropping the
// oldest first (all entries live equally long, so the oldest is the first
// to expire anyway).
type retries struct {
	mu     sync.Mutex
	m      map[retryKey]answer
	order  []retryEntry // ring, oldest at head once full
	max    int          // the ring grows to max, then wraps
	head   int
	gen    uint64
	window time.Duration
}

type retryEntry struct {
	key retryKey
	gen uint64
}

func newRetries(max int, window time.Duration) *retries {
	return &retries{m: make(map[retryKey]answer), max: max, window: window}
}

// begin looks k up. For a fresh entry it appends the reply to b (nothing
// while the request still runs) and reports found; otherwise it records
// k as running and the caller runs the request and calls finish.
func (r *retries) begin(k retryKey, now time.Time, b []byte) (out []byte, found bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[k]; ok && now.Sub(a.at) < r.window {
		return append(b, a.reply[:a.n]...), true
	}
	r.gen++
	r.m[k] = answer{at: now, gen: r.gen}
	e := retryEntry{key: k, gen: r.gen}
	if len(r.order) < r.max {
		r.order = append(r.order, e)
		return b, false
	}
	old := r.order[r.head]
	if a, ok := r.m[old.key]; ok && a.gen == old.gen { // not since replaced
		delete(r.m, old.key)
	}
	r.order[r.head] = e
	r.head = (r.head + 1) % len(r.order)
	return b, false
}

// finish records the reply of a request begin let run.
func (r *retries) finish(k retryKey, reply []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[k]; ok && a.n == 0 && len(reply) <= maxAnswer {
		a.n = uint8(copy(a.reply[:], reply))
		r.m[k] = a
	}
}

// abandon forgets a request that was not run after all (dropped before it
// started), so a retry may run it.
func (r *retries) abandon(k retryKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[k]; ok && a.n == 0 {
		delete(r.m, k)
	}
}

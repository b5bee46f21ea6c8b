package lobby

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/internal/bounded"
	"github.com/foyerlobby/foyer/packet"
)

// endpoint is a client's address as the retry cache keys it: the IP as
// 16 bytes (IPv4 mapped) and the port, one block of memory to hash and
// compare. An IPv6 zone is left out: it only tells apart link-local peers
// with the same address on different links, and for those to collide
// they would also have to share everything else.
type endpoint [16 + 2]byte

// retryKey names one request: a client that repeats it (same endpoint,
// framing, type, sequence and payload, the room id of a JOIN) is
// retrying, not asking again; the same sequence with another room is a
// new request. All but the endpoint pack into one word.
type retryKey struct {
	from endpoint
	req  uint64
}

func newRetryKey(from netip.AddrPort, h packet.Header, roomID uint32) retryKey {
	var k retryKey
	ip := from.Addr().As16()
	copy(k.from[:16], ip[:])
	binary.BigEndian.PutUint16(k.from[16:], from.Port())
	k.req = uint64(h.Framing)<<56 | uint64(h.Type)<<48 | uint64(h.Seq)<<32 | uint64(roomID)
	return k
}

// maxAnswer is the longest CREATE or JOIN answer: ROOM_CREATED in the
// legacy framing (17-byte header, 6-byte payload, CRC).
const maxAnswer = packet.LegacyHeaderLen + 6 + 4

// perEndpoint is how many requests the cache remembers of one endpoint:
// its latest, which are the ones a client retries. A client has one or
// two in flight; one that sends more than this before it retries the
// first has that retry run anew, and only it bears the cost.
const perEndpoint = 4

// answer is the outcome of one request. n is 0 while the request runs,
// then the length of its reply; live is false once it is abandoned or
// has run again after it expired. at is when it began, as time since the
// cache's epoch.
type answer struct {
	req  uint64
	at   time.Duration
	n    uint8
	live bool
}

// answers are one endpoint's latest requests. next is the one the next
// request takes, the oldest: they are taken in turn. replies holds each
// one's reply, the cache's slot bytes apiece, allocated once per entry of
// the table and passed on with it when an endpoint is evicted.
type answers struct {
	a       [perEndpoint]answer
	next    uint8
	replies []byte
}

// find returns the index of the live answer to req, or -1.
func (e *answers) find(req uint64) int {
	for j := range e.a {
		if e.a[j].live && e.a[j].req == req {
			return j
		}
	}
	return -1
}

// retries remembers the answers of recent CREATE and JOIN requests, so a
// retry gets the same reply and never runs the request twice. It keeps
// the latest requests of each endpoint (perEndpoint, fewer if the whole
// cache is smaller), each for the retry window, and at most size answers
// in all: its endpoints sit in a bounded table, whose second-chance
// eviction lets a flood of new endpoints push out only the endpoints
// that have been quiet. A client's answers are thus lost only to its own
// later requests, or to a flood from more endpoints than the table
// holds. Under a JOIN flood from a few clients, the many requests touch
// the few endpoints' entries over and over: memory the processor keeps
// at hand, where one entry per request would be megabytes of it.
type retries struct {
	mu     sync.Mutex
	t      *bounded.Table[endpoint, answers]
	ways   int // requests kept per endpoint
	slot   int // the longest reply kept, at most 255
	n      int // live answers
	window time.Duration
	epoch  time.Time // answer.at counts from here (monotonic)
	// last is the slot of the endpoint begin last found, where finish
	// and abandon look first: a JOIN answered on its read loop finishes
	// right after it began.
	last int
}

// newRetries keeps at most size answers of at most slot bytes (255 at
// most) for window.
func newRetries(size, slot int, window time.Duration) *retries {
	ways := min(perEndpoint, size)
	return &retries{t: bounded.New[endpoint, answers](max(size/ways, 1)), ways: ways, slot: min(slot, 255),
		window: window, epoch: time.Now()}
}

// reply is the bytes of e's answer j.
func (r *retries) reply(e *answers, j int) []byte {
	at := j * r.slot
	return e.replies[at : at+int(e.a[j].n)]
}

// begin looks k up. For a fresh entry it appends the reply to b (nothing
// while the request still runs) and reports found; otherwise it records
// k as running, in place of its endpoint's oldest request, and the caller
// runs the request and calls finish.
func (r *retries) begin(k retryKey, now time.Time, b []byte) (out []byte, found bool) {
	return r.run(k, now, b, nil)
}

// run is begin and what follows it in one hold of the cache's lock, for a
// request that never waits: for k not found, it calls do, which appends
// the request's reply to b and reports whether to keep it (as finish
// does) or forget it (as abandon does). One look-up, one lock, and no
// other reader finds the request running. do must not use the cache; a
// nil do leaves the request running, as begin does.
func (r *retries) run(k retryKey, now time.Time, b []byte, do func(b []byte) ([]byte, bool)) (out []byte, found bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, j, found := r.take(k, now.Sub(r.epoch))
	switch {
	case found:
		return append(b, r.reply(e, j)...), true
	case do == nil:
		return b, false
	}
	out, keep := do(b)
	if keep {
		r.record(e, j, out[len(b):])
	} else {
		r.forget(e, j)
	}
	return out, false
}

// take is begin's look-up of k at at, the time since the cache's epoch:
// it returns the endpoint's answers and the index of k's answer, found
// if that is fresh, and otherwise taken for k as running. r.mu is held.
func (r *retries) take(k retryKey, at time.Duration) (e *answers, j int, found bool) {
	e, slot, known := r.t.Find(k.from)
	r.last = slot
	switch {
	case !known:
		e = r.t.Insert(k.from) // an evicted endpoint's answers go with it
		for j := range e.a {
			if e.a[j].live {
				r.n--
			}
		}
		*e = answers{replies: e.replies}
		if e.replies == nil {
			e.replies = make([]byte, r.ways*r.slot)
		}
	default:
		if j := e.find(k.req); j >= 0 {
			if at-e.a[j].at < r.window {
				return e, j, true
			}
			e.a[j].live = false // expired: it runs again as a new request
			r.n--
		}
	}
	j = int(e.next)
	e.next = uint8((j + 1) % r.ways)
	if e.a[j].live {
		r.n--
	}
	e.a[j] = answer{req: k.req, at: at, live: true}
	r.n++
	return e, j, false
}

// running returns the endpoint's answers and the index of k's answer
// while its request runs, or -1. The caller holds r.mu.
func (r *retries) running(k retryKey) (*answers, int) {
	e, known := r.t.At(r.last, k.from)
	if !known {
		e, known = r.t.Get(k.from)
	}
	if !known {
		return nil, -1
	}
	if j := e.find(k.req); j >= 0 && e.a[j].n == 0 {
		return e, j
	}
	return nil, -1
}

// finish records the reply of a request begin let run.
func (r *retries) finish(k retryKey, reply []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, j := r.running(k); j >= 0 {
		r.record(e, j, reply)
	}
}

// abandon forgets a request that was not run after all (dropped before it
// started), so a retry may run it.
func (r *retries) abandon(k retryKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, j := r.running(k); j >= 0 {
		r.forget(e, j)
	}
}

// record keeps reply as e's answer j, if it fits a slot. r.mu is held.
func (r *retries) record(e *answers, j int, reply []byte) {
	if len(reply) <= r.slot {
		at := j * r.slot
		e.a[j].n = uint8(copy(e.replies[at:at+r.slot], reply))
	}
}

// forget drops e's answer j, so that its request runs anew. r.mu is held.
func (r *retries) forget(e *answers, j int) {
	e.a[j].live = false
	r.n--
}

// len is the number of answers the cache holds.
func (r *retries) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

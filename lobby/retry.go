package lobby

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// retryKey names one request: a client that repeats it (same endpoint,
// framing, type, sequence and payload, the room id of a JOIN) is
// retrying, not asking again; the same sequence with another room is a
// new request. It is packed into bytes (IP as 16 bytes, IPv4 mapped; port;
// framing; type; sequence; room) so that the cache's map hashes and
// compares it as one block of memory, which under a JOIN flood is most of
// the cache's cost. An IPv6 zone is left out: it only tells apart
// link-local peers with the same address on different links, and for
// those to collide they would also have to share everything else.
type retryKey [16 + 2 + 1 + 1 + 2 + 4]byte

func newRetryKey(from netip.AddrPort, h packet.Header, roomID uint32) retryKey {
	var k retryKey
	ip := from.Addr().As16()
	copy(k[:16], ip[:])
	binary.BigEndian.PutUint16(k[16:], from.Port())
	k[18] = byte(h.Framing)
	k[19] = byte(h.Type)
	binary.BigEndian.PutUint16(k[20:], h.Seq)
	binary.BigEndian.PutUint32(k[22:], roomID)
	return k
}

// maxAnswer is the longest CREATE or JOIN answer: ROOM_CREATED in the
// legacy framing (17-byte header, 6-byte payload, CRC).
const maxAnswer = packet.LegacyHeaderLen + 6 + 4

// answer is the outcome of one request, its reply held in the cache's
// arena so the cache allocates nothing per request. n is 0 while the
// request runs. live is whether the map still points here (not since
// abandoned, or run again after it expired), so that recycling the slot
// knows without a lookup whether to delete its key. at is when it began,
// as time since the cache's epoch: 8 bytes where a time.Time takes 24,
// and the ring of a full cache is megabytes.
type answer struct {
	key  retryKey
	n    uint8
	live bool
	at   time.Duration
}

// retries remembers the answers of recent CREATE and JOIN requests, so a
// retry gets the same reply and never runs the request twice. Entries live
// for the retry window; the cache holds at most max of them, dropping the
// oldest first (all entries live equally long, so the oldest is the first
// to expire anyway). The answers sit in a ring in the order they began;
// the map only points into it, which keeps the map's entries small.
type retries struct {
	mu     sync.Mutex
	m      map[retryKey]int32 // index in ring
	ring   []answer           // grows to max, then wraps
	arena  []byte             // slot bytes per answer of ring, the replies
	slot   int                // the longest reply kept, at most 255
	max    int
	head   int // next slot to take once the ring is full
	window time.Duration
	epoch  time.Time // answer.at counts from here (monotonic)
}

// newRetries keeps at most max answers of at most slot bytes (255 at
// most) for window.
func newRetries(max, slot int, window time.Duration) *retries {
	return &retries{m: make(map[retryKey]int32), max: max, slot: min(slot, 255), window: window, epoch: time.Now()}
}

// reply is the bytes of answer i.
func (r *retries) reply(i int32) []byte {
	at := int(i) * r.slot
	return r.arena[at : at+int(r.ring[i].n)]
}

// begin looks k up. For a fresh entry it appends the reply to b (nothing
// while the request still runs) and reports found; otherwise it records
// k as running and the caller runs the request and calls finish.
func (r *retries) begin(k retryKey, now time.Time, b []byte) (out []byte, found bool) {
	at := now.Sub(r.epoch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.m[k]; ok {
		a := &r.ring[i]
		if at-a.at < r.window {
			return append(b, r.reply(i)...), true
		}
		a.live = false // expired: k moves to a new slot
	}
	i := len(r.ring)
	if i < r.max {
		r.ring = append(r.ring, answer{})
		r.arena = append(r.arena, make([]byte, r.slot)...)
	} else {
		i = r.head
		r.head = (r.head + 1) % len(r.ring)
		if old := &r.ring[i]; old.live {
			delete(r.m, old.key)
		}
	}
	r.ring[i] = answer{key: k, live: true, at: at}
	r.m[k] = int32(i)
	return b, false
}

// finish records the reply of a request begin let run.
func (r *retries) finish(k retryKey, reply []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.m[k]; ok && r.ring[i].n == 0 && len(reply) <= r.slot {
		at := int(i) * r.slot
		r.ring[i].n = uint8(copy(r.arena[at:at+r.slot], reply))
	}
}

// abandon forgets a request that was not run after all (dropped before it
// started), so a retry may run it.
func (r *retries) abandon(k retryKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.m[k]; ok && r.ring[i].n == 0 {
		delete(r.m, k)
		r.ring[i].live = false
	}
}

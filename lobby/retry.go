package lobby

import (
	"encoding/binary"
	"hash/maphash"
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
// request runs. live is whether the index still points here (not since
// abandoned, or run again after it expired), so that recycling the slot
// knows without a lookup whether to forget its key. at is when it began,
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
// an index (see slots) points into it. Under a JOIN flood every request is
// new, and the cache's cost is the memory it touches: one slot of the
// index to look up, one to forget the entry recycled, the ring slot it
// recycles.
type retries struct {
	mu     sync.Mutex
	index  slots
	ring   []answer // grows to max, then wraps
	arena  []byte   // slot bytes per answer of ring, the replies
	slot   int      // the longest reply kept, at most 255
	max    int
	head   int // next slot to take once the ring is full
	window time.Duration
	epoch  time.Time // answer.at counts from here (monotonic)
}

// newRetries keeps at most max answers of at most slot bytes (255 at
// most) for window.
func newRetries(max, slot int, window time.Duration) *retries {
	return &retries{index: newSlots(), max: max, slot: min(slot, 255), window: window, epoch: time.Now()}
}

// reply is the bytes of answer i.
func (r *retries) reply(i int) []byte {
	at := i * r.slot
	return r.arena[at : at+int(r.ring[i].n)]
}

// begin looks k up. For a fresh entry it appends the reply to b (nothing
// while the request still runs) and reports found; otherwise it records
// k as running and the caller runs the request and calls finish.
func (r *retries) begin(k retryKey, now time.Time, b []byte) (out []byte, found bool) {
	at := now.Sub(r.epoch)
	h := r.index.hash(&k)
	r.mu.Lock()
	defer r.mu.Unlock()
	pos, i := r.index.find(h, &k, r.ring)
	if i >= 0 {
		a := &r.ring[i]
		if at-a.at < r.window {
			return append(b, r.reply(i)...), true
		}
		a.live = false // expired: k moves to a new slot
		r.index.remove(pos)
	}
	i = len(r.ring)
	if i < r.max {
		r.ring = append(r.ring, answer{})
		r.arena = append(r.arena, make([]byte, r.slot)...)
	} else {
		i = r.head
		r.head = (r.head + 1) % len(r.ring)
		if old := &r.ring[i]; old.live {
			r.index.forget(r.index.hash(&old.key), i)
		}
	}
	r.ring[i] = answer{key: k, live: true, at: at}
	r.index.add(h, i)
	return b, false
}

// finish records the reply of a request begin let run.
func (r *retries) finish(k retryKey, reply []byte) {
	h := r.index.hash(&k)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, i := r.index.find(h, &k, r.ring); i >= 0 && r.ring[i].n == 0 && len(reply) <= r.slot {
		at := i * r.slot
		r.ring[i].n = uint8(copy(r.arena[at:at+r.slot], reply))
	}
}

// abandon forgets a request that was not run after all (dropped before it
// started), so a retry may run it.
func (r *retries) abandon(k retryKey) {
	h := r.index.hash(&k)
	r.mu.Lock()
	defer r.mu.Unlock()
	if pos, i := r.index.find(h, &k, r.ring); i >= 0 && r.ring[i].n == 0 {
		r.index.remove(pos)
		r.ring[i].live = false
	}
}

// len is the number of entries the index holds.
func (r *retries) len() int { return r.index.n }

// slots is the retry cache's index: an open-addressing hash table with
// linear probing of the ring positions of the live entries, each slot 8
// bytes (0 empty, else the key's hash in the upper half and its ring
// position + 1 in the lower), so that a lookup compares hashes in one
// cache line and reads the ring only for the key whose hash matches. It
// grows to stay at most half full, and the hash is seeded at random: a
// sender cannot choose keys that share slots.
type slots struct {
	s    []uint64
	n    int
	seed maphash.Seed
}

func newSlots() slots { return slots{s: make([]uint64, 64), seed: maphash.MakeSeed()} }

func (t *slots) hash(k *retryKey) uint32 { return uint32(maphash.Bytes(t.seed, k[:])) }

func (t *slots) mask() int { return len(t.s) - 1 }

// find returns the slot of k and its ring position, or -1 for both.
func (t *slots) find(h uint32, k *retryKey, ring []answer) (pos, i int) {
	for p := int(h) & t.mask(); t.s[p] != 0; p = (p + 1) & t.mask() {
		if uint32(t.s[p]>>32) == h && ring[int(uint32(t.s[p]))-1].key == *k {
			return p, int(uint32(t.s[p])) - 1
		}
	}
	return -1, -1
}

// add records that the key of hash h is at ring position i.
func (t *slots) add(h uint32, i int) {
	if 2*(t.n+1) > len(t.s) {
		t.grow()
	}
	p := int(h) & t.mask()
	for t.s[p] != 0 {
		p = (p + 1) & t.mask()
	}
	t.s[p] = uint64(h)<<32 | uint64(i+1)
	t.n++
}

// forget removes the slot pointing at ring position i, whose key has
// hash h.
func (t *slots) forget(h uint32, i int) {
	v := uint64(h)<<32 | uint64(i+1)
	for p := int(h) & t.mask(); t.s[p] != 0; p = (p + 1) & t.mask() {
		if t.s[p] == v {
			t.remove(p)
			return
		}
	}
}

// remove empties slot pos, moving back the entries after it that would
// no longer be found past the gap (backward-shift deletion).
func (t *slots) remove(pos int) {
	m := t.mask()
	for j := (pos + 1) & m; t.s[j] != 0; j = (j + 1) & m {
		// The entry at j stays unless its home slot lies cyclically
		// outside (pos, j].
		if home := int(uint32(t.s[j]>>32)) & m; (j-home)&m >= (j-pos)&m {
			t.s[pos] = t.s[j]
			pos = j
		}
	}
	t.s[pos] = 0
	t.n--
}

// grow doubles the table.
func (t *slots) grow() {
	old := t.s
	t.s = make([]uint64, 2*len(old))
	for _, v := range old {
		if v != 0 {
			p := int(uint32(v>>32)) & t.mask()
			for t.s[p] != 0 {
				p = (p + 1) & t.mask()
			}
			t.s[p] = v
		}
	}
}

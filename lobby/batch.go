package lobby

import (
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/replyaddr"
	"github.com/foyerlobby/foyer/internal/sockfilter"
)

// batchSize is how many datagrams a read loop takes from its socket per
// system call (recvmmsg on Linux), and at most how many replies it sends
// per call (sendmmsg). Under load the syscalls, not the lobby's work, are
// most of the cost of a datagram, and a batch shares them. Each slot has
// a buffer of the largest datagram, so that a long one is seen whole and
// dropped for what it is: batchSize × 64 KiB of address space per
// socket, of which only the bytes datagrams fill are touched; a reply
// slot grows to the longest reply it has held (a full ROOM_LIST at most).
const batchSize = 16

// batchIO says whether the loops batch their system calls (mmsgIO): on
// Linux. Elsewhere they read and write a datagram per call through the
// standard library (stdIO).
const batchIO = runtime.GOOS == "linux"

// dropCheck is how often at most a read loop asks the kernel for its
// socket's drop count (SO_MEMINFO, a system call), to tell a flood: one
// that overruns a receive buffer lasts far longer. Attached to every
// datagram instead (SO_RXQ_OVFL), the count cost the kernel a control
// message per datagram.
const dropCheck = time.Millisecond

// slot is one datagram read: its bytes, control messages and sender.
type slot struct {
	buf, oob []byte // read into; n and oobn of them filled
	n, oobn  int
	from     netip.AddrPort
}

// reply is one reply queued: its bytes, its control messages (its source
// address, see replyaddr) and where it goes; owed while its charge to the
// reply budget waits for settle.
type reply struct {
	b, oob []byte
	to     netip.AddrPort
	owed   bool
}

// socketIO reads datagrams into slots and sends replies, as many as one
// system call takes: at least one, or an error.
type socketIO interface {
	read(in []slot) (int, error)
	write(out []reply) (int, error)
}

// stdIO is a datagram per call through the standard library.
type stdIO struct{ c *net.UDPConn }

func (s stdIO) read(in []slot) (int, error) {
	n, oobn, _, from, err := s.c.ReadMsgUDPAddrPort(in[0].buf, in[0].oob)
	if err != nil {
		return 0, err
	}
	in[0].n, in[0].oobn, in[0].from = n, oobn, from
	return 1, nil
}

func (s stdIO) write(out []reply) (int, error) {
	if _, _, err := s.c.WriteMsgUDPAddrPort(out[0].b, out[0].oob, out[0].to); err != nil {
		return 0, err
	}
	return 1, nil
}

// batch is one read loop's state: the datagrams read by the last read and
// the replies the loop made to them, which leave together when the batch
// is done (flush). Replies made later, by CREATE or a JOIN worker, go
// straight to the socket. Only its loop uses a batch.
type batch struct {
	io  socketIO
	in  []slot
	out []reply // out[:queued] wait for flush
	// bound is the socket's own address: where every datagram arrived
	// and its replies leave from, unless it is a wildcard, when the
	// datagram's control message says (and a reply carries one back).
	bound netip.Addr
	// drops is the socket's drop count when the loop last looked, at
	// looked (see dropped): 0 at first, so that datagrams dropped before
	// the loop began to read count too. meter reads it (nil where it
	// cannot be read).
	drops  uint32
	meter  *sockfilter.Meter
	looked time.Time
	queued int
	// n is how many datagrams answer handles, i the one it is at.
	n, i int
	// credits are what the batch's sources were admitted for together
	// (see admitted), one per source that asked.
	credits []credit
	// counts wait for Lobby.flush to add them to the lobby's counters.
	counts batchCounts
}

// credit is what a run of a source's requests in a batch, asked for
// together, got (see admitted): the requests up to the datagram until,
// the first served of those still to come served with v, and the rest
// refused, the next with refused; or, with alone, that each asks alone.
type credit struct {
	ip         netip.Addr
	until      int
	served     int
	v, refused limit.Verdict
	alone      bool
}

// newBatch is the batch of socket c: its system calls batched (on Linux)
// if batched is set, and then raw, giving the processor up now and then
// while mmsg.Yields(callers) holds, callers being the loops that read
// batches like it (0: never raw).
func newBatch(c *net.UDPConn, batched bool, callers int) *batch {
	q := &batch{
		in:      make([]slot, batchSize),
		out:     make([]reply, batchSize),
		credits: make([]credit, 0, batchSize),
	}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok {
		q.bound = a.AddrPort().Addr().Unmap()
	}
	q.meter, _ = sockfilter.NewMeter(c)
	for i := range q.in {
		q.in[i].buf = make([]byte, 1<<16)
		q.in[i].oob = make([]byte, controlSpace)
		q.out[i].b = make([]byte, 0, 64) // grows to the longest reply
		q.out[i].oob = make([]byte, 0, replyaddr.Space)
	}
	q.io = stdIO{c}
	if batched {
		q.io = newMmsgIO(c, q.in, len(q.out), callers)
	}
	return q
}

// read waits for at least one datagram and returns how many it read into
// q.in.
func (q *batch) read() (int, error) { return q.io.read(q.in) }

// dropped reports whether the kernel dropped datagrams at the socket
// since the loop last looked (a flood, if it could not hand them over
// fast enough; see Lobby.flooded), looking at most once per dropCheck,
// at now. Where the count cannot be read it reports false.
func (q *batch) dropped(now time.Time) bool {
	if q.meter == nil || now.Sub(q.looked) < dropCheck {
		return false
	}
	q.looked = now
	drops, err := q.meter.Drops()
	if err != nil {
		return false
	}
	moved := drops != q.drops
	q.drops = drops
	return moved
}

// datagram returns the i-th datagram read, its sender and where it
// arrived (invalid when a wildcard socket could not tell).
func (q *batch) datagram(i int) ([]byte, netip.AddrPort, arrival) {
	s := &q.in[i]
	at := arrival{to: q.bound}
	if q.bound.IsUnspecified() {
		at = parseControl(s.oob[:s.oobn])
	}
	return s.buf[:s.n], s.from, at
}

// answer runs handle on each datagram read with the buffer of the next
// queued reply as its scratch space, so that queueing a reply copies
// nothing; a buffer handle grew but did not queue (its reply was dropped)
// is kept for the next one, so that even a flood of dropped replies
// allocates nothing.
func (q *batch) answer(n int, handle func(b []byte, from netip.AddrPort, at arrival, out []byte) []byte) {
	q.n, q.credits = n, q.credits[:0]
	for q.i = 0; q.i < n; q.i++ {
		slot := q.queued
		b, from, at := q.datagram(q.i)
		if out := handle(b, from, at, q.out[slot].b[:0]); q.queued == slot {
			q.out[slot].b = out[:0]
		}
	}
}

// admitted is the verdict on the datagram answer is at, a request from
// ip of a kind the batch admits together, which alike tells by its
// bytes. A run of such requests, the source's datagrams that follow it
// up to the first that is not alike, asks at once, the first of them
// for all (together(n)); the others take their verdicts from that
// answer. One not in a run, or in a run whose answer is that each asks
// alone (together's false), asks alone. Runs keep a source's requests
// in order: none is served in place of an earlier one.
//
// A datagram counted into a run that fails its later checks is charged
// all the same: only datagrams shaped as requests of its source count,
// so the charge is at most its own share of the batch.
func (q *batch) admitted(ip netip.Addr, alike func(b []byte) bool, together func(n int) (limit.Admission, bool), alone func() limit.Verdict) limit.Verdict {
	c := q.creditOf(ip)
	if q.i > c.until { // a new run
		n := 1
		c.until, c.alone = q.i, true
		for j := q.i + 1; j < q.n; j++ {
			if s := &q.in[j]; s.from.Addr() == ip {
				if !alike(s.buf[:s.n]) {
					break
				}
				n, c.until = n+1, j
			}
		}
		if n > 1 {
			if a, ok := together(n); ok {
				c.served, c.v, c.refused, c.alone = a.Served, a.Verdict, a.Refused, false
			}
		}
	}
	switch {
	case c.alone:
		return alone()
	case c.served > 0:
		c.served--
		return c.v
	}
	v := c.refused
	c.refused = limit.Limited // as its source is now
	return v
}

// creditOf is ip's credit in the batch, a new one (no run yet) if it
// has none.
func (q *batch) creditOf(ip netip.Addr) *credit {
	for i := range q.credits {
		if q.credits[i].ip == ip {
			return &q.credits[i]
		}
	}
	q.credits = append(q.credits, credit{ip: ip, until: -1})
	return &q.credits[len(q.credits)-1]
}

// WriteFrom queues b, the scratch space answer handed out (grown or not),
// for the next flush, to leave from src (see arrival.replyFrom). handle
// queues at most one reply per datagram, so a batch has room for every
// reply.
func (q *batch) WriteFrom(b []byte, to netip.AddrPort, src netip.Addr) (int, error) {
	r := &q.out[q.queued]
	r.b, r.to, r.owed = b, to, false
	r.oob = replyaddr.Append(r.oob[:0], src)
	q.queued++
	return len(b), nil
}

// owe queues b as WriteFrom does, its charge to the reply budget left to
// settle.
func (q *batch) owe(b []byte, to netip.AddrPort, src netip.Addr) {
	q.WriteFrom(b, to, src)
	q.out[q.queued-1].owed = true
}

// settle charges the owed replies to the reply budget, allow saying
// whether n bytes to a network fit, and drops the ones that do not,
// telling dropped of each. The owed replies to one network ask together,
// once: a batch is mostly the requests of a client or a few, and the
// budget's bookkeeping is then paid per network, not per reply. When
// they do not fit together, each asks in turn, as it would have alone.
func (q *batch) settle(allow func(to netip.Addr, n int) bool, dropped func()) {
	rs := q.out[:q.queued]
	var nets [batchSize]netip.Prefix
	var drop [batchSize]bool
	for i := range rs {
		if rs[i].owed {
			nets[i] = limit.PrefixOf(rs[i].to.Addr())
		}
	}
	for i := range rs {
		if !rs[i].owed {
			continue
		}
		sum, n := 0, 0
		for j := i; j < len(rs); j++ {
			if rs[j].owed && nets[j] == nets[i] {
				sum, n = sum+len(rs[j].b), n+1
			}
		}
		together := allow(rs[i].to.Addr(), sum)
		for j := i; j < len(rs); j++ {
			if rs[j].owed && nets[j] == nets[i] {
				rs[j].owed = false
				drop[j] = !together && (n == 1 || !allow(rs[j].to.Addr(), len(rs[j].b)))
			}
		}
	}
	kept := 0
	for i := range rs {
		if drop[i] {
			dropped()
			continue
		}
		if kept != i { // a reply swapped with itself is copied for nothing
			rs[kept], rs[i] = rs[i], rs[kept] // buffers swap places, none is lost
		}
		kept++
	}
	q.queued = kept
}

// flush sends the queued replies, telling sent about each: whether it
// went out.
func (q *batch) flush(sent func(b []byte, ok bool)) {
	rs := q.out[:q.queued]
	q.queued = 0
	for len(rs) > 0 {
		n, err := q.io.write(rs)
		n = max(n, 0)
		for _, r := range rs[:n] {
			sent(r.b, true)
		}
		rs = rs[n:]
		if len(rs) > 0 && (err != nil || n == 0) {
			// The first unsent one failed; the rest may yet go.
			sent(rs[0].b, false)
			rs = rs[1:]
		}
	}
}

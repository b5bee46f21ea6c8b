package lobby

import (
	"net"
	"net/netip"
	"runtime"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/foyerlobby/foyer/internal/replyaddr"
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

// batchConn is the batch I/O of golang.org/x/net's ipv4 and ipv6
// PacketConn, which share the Message type, or of stdConn.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// batchIO says whether golang.org/x/net batches: only on Linux. Elsewhere
// it would read and write one datagram per call anyway, and it would
// address a dual-stack socket's IPv4 peers as AF_INET, which Linux
// accepts on an IPv6 socket but other systems need not; the standard
// library (stdConn) gets both right.
const batchIO = runtime.GOOS == "linux"

// stdConn is a batchConn of one datagram per call through the standard
// library, for the systems where golang.org/x/net does not batch.
type stdConn struct{ c *net.UDPConn }

func (s stdConn) ReadBatch(ms []ipv4.Message, _ int) (int, error) {
	n, from, err := s.c.ReadFromUDPAddrPort(ms[0].Buffers[0])
	if err != nil {
		return 0, err
	}
	ms[0].N, ms[0].Addr = n, net.UDPAddrFromAddrPort(from)
	return 1, nil
}

func (s stdConn) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	if _, _, err := s.c.WriteMsgUDP(ms[0].Buffers[0], ms[0].OOB, ms[0].Addr.(*net.UDPAddr)); err != nil {
		return 0, err
	}
	return 1, nil
}

// batch is one read loop's state: the datagrams read by the last
// ReadBatch and the replies the loop made to them, which leave together
// when the batch is done (flush). Replies made later, by CREATE or a JOIN
// worker, go straight to the socket. Only its loop uses a batch.
type batch struct {
	bc  batchConn
	in  []ipv4.Message
	out []ipv4.Message // out[:queued] wait for flush
	// bound is the socket's own address: where every datagram arrived
	// and its replies leave from, unless it is a wildcard, when the
	// datagram's control message says (and a reply carries one back).
	bound netip.Addr
	// drops is the socket's drop counter as the last datagram read said.
	drops uint32
	// to are the replies' addresses, reused: Message wants a net.Addr.
	to     []net.UDPAddr
	queued int
}

func newBatch(c *net.UDPConn, batched bool) *batch {
	q := &batch{
		in:  make([]ipv4.Message, batchSize),
		out: make([]ipv4.Message, batchSize),
		to:  make([]net.UDPAddr, batchSize),
	}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok {
		q.bound = a.AddrPort().Addr().Unmap()
	}
	switch a, _ := c.LocalAddr().(*net.UDPAddr); {
	case !batched:
		q.bc = stdConn{c}
	case a != nil && a.IP.To4() == nil:
		q.bc = ipv6.NewPacketConn(c)
	default:
		q.bc = ipv4.NewPacketConn(c)
	}
	for i := range q.in {
		q.in[i].Buffers = [][]byte{make([]byte, 1<<16)}
		q.in[i].OOB = make([]byte, controlSpace)
		q.out[i].Buffers = [][]byte{make([]byte, 0, 64)} // grows to the longest reply
		q.out[i].OOB = make([]byte, 0, replyaddr.Space)
		q.to[i].IP = make(net.IP, 0, net.IPv6len)
		q.out[i].Addr = &q.to[i]
	}
	return q
}

// read waits for at least one datagram and returns how many it read into
// q.in, and whether the socket dropped datagrams since the last read (a
// flood: the kernel could not hand them over fast enough).
func (q *batch) read() (n int, dropped bool, err error) {
	n, err = q.bc.ReadBatch(q.in, 0)
	if err != nil || n == 0 {
		return n, false, err
	}
	m := &q.in[n-1]
	if _, drops, ok := parseControl(m.OOB[:m.NN]); ok {
		dropped, q.drops = drops != q.drops, drops
	}
	return n, dropped, nil
}

// datagram returns the i-th datagram read, its sender and where it
// arrived (invalid when a wildcard socket could not tell).
func (q *batch) datagram(i int) ([]byte, netip.AddrPort, arrival) {
	m := &q.in[i]
	var from netip.AddrPort
	if a, ok := m.Addr.(*net.UDPAddr); ok {
		from = a.AddrPort()
	}
	at := arrival{to: q.bound}
	if q.bound.IsUnspecified() {
		at, _, _ = parseControl(m.OOB[:m.NN])
	}
	return m.Buffers[0][:m.N], from, at
}

// answer runs handle on each datagram read with the buffer of the next
// queued reply as its scratch space, so that queueing a reply copies
// nothing; a buffer handle grew but did not queue (its reply was dropped)
// is kept for the next one, so that even a flood of dropped replies
// allocates nothing.
func (q *batch) answer(n int, handle func(b []byte, from netip.AddrPort, at arrival, out []byte) []byte) {
	for i := range n {
		slot := q.queued
		b, from, at := q.datagram(i)
		if out := handle(b, from, at, q.out[slot].Buffers[0][:0]); q.queued == slot {
			q.out[slot].Buffers[0] = out[:0]
		}
	}
}

// WriteFrom queues b, the scratch space answer handed out (grown or not),
// for the next flush, to leave from src (see arrival.replyFrom). handle
// queues at most one reply per datagram, so a batch has room for every
// reply.
func (q *batch) WriteFrom(b []byte, to netip.AddrPort, src netip.Addr) (int, error) {
	q.out[q.queued].OOB = replyaddr.Append(q.out[q.queued].OOB[:0], src)
	a := &q.to[q.queued]
	ip := to.Addr()
	if ip.Is4() {
		v4 := ip.As4()
		a.IP = append(a.IP[:0], v4[:]...)
	} else {
		v6 := ip.As16()
		a.IP = append(a.IP[:0], v6[:]...)
	}
	a.Port, a.Zone = int(to.Port()), ip.Zone()
	q.out[q.queued].Buffers[0] = b
	q.queued++
	return len(b), nil
}

// flush sends the queued replies, telling sent about each: whether it
// went out.
func (q *batch) flush(sent func(b []byte, ok bool)) {
	ms := q.out[:q.queued]
	q.queued = 0
	for len(ms) > 0 {
		n, err := q.bc.WriteBatch(ms, 0)
		n = max(n, 0)
		for _, m := range ms[:n] {
			sent(m.Buffers[0], true)
		}
		ms = ms[n:]
		if len(ms) > 0 && (err != nil || n == 0) {
			// The first unsent one failed; the rest may yet go.
			sent(ms[0].Buffers[0], false)
			ms = ms[1:]
		}
	}
}

package loadtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/foyerlobby/foyer/packet"
)

// WindowConfig describes an open run: each socket keeps Window requests
// outstanding for Duration, sending a new one as each reply arrives, so
// that a server is measured with a queue in front of it, as many clients
// make one, and not round trip by round trip.
type WindowConfig struct {
	Target netip.AddrPort
	// Sources are the local addresses to send from, one socket each;
	// port 0 picks one.
	Sources []netip.AddrPort
	// Window is the number of requests each socket keeps outstanding.
	Window int
	// Duration is how long the run lasts; requests still outstanding at
	// its end count as neither answered nor lost.
	Duration time.Duration
	// Mix are the requests to send, in turn (encoded, compact framing);
	// their sequence is rewritten for every send.
	Mix [][]byte
	// Timeout is how long a request waits for its reply before it counts
	// as lost and another takes its place.
	Timeout time.Duration
}

// WindowResult is what one open run measured.
type WindowResult struct {
	Sent, Answered, Lost int
	Elapsed              time.Duration
	// Rate is answered requests per second.
	Rate float64
	// P50 and P99 are latencies of answered requests.
	P50, P99 time.Duration
	// Types counts the replies by message type (the compact header's
	// second byte), so that a run shows what it was answered with.
	Types map[uint8]int
}

func (r WindowResult) String() string {
	return fmt.Sprintf("%.0f req/s, p50 %v, p99 %v, %d answered, %d lost of %d sent in %v",
		r.Rate, r.P50, r.P99, r.Answered, r.Lost, r.Sent, r.Elapsed.Round(time.Millisecond))
}

// windowRead is how many replies a socket takes per system call, and
// replyBuffer the bytes it keeps of each: a reply is matched by its
// header, and a longer one is truncated unread.
const (
	windowRead  = 32
	replyBuffer = 2048
)

// Window performs one open run. It binds its sockets first and starts
// the clock once every socket is ready.
func Window(ctx context.Context, cfg WindowConfig) (WindowResult, error) {
	if len(cfg.Sources) == 0 || cfg.Window < 1 || cfg.Window > 1<<14 || cfg.Duration <= 0 || len(cfg.Mix) == 0 || cfg.Timeout <= 0 {
		return WindowResult{}, errors.New("loadtest: sources, window (at most 16384), duration, mix and timeout must be set")
	}
	for _, m := range cfg.Mix {
		if len(m) < packet.CompactHeaderLen+packet.CRCLen || packet.TypeOf(m) == 0 {
			return WindowResult{}, errors.New("loadtest: a request of the mix is not a compact datagram")
		}
	}
	ss := make([]*windowSocket, len(cfg.Sources))
	defer func() {
		for _, s := range ss {
			if s != nil {
				s.c.Close()
			}
		}
	}()
	for i, ap := range cfg.Sources {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return WindowResult{}, fmt.Errorf("loadtest: bind %v: %w", ap, err)
		}
		ss[i] = newWindowSocket(&cfg, c, i)
	}
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for _, s := range ss {
		wg.Go(func() { <-begin; s.run(ctx) })
	}
	start := time.Now()
	for _, s := range ss {
		s.deadline = start.Add(cfg.Duration)
	}
	close(begin)
	wg.Wait()
	res := WindowResult{Elapsed: time.Since(start), Types: map[uint8]int{}}
	var lat []time.Duration
	for _, s := range ss {
		if s.err != nil {
			return res, s.err
		}
		lat = append(lat, s.lat...)
		res.Sent += s.sent
		res.Lost += s.lost
		for t, n := range s.types {
			if n > 0 {
				res.Types[uint8(t)] += n
			}
		}
	}
	res.Answered = len(lat)
	if res.Answered > 0 {
		slices.Sort(lat)
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[len(lat)*99/100]
		res.Rate = float64(res.Answered) / res.Elapsed.Seconds()
	}
	return res, ctx.Err()
}

// windowSocket is one socket of an open run and its requests in flight,
// by sequence: sentAt[seq] is when the request went out, 0 once it was
// answered or lost. Sequences are handed out in order, so the outstanding
// ones lie between oldest and next.
type windowSocket struct {
	cfg      *WindowConfig
	c        *net.UDPConn
	pc       *ipv4.PacketConn
	deadline time.Time

	sentAt      [1 << 16]int64 // Unix ns
	next        uint16         // the next sequence to send
	oldest      uint16         // no request before it is outstanding
	outstanding int
	turn        int // the next request of the mix

	out   []ipv4.Message
	in    []ipv4.Message
	lat   []time.Duration
	types [256]int
	sent  int
	lost  int
	err   error
}

func newWindowSocket(cfg *WindowConfig, c *net.UDPConn, i int) *windowSocket {
	s := &windowSocket{cfg: cfg, c: c, pc: ipv4.NewPacketConn(c), turn: i}
	s.out = make([]ipv4.Message, cfg.Window)
	to := net.UDPAddrFromAddrPort(cfg.Target)
	for j := range s.out {
		s.out[j].Buffers = [][]byte{nil}
		s.out[j].Addr = to
	}
	s.in = make([]ipv4.Message, windowRead)
	for j := range s.in {
		s.in[j].Buffers = [][]byte{make([]byte, replyBuffer)}
	}
	// The sequence space starts anywhere, so that the sockets' requests
	// do not all carry the same sequences.
	s.next = uint16(i * 4099)
	s.oldest = s.next
	return s
}

// run keeps the window full until the deadline.
func (s *windowSocket) run(ctx context.Context) {
	s.send(s.cfg.Window, time.Now())
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(s.deadline) {
			return
		}
		wake := s.deadline
		if s.outstanding > 0 {
			if t := time.Unix(0, s.sentAt[s.oldest]).Add(s.cfg.Timeout); t.Before(wake) {
				wake = t
			}
		}
		_ = s.c.SetReadDeadline(wake)
		n, err := s.pc.ReadBatch(s.in, 0)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			s.err = fmt.Errorf("loadtest: reading replies: %w", err)
			return
		}
		now = time.Now()
		replace := 0
		for _, m := range s.in[:max(n, 0)] {
			b := m.Buffers[0][:m.N]
			if len(b) < 4 {
				continue
			}
			seq := binary.BigEndian.Uint16(b[2:4])
			if at := s.sentAt[seq]; at != 0 {
				s.sentAt[seq] = 0
				s.outstanding--
				s.lat = append(s.lat, time.Duration(now.UnixNano()-at))
				s.types[b[1]]++
				replace++
			}
		}
		replace += s.expire(now)
		s.send(replace, now)
	}
}

// expire counts the requests older than the timeout as lost and returns
// how many, after moving oldest past the answered ones.
func (s *windowSocket) expire(now time.Time) int {
	n := 0
	limit := now.Add(-s.cfg.Timeout).UnixNano()
	for s.oldest != s.next {
		at := s.sentAt[s.oldest]
		if at != 0 && at > limit {
			break
		}
		if at != 0 {
			s.sentAt[s.oldest] = 0
			s.outstanding--
			s.lost++
			n++
		}
		s.oldest++
	}
	return n
}

// send sends k new requests in one system call (or as few as the socket
// takes).
func (s *windowSocket) send(k int, now time.Time) {
	if k == 0 {
		return
	}
	ms := s.out[:k]
	at := now.UnixNano()
	for i := range ms {
		req := s.cfg.Mix[s.turn%len(s.cfg.Mix)]
		s.turn++
		b := append(ms[i].Buffers[0][:0], req...)
		packet.SetSeq(b, s.next)
		ms[i].Buffers[0] = b
		if s.sentAt[s.next] != 0 {
			// The sequences went round while this one waited: a
			// timeout longer than 65,536 requests of one socket take.
			s.lost++
			s.outstanding--
		}
		s.sentAt[s.next] = at
		s.next++
		s.outstanding++
	}
	s.sent += k
	for len(ms) > 0 {
		n, err := s.pc.WriteBatch(ms, 0)
		if err != nil || n <= 0 {
			// Unsent: outstanding until they time out, like a
			// datagram lost on the way.
			return
		}
		ms = ms[n:]
	}
}

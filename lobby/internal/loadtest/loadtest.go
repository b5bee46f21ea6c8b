// Package loadtest drives a UDP request/reply server as fast as it answers
// and measures the rate and latency it sees. It speaks the native lobby
// protocol's compact framing only as far as it must: requests are encoded
// datagrams whose sequence it rewrites, and a reply matches the request
// whose sequence it carries. A server that echoes datagrams back matches
// too, which is how a bare echo server serves as the baseline.
//
// Each worker is a closed loop: send one request, wait for its reply,
// repeat. Workers spread their requests over all their sockets, each bound
// to one of the source addresses, so a run can look like many clients.
package loadtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// Config describes one run.
type Config struct {
	Target netip.AddrPort
	// Sources are the local addresses to send from, one socket each;
	// nil means one socket per worker on 127.0.0.1.
	Sources []netip.Addr
	// Workers is the number of requests in flight at once.
	Workers int
	// Requests is the number of requests in the run, over all workers.
	Requests int
	// Mix are the requests to send, in turn (encoded, compact framing);
	// their sequence is rewritten for every send.
	Mix [][]byte
	// Timeout is how long a worker waits for a reply before it counts the
	// request as lost and moves on.
	Timeout time.Duration
}

// Result is what one run measured.
type Result struct {
	Answered, Lost int
	Elapsed        time.Duration
	// Rate is answered requests per second.
	Rate float64
	// P50 and P99 are latencies of answered requests.
	P50, P99 time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("%.0f req/s, p50 %v, p99 %v, %d answered, %d lost in %v",
		r.Rate, r.P50, r.P99, r.Answered, r.Lost, r.Elapsed.Round(time.Millisecond))
}

// Run performs one run. It binds its sockets first and starts the clock
// only when every worker is ready.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Workers < 1 || cfg.Requests < 1 || len(cfg.Mix) == 0 || cfg.Timeout <= 0 {
		return Result{}, errors.New("loadtest: workers, requests, mix and timeout must be set")
	}
	sources := cfg.Sources
	if len(sources) == 0 {
		sources = slices.Repeat([]netip.Addr{netip.MustParseAddr("127.0.0.1")}, cfg.Workers)
	}
	conns := make([]*net.UDPConn, 0, len(sources))
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, ip := range sources {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		if err != nil {
			return Result{}, fmt.Errorf("loadtest: bind %v: %w", ip, err)
		}
		conns = append(conns, c)
	}
	ws := make([]*worker, cfg.Workers)
	for i := range ws {
		ws[i] = &worker{cfg: &cfg, lat: make([]time.Duration, 0, cfg.Requests/cfg.Workers+1), seq: uint16(i << 12)}
		for j := i; j < len(conns); j += cfg.Workers {
			ws[i].conns = append(ws[i].conns, conns[j])
		}
		if len(ws[i].conns) == 0 { // more workers than sources: share
			ws[i].conns = []*net.UDPConn{conns[i%len(conns)]}
		}
	}
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i, w := range ws {
		n := cfg.Requests / cfg.Workers
		if i < cfg.Requests%cfg.Workers {
			n++
		}
		wg.Go(func() { <-begin; w.run(ctx, n) })
	}
	start := time.Now()
	close(begin)
	wg.Wait()
	elapsed := time.Since(start)
	res := Result{Elapsed: elapsed}
	var lat []time.Duration
	for _, w := range ws {
		lat = append(lat, w.lat...)
		res.Lost += w.lost
	}
	res.Answered = len(lat)
	if res.Answered > 0 {
		slices.Sort(lat)
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[len(lat)*99/100]
		res.Rate = float64(res.Answered) / elapsed.Seconds()
	}
	return res, ctx.Err()
}

type worker struct {
	cfg   *Config
	conns []*net.UDPConn
	lat   []time.Duration
	lost  int
	seq   uint16
}

func (w *worker) run(ctx context.Context, n int) {
	reqs := make([][]byte, len(w.cfg.Mix))
	for i, m := range w.cfg.Mix {
		reqs[i] = slices.Clone(m)
	}
	buf := make([]byte, 1<<16)
	for i := range n {
		if ctx.Err() != nil {
			return
		}
		c := w.conns[i%len(w.conns)]
		req := reqs[i%len(reqs)]
		w.seq++
		packet.SetSeq(req, w.seq)
		sent := time.Now()
		if _, err := c.WriteToUDPAddrPort(req, w.cfg.Target); err != nil {
			w.lost++
			continue
		}
		if w.await(c, buf, sent) {
			w.lat = append(w.lat, time.Since(sent))
		} else {
			w.lost++
		}
	}
}

// await reads c until the reply carrying w.seq arrives (stale replies to
// requests given up on are skipped) or the timeout passes.
func (w *worker) await(c *net.UDPConn, buf []byte, sent time.Time) bool {
	c.SetReadDeadline(sent.Add(w.cfg.Timeout))
	for {
		n, err := c.Read(buf)
		if err != nil {
			return false
		}
		if n >= 4 && binary.BigEndian.Uint16(buf[2:4]) == w.seq {
			return true
		}
	}
}

// Echo answers every datagram on c with its own bytes, zero-padded to
// size(datagram) bytes when that is longer, until c is closed: the
// baseline a server's rate is compared with, its replies as long as the
// server's. It reads into one reused buffer on one goroutine, as the
// lobby's socket loops do.
func Echo(c *net.UDPConn, size func(req []byte) int) {
	buf := make([]byte, 1<<16)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		c.WriteToUDPAddrPort(pad(buf, n, size), from)
	}
}

// pad is the echo of the n-byte datagram at the start of buf: the
// datagram, zero-padded to size of it (at most buf's length).
func pad(buf []byte, n int, size func(req []byte) int) []byte {
	m := min(max(size(buf[:n]), n), len(buf))
	clear(buf[n:m])
	return buf[:m]
}

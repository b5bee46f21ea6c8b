package lobby

import (
	"context"
	"math"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/lobby/internal/loadtest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// BenchmarkInProcessLobbyVsEcho compares, in one process, how many
// round trips a load generator gets through with the lobby and with two
// echo servers that answer each request with as many bytes as the lobby
// does (a bare Go UDP echo, one datagram per system call, and one that
// batches with recvmmsg/sendmmsg as the lobby does). The generator runs in
// this process, on the same cores as the server it drives, so each rate
// is of whole round trips, the generator's own work (about half the CPU
// time) included: the ratios say how much slower the lobby makes the
// round trip, not the lobby's cost per request against the echo's, which
// they understate. Nor is it the edge's capacity in production: the lobby
// runs over the real room table holding 10 rooms with no processes behind
// them (no supervisor or instance costs), and a client on the same cores
// takes the CPU it would have. Each b.Loop iteration is one run against
// each server. The lobby answers JOIN on its read loop since the table,
// as in front of the supervisor, never waits in Join; the first JOINs
// hold seats, the rest are answered from the seat already held or refused
// as full, all of which are full round trips through the room.Table
// interface.
//
// Rows:
//   - list: LIST of 10 rooms only, 16 sockets on 127.0.0.1, one request
//     in flight on each.
//   - join: JOIN only, from 16 source addresses in 127.1.0.0/24.
//   - one-source: LIST and JOIN alternating, every request from
//     127.0.0.1, limits raised so that nothing is dropped.
//   - many-sources: the mix spread over 2,048 source addresses in
//     127.1.0.0/21 (8 /24s), limits raised; this adds the per-IP and
//     per-network tables' own cost.
//   - many-sources-evicting: the same with max_sources = 256, so nearly
//     every request evicts a source: the table's cost under a spoofed
//     flood, with admission raised (else the flood would be refused
//     admission, which BenchmarkFlood measures).
//
// Metrics: round trips per second and p50/p99 latency (µs) for each
// server, and the ratios of the lobby's rate to each echo's.
func BenchmarkInProcessLobbyVsEcho(b *testing.B) {
	for _, row := range []struct {
		name       string
		list, join bool
		sockets    int // on 127.0.0.1; 0 when sources are given
		sources    int
		maxSources int
	}{
		{"list", true, false, benchWorkers, 0, 100000},
		{"join", false, true, 0, 16, 100000},
		{"one-source", true, true, 0, 0, 100000},
		{"many-sources", true, true, 0, 2048, 100000},
		{"many-sources-evicting", true, true, 0, 2048, 256},
	} {
		b.Run(row.name, func(b *testing.B) {
			var sources []netip.Addr
			for range row.sockets {
				sources = append(sources, netip.MustParseAddr("127.0.0.1"))
			}
			for i := range row.sources {
				sources = append(sources, netip.AddrFrom4([4]byte{127, 1, byte(i / 250), byte(i%250 + 1)}))
			}
			benchLobbyVsEcho(b, benchMix(b, row.list, row.join), sources, row.maxSources)
		})
	}
}

// benchWorkers requests in flight saturate the 2-core machine this was
// tuned on (4 left both servers latency-bound; 32 raised neither rate
// much), so the rates measure CPU cost per request, not round trips.
const (
	benchWorkers  = 16
	benchRequests = 20000 // per server and iteration
)

// benchMix is the requests of a row: LIST, JOIN of each of the 10 rooms,
// or both alternating.
func benchMix(b *testing.B, list, join bool) [][]byte {
	var mix [][]byte
	for i := range 10 {
		var ms []packet.Message
		if list {
			ms = append(ms, packet.Message{Header: packet.Header{Type: packet.ListRooms}})
		}
		if join {
			ms = append(ms, packet.Message{Header: packet.Header{Type: packet.JoinRoom}, RoomID: uint32(i + 1)})
		}
		for _, m := range ms {
			enc, err := m.Append(nil)
			if err != nil {
				b.Fatal(err)
			}
			mix = append(mix, enc)
		}
	}
	return mix
}

func benchLobbyVsEcho(b *testing.B, mix [][]byte, sources []netip.Addr, maxSources int) {
	rooms := newMemRooms(b, 10)
	for i := range 10 {
		rooms.add(room.Room{ID: uint32(i + 1), Port: uint16(30000 + i), MaxPlayers: 4, State: packet.Waiting})
	}
	cfg := testConfig()
	cfg.Rate, cfg.Burst = math.MaxInt32, math.MaxInt32
	cfg.AdmitRate, cfg.AdmitBurst = math.MaxInt32, math.MaxInt32
	cfg.ReflectionLimit = math.MaxInt32
	cfg.MaxSources = maxSources
	_, lobbyAddr := start(b, cfg, rooms)
	size := replySizes(b, lobbyAddr, mix)
	echoAddr := startEcho(b, loadtest.Echo, size)
	batchedAddr := startEcho(b, loadtest.EchoBatched, size)
	run := func(target netip.AddrPort) loadtest.Result {
		res, err := loadtest.Run(context.Background(), loadtest.Config{
			Target: target, Sources: sources, Workers: benchWorkers, Requests: benchRequests,
			Mix: mix, Timeout: time.Second,
		})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	run(lobbyAddr) // warm up: seats, caches, tables

	servers := []netip.AddrPort{lobbyAddr, echoAddr, batchedAddr}
	results := make([][]loadtest.Result, len(servers))
	b.ReportAllocs()
	// The machine may be shared: the order rotates, so that a load that
	// comes or goes during the run weighs on every server alike.
	for i := 0; b.Loop(); i++ {
		for j := range servers {
			k := (i + j) % len(servers)
			results[k] = append(results[k], run(servers[k]))
		}
	}
	l, e, eb := merge(results[0]), merge(results[1]), merge(results[2])
	b.ReportMetric(l.Rate, "lobby_rt/s")
	b.ReportMetric(e.Rate, "echo_rt/s")
	b.ReportMetric(eb.Rate, "batched_echo_rt/s")
	b.ReportMetric(l.Rate/e.Rate, "ratio")
	b.ReportMetric(l.Rate/eb.Rate, "ratio_batched")
	b.ReportMetric(us(l.P50), "lobby_p50_µs")
	b.ReportMetric(us(l.P99), "lobby_p99_µs")
	b.ReportMetric(us(e.P50), "echo_p50_µs")
	b.ReportMetric(us(e.P99), "echo_p99_µs")
	if l.Lost+e.Lost+eb.Lost > 0 {
		b.Logf("lost: lobby %d, echo %d, batched echo %d", l.Lost, e.Lost, eb.Lost)
	}
	b.Logf("lobby %v; echo %v; batched echo %v", l, e, eb)
}

// startEcho serves an echo server on a loopback socket until the
// benchmark ends, its replies size(request) bytes long.
func startEcho(b *testing.B, serve func(*net.UDPConn, func([]byte) int), size func([]byte) int) netip.AddrPort {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	go serve(c, size)
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// replySizes asks the lobby at addr each kind of request in mix once and
// returns the length of its answer to a request of that kind, for the
// echoes to answer as long.
func replySizes(b *testing.B, addr netip.AddrPort, mix [][]byte) func([]byte) int {
	c := dial(b, "127.0.0.1", addr)
	sizes := map[byte]int{}
	for i, req := range mix {
		typ := req[1]
		if _, ok := sizes[typ]; ok {
			continue
		}
		req = slices.Clone(req)
		packet.SetSeq(req, uint16(i))
		c.sendRaw(req)
		reply, err := udptest.Read(c.conn, c.to, 5*time.Second)
		if err != nil || reply == nil {
			b.Fatalf("no answer to %x: %v", req, err)
		}
		sizes[typ] = len(reply)
	}
	return func(req []byte) int { return sizes[req[1]] }
}

// merge sums runs: the rate over their total time, and the median of
// their percentiles (each run's distribution is of equal size).
func merge(rs []loadtest.Result) loadtest.Result {
	var out loadtest.Result
	p50s, p99s := make([]time.Duration, len(rs)), make([]time.Duration, len(rs))
	for i, r := range rs {
		out.Answered += r.Answered
		out.Lost += r.Lost
		out.Elapsed += r.Elapsed
		p50s[i], p99s[i] = r.P50, r.P99
	}
	out.Rate = float64(out.Answered) / out.Elapsed.Seconds()
	out.P50, out.P99 = median(p50s), median(p99s)
	return out
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkRetries measures the retry cache under a JOIN flood, every
// request new, so that each one looks up, records and finishes an entry:
// from 16 clients, as BenchmarkEdgeVsEcho's join row sends them, and from
// a new client every 256 requests, the cache full of endpoints. Each is
// run as a JOIN on a worker uses the cache (begin, then finish) and as
// one on its read loop does (run, the two in one hold of the lock).
func BenchmarkRetries(b *testing.B) {
	for _, clients := range []struct {
		name  string
		shift int // requests from one endpoint in a row, as a power of two
		of    int // endpoints, cycled through
	}{{"16_clients", 0, 16}, {"new_clients", 8, 1 << 24}} {
		for _, way := range []string{"begin_finish", "run"} {
			b.Run(clients.name+"/"+way, func(b *testing.B) {
				r := newRetries(DefaultConfig().RetryCache, maxAnswer, time.Minute)
				reply := make([]byte, maxAnswer)
				answer := func(b []byte) ([]byte, bool) { return append(b, reply...), true }
				now := time.Now()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					n := (i >> clients.shift) % clients.of
					from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(n >> 8), byte(n)}), uint16(9+n>>16))
					k := newRetryKey(from, packet.Header{Type: packet.JoinRoom, Seq: uint16(i)}, 5)
					var found bool
					if way == "run" {
						_, found = r.run(k, now, reply[:0], answer)
					} else if _, found = r.begin(k, now, nil); !found {
						r.finish(k, reply)
					}
					if found {
						b.Fatal("a new request found in the cache")
					}
					i++
				}
			})
		}
	}
}

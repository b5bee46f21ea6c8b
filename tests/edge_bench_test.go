package tests

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/udptest"
)

// The edge benchmarks measure the real binary from outside: `foyer serve`
// with 10 rooms and its per-source limits raised, driven by a load
// generator of its own process (lobby/internal/loadtest/loadbench), and
// the same generator against two echo servers, each a process of its own
// too: one that reads and writes a datagram per system call, and one that
// batches with recvmmsg/sendmmsg through the lobby's own code (package
// mmsg), the limit of the lobby's I/O whatever its work per datagram.
// Each echo is as long as the lobby's answer to its request (a ten-room
// ROOM_LIST is 124 bytes, its LIST 12), as the in-process benchmark's
// echoes are: the bytes a server sends are part of its I/O. The
// runs of one benchmark are interleaved, in balanced orders (runOrder),
// so that a load that comes and goes on the machine, and what one run
// leaves for the next, weigh on every server alike.
//
// Every server's CPU time is its own process's (utime + stime in
// /proc/PID/stat), read before and after each run: CPU per answered
// request compares what each spends, whoever else runs on the machine.

// edgeRun is how long each run lasts, edgeWindow and edgeSockets the
// generator's shape: 8 sockets, each keeping 16 requests outstanding.
const (
	edgeRun     = time.Second
	edgeSockets = 8
	edgeWindow  = 16
)

var loadbench struct {
	once sync.Once
	path string
	err  error
}

// loadbenchBinary builds the load generator once per test process,
// beside the binaries TestMain built (and removes).
func loadbenchBinary(b *testing.B) string {
	b.Helper()
	loadbench.once.Do(func() {
		loadbench.path = filepath.Join(filepath.Dir(bin), "loadbench")
		cmd := exec.Command("go", "build", "-o", loadbench.path, "../lobby/internal/loadtest/loadbench")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			loadbench.err = fmt.Errorf("building loadbench: %v\n%s", err, out)
		}
	})
	if loadbench.err != nil {
		b.Fatal(loadbench.err)
	}
	return loadbench.path
}

// target is a server under load: where it listens and the process whose
// CPU time it spends.
type target struct {
	name string
	addr netip.AddrPort
	pid  int
}

// startEchoServer runs `loadbench echo` (under wrap, when set) until the
// benchmark ends, its echoes as long as lengths says by the request's
// type (see replyLengths).
func startEchoServer(b *testing.B, batched bool, lengths map[byte]int, wrap ...string) target {
	b.Helper()
	t := target{name: "echo"}
	args := append(slices.Clone(wrap), loadbenchBinary(b), "echo")
	if batched {
		t.name = "batched_echo"
		args = append(args, "-batched")
	}
	for typ, n := range lengths {
		args = append(args, "-size", fmt.Sprintf("%x=%d", typ, n))
	}
	cmd := exec.Command(args[0], args[1:]...)
	stdin, err := cmd.StdinPipe() // closing it ends the server
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s: %v", t.name, err)
	}
	if t.addr, err = netip.ParseAddrPort(strings.TrimSpace(line)); err != nil {
		b.Fatalf("%s said %q: %v", t.name, line, err)
	}
	t.pid = cmd.Process.Pid
	return t
}

// loadResult is what loadbench prints of a run (loadtest.WindowResult).
type loadResult struct {
	Answered, Lost int
	Elapsed        time.Duration
	P50, P99       time.Duration
	Types          map[uint8]int
}

// loadRun is what one run of the generator against one server measured.
type loadRun struct {
	res       loadResult
	cpu, user time.Duration // the server's, all and in user space
	gen       time.Duration // the generator's, all of it
}

// shape is what the generator sends: from one socket per source, each
// keeping window requests of mix outstanding, run under wrap (e.g.
// taskset) when it is set.
type shape struct {
	sources []netip.AddrPort
	window  int
	mix     [][]byte
	wrap    []string
}

// load runs the generator against t once, for edgeRun.
func load(b *testing.B, t target, sh shape) loadRun {
	b.Helper()
	args := append(slices.Clone(sh.wrap), loadbenchBinary(b), "load", "-target", t.addr.String(),
		"-window", fmt.Sprint(sh.window), "-duration", edgeRun.String(), "-sources", joinAddrs(sh.sources))
	for _, m := range sh.mix {
		args = append(args, "-request", hex.EncodeToString(m))
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	before, userBefore := cpuTime(b, t.pid)
	out, err := cmd.Output()
	after, userAfter := cpuTime(b, t.pid)
	if err != nil {
		b.Fatalf("loadbench against %s: %v", t.name, err)
	}
	var r loadRun
	if err := json.Unmarshal(out, &r.res); err != nil {
		b.Fatalf("loadbench said %q: %v", out, err)
	}
	r.cpu, r.user = after-before, userAfter-userBefore
	r.gen = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r
}

func joinAddrs(as []netip.AddrPort) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time process pid has spent so far, all of it and
// the part in user space.
func cpuTime(b *testing.B, pid int) (all, user time.Duration) {
	b.Helper()
	st, err := proc.ReadStat(pid)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(st.UTime+st.STime) * clockTick, time.Duration(st.UTime) * clockTick
}

// loadTotal is the runs against one server, summed, and each of them.
type loadTotal struct {
	answered, lost int
	elapsed, cpu   time.Duration
	user, gen      time.Duration
	types          map[uint8]int
	runs           []loadRun
}

func (t *loadTotal) add(r loadRun) {
	t.runs = append(t.runs, r)
	t.answered += r.res.Answered
	t.lost += r.res.Lost
	t.elapsed += r.res.Elapsed
	t.cpu += r.cpu
	t.user += r.user
	t.gen += r.gen
	if t.types == nil {
		t.types = map[uint8]int{}
	}
	for k, n := range r.res.Types {
		t.types[k] += n
	}
}

func (t *loadTotal) rate() float64 { return float64(t.answered) / t.elapsed.Seconds() }

// cpuPerRequest is the server's CPU time per answered request, in µs.
func (t *loadTotal) cpuPerRequest() float64 { return t.perRequest(t.cpu) }

// userPerRequest is cpuPerRequest's part in user space: the server's own
// work, where the rest is the kernel's.
func (t *loadTotal) userPerRequest() float64 { return t.perRequest(t.user) }

// genPerRequest is the load generator's CPU time per answered request, in
// µs: on a machine the generator shares with the server, what it spends
// per request bounds the rate as much as what the server spends.
func (t *loadTotal) genPerRequest() float64 { return t.perRequest(t.gen) }

// perRequest is d per answered request, in µs.
func (t *loadTotal) perRequest(d time.Duration) float64 {
	return float64(d) / float64(time.Microsecond) / float64(max(t.answered, 1))
}

// median is the median over the runs of what of says of each (a
// percentile of its latencies), in µs.
func (t *loadTotal) median(of func(loadResult) time.Duration) float64 {
	ds := make([]time.Duration, len(t.runs))
	for i, r := range t.runs {
		ds[i] = of(r.res)
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Microsecond)
}

func runP50(r loadResult) time.Duration { return r.P50 }
func runP99(r loadResult) time.Duration { return r.P99 }

// minRounds is how many rounds one iteration of an edge benchmark runs
// at least: a round's ratios stray by a tenth or more (a load that comes
// and goes on a shared machine), and `make bench`, at one iteration,
// must report figures that hold from one run to the next.
const minRounds = 6

// roundsPerOp is how many rounds one iteration runs for n targets: whole
// periods of runOrder, at least minRounds, so that each iteration is
// balanced on its own.
func roundsPerOp(n int) int {
	p := orderPeriod(n)
	return (minRounds + p - 1) / p * p
}

// interleave runs the generator against each target once per round, in
// the orders of runOrder, roundsPerOp rounds per b.Loop iteration, each
// target with its shape (shapes[i], or the one shape for all), and
// returns the totals by target.
func interleave(b *testing.B, targets []target, shapes ...shape) []loadTotal {
	b.Helper()
	if len(shapes) == 1 {
		shapes = slices.Repeat(shapes, len(targets))
	}
	for i, t := range targets { // warm up: seats, caches, tables
		load(b, t, shapes[i])
	}
	totals := make([]loadTotal, len(targets))
	for round := 0; b.Loop(); {
		for range roundsPerOp(len(targets)) {
			for _, k := range runOrder(len(targets), round) {
				totals[k].add(load(b, targets[k], shapes[k]))
			}
			round++
		}
	}
	for i, t := range targets {
		b.Logf("%s: %.0f req/s, %.2f µs CPU/req (the generator's %.2f), p50 %.0f µs, p99 %.0f µs, %d lost, replies by type %v",
			t.name, totals[i].rate(), totals[i].cpuPerRequest(), totals[i].genPerRequest(), totals[i].median(runP50),
			totals[i].median(runP99), totals[i].lost, totals[i].types)
	}
	return totals
}

// orderPeriod is how many rounds runOrder takes to balance n targets: n,
// or 2n for an odd n.
func orderPeriod(n int) int {
	if n%2 == 1 {
		return 2 * n
	}
	return n
}

// runOrder is the order in which round i runs n targets: the rows of a
// Williams square, in turn. Each target runs first, last and in every
// place equally often, and runs right after each of the others equally
// often over orderPeriod(n) rounds: what a run leaves behind (sockets
// draining, caches, a server's own work after its load) weighs on every
// target alike. Rotating one order would have each target always follow
// the same one.
func runOrder(n, i int) []int {
	// The first row: 0, 1, n-1, 2, n-2, ...; row r adds r to each.
	first := make([]int, n)
	for j := 1; j < n; j++ {
		if j%2 == 1 {
			first[j] = (j + 1) / 2
		} else {
			first[j] = n - j/2
		}
	}
	r := i % n
	order := make([]int, n)
	for j, t := range first {
		order[j] = (t + r) % n
	}
	if n%2 == 1 && i/n%2 == 1 { // an odd square balances with its mirror
		slices.Reverse(order)
	}
	return order
}

// edgeLobby starts `foyer serve` at info level (under wrap, when set)
// with limits that let the generator through, and rooms rooms its players
// need not come to; it returns the lobby as a target and its rooms' ids.
func edgeLobby(b *testing.B, name, lobbyExtra string, rooms int, wrap ...string) (target, []uint32) {
	b.Helper()
	return edgeLobbyOf(b, bin, name, lobbyExtra, rooms, wrap...)
}

// edgeLobbyOf is edgeLobby running binary.
func edgeLobbyOf(b *testing.B, binary, name, lobbyExtra string, rooms int, wrap ...string) (target, []uint32) {
	b.Helper()
	s := startServerBinary(b, binary, "info", `rate = 100000000
burst = 1000000
create_rate = 1000
create_burst = 1000
create_network_rate = 1000
create_network_burst = 1000
admit_rate = 100000000
admit_burst = 16000000
reflection_limit = "1GiB"
`+lobbyExtra, `max_players = 32
seat_ttl = "1h"
max_waiting = "1h"
[room]
idle_timeout = "1h"
`, wrap...)
	c := newClient(b, "127.0.0.1", s.lobby)
	ids := make([]uint32, rooms)
	for i := range ids {
		ids[i], _ = c.request(compact, createRoom, uint16(i+1), nil).roomPort(b)
	}
	return target{name: name, addr: s.lobby, pid: s.cmd.Process.Pid}, ids
}

// edgeRows are the two loads of the edge benchmarks: LIST from 8
// sockets on 127.0.0.1, 16 outstanding on each; JOIN of the rooms ids in
// turn from 16 sockets on 16 source addresses, 8 outstanding on each,
// every one answered JOIN_SUCCESS from the seat its source holds. The
// JOINs' sources keep their ports from run to run. The generator runs
// where pl puts it.
func edgeRows(b *testing.B, ids []uint32, pl placement) []edgeRow {
	var joins [][]byte
	for _, id := range ids {
		joins = append(joins, encode(compact, joinRoom, 0, 0, joinPayload(id)))
	}
	return []edgeRow{
		{"list", shape{sources: loopbackSockets(edgeSockets), window: edgeWindow, mix: [][]byte{encode(compact, listRooms, 0, 0, nil)},
			wrap: pl.generator}, roomList},
		{"join", shape{sources: loopbackSources(b, 16), window: edgeSockets * edgeWindow / 16, mix: joins,
			wrap: pl.generator}, joinSuccess},
	}
}

// edgeRow is one load and the reply every request of it gets.
type edgeRow struct {
	name  string
	shape shape
	reply uint8
}

// check fails the benchmark unless every answer of the lobby's totals
// (tot) is the row's reply.
func (row edgeRow) check(b *testing.B, name string, tot loadTotal) {
	if n := tot.types[row.reply]; n != tot.answered || n == 0 {
		b.Fatalf("%d of %s's %d answers are %#x: %v", n, name, tot.answered, row.reply, tot.types)
	}
}

// placement is where an edge benchmark's processes run: the servers
// under servers and the generator under generator (taskset), or, with
// both empty, wherever the kernel puts them.
type placement struct {
	name               string
	servers, generator []string
}

// placements are the edge benchmarks' two: unpinned, every process free
// to run on any core; and pinned (machines of 2 cores or more), the
// generator on core 0 and the servers on the others, so that neither
// takes the other's core or caches and each server is measured on cores
// of its own.
func placements() []placement {
	ps := []placement{{name: "unpinned"}}
	if cpus := runtime.NumCPU(); cpus >= 2 {
		ps = append(ps, placement{name: "pinned",
			servers:   []string{"taskset", "-c", fmt.Sprintf("1-%d", cpus-1)},
			generator: []string{"taskset", "-c", "0"}})
	}
	return ps
}

// BenchmarkEdgeVsEcho is the native edge at the socket's limit, measured
// from outside: the real binary with 10 rooms and one reader, as the echo
// servers have (BenchmarkReaders measures more), against the two echo
// servers, on the same sockets and window, in the same run: all four
// unpinned, and then pinned, in processes of their own (see placements).
// The generator spends more CPU per request than a server (_gen_, below),
// so on 2 cores, unpinned, where its threads and a server's take turns on
// both cores, the rates say as much of how the kernel places them as of
// the server; pinned, each server has a core the generator does not use.
//
// Rows:
//   - list: LIST from 8 sockets on 127.0.0.1, 16 outstanding on each
//     (target: 0.95 of the batched echo's rate);
//   - join: JOIN of the 10 rooms in turn from 16 sockets on 16 source
//     addresses, 8 outstanding on each, every one answered JOIN_SUCCESS
//     from the seat its source holds (target: 0.9).
//
// Metrics: each server's req/s, the ratios of the lobby's rate to each
// echo's, each one's CPU per answered request and the ratio of the
// lobby's to the batched echo's (target: at most 1.1), and the part of
// the lobby's and the batched echo's CPU spent in user space, their own
// work (the rest is the kernel's, mostly receiving and sending), and
// the load generator's CPU per request in the lobby's runs and the
// batched echo's (_gen_): on a 2-core machine the generator spends about
// twice what a server does, on the cores the server uses too, so what it
// spends bounds the rates as much. The
// two ratios to the batched echo come also as the lowest and highest of
// a single round's (_min, _max): how far one round strays from the
// totals, what a run's figures can be trusted to.
//
// With FOYER_BENCH_BASELINE set to the path of another build's foyer
// binary (one that knows the readers key), that build runs too, with one
// reader as well, as a fourth server, and its ratios are reported next to
// these: before and after a change, in one run.
func BenchmarkEdgeVsEcho(b *testing.B) {
	for _, pl := range placements() {
		b.Run(pl.name, func(b *testing.B) { edgeVsEcho(b, pl) })
	}
}

// edgeVsEcho is BenchmarkEdgeVsEcho placed as pl says.
func edgeVsEcho(b *testing.B, pl placement) {
	lobby, ids := edgeLobby(b, "lobby", "readers = 1\n", 10, pl.servers...)
	rows := edgeRows(b, ids, pl)
	lengths, types := replyLengths(b, lobby, rows)
	for _, row := range rows {
		if typ := types[row.shape.mix[0][1]]; typ != row.reply {
			b.Fatalf("the lobby answered %s with %#x, not %#x", row.name, typ, row.reply)
		}
	}
	targets := []target{lobby, startEchoServer(b, false, lengths, pl.servers...), startEchoServer(b, true, lengths, pl.servers...)}
	for _, echo := range targets[1:] {
		if got, _ := replyLengths(b, echo, rows); !maps.Equal(got, lengths) {
			b.Fatalf("%s answers %v bytes by request type, the lobby %v", echo.name, got, lengths)
		}
	}
	var baseRows []edgeRow
	if path := os.Getenv("FOYER_BENCH_BASELINE"); path != "" {
		base, baseIDs := edgeLobbyOf(b, path, "baseline", "readers = 1\n", 10, pl.servers...)
		targets = append(targets, base)
		baseRows = edgeRows(b, baseIDs, pl)
	}
	for i, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			shapes := []shape{row.shape, row.shape, row.shape}
			if baseRows != nil {
				shapes = append(shapes, baseRows[i].shape)
			}
			tot := interleave(b, targets, shapes...)
			row.check(b, lobby.name, tot[0])
			reportEdge(b, "", tot[0], tot[1], tot[2])
			if baseRows != nil {
				row.check(b, "the baseline", tot[3])
				reportEdge(b, "baseline_", tot[3], tot[1], tot[2])
			}
		})
	}
}

// replyLengths asks t each row's first request once, from a socket of
// its own, and returns the length of the answer by the request's type
// (its second byte), and the answers' own types by the same.
func replyLengths(b *testing.B, t target, rows []edgeRow) (lengths map[byte]int, types map[byte]byte) {
	b.Helper()
	c := newClient(b, "127.0.0.1", t.addr)
	lengths, types = map[byte]int{}, map[byte]byte{}
	for _, row := range rows {
		req := row.shape.mix[0]
		c.send(req)
		got, err := udptest.Read(c.conn, c.to, 5*time.Second)
		if err != nil || len(got) < 2 {
			b.Fatalf("%s: no answer to %x: %v", t.name, req, err)
		}
		lengths[req[1]], types[req[1]] = len(got), got[1]
	}
	return lengths, types
}

// loopbackSources returns n addresses of 127.1.0.0/24, each with a port
// free a moment ago: the same endpoints for every run, so that a JOIN
// refreshes the seat its endpoint holds rather than taking a new one.
func loopbackSources(b *testing.B, n int) []netip.AddrPort {
	out := make([]netip.AddrPort, n)
	for i := range out {
		c := udptest.Listen(b, netip.AddrFrom4([4]byte{127, 1, 0, byte(i + 1)}).String())
		out[i] = c.LocalAddr().(*net.UDPAddr).AddrPort()
		c.Close()
	}
	return out
}

// loopbackSockets returns n sockets' sources on 127.0.0.1, ports picked
// by each run.
func loopbackSockets(n int) []netip.AddrPort {
	return slices.Repeat([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, n)
}

// reportEdge reports a lobby's (l) rate and CPU against the echo's (e)
// and the batched echo's (eb), its metrics' names prefixed with prefix:
// the ratios of the totals, and the lowest and highest of each round's
// (see roundRatios), which show how far one round strays.
func reportEdge(b *testing.B, prefix string, l, e, eb loadTotal) {
	rate, cpu := roundRatios(l, eb)
	b.ReportMetric(l.rate(), prefix+"lobby_req/s")
	b.ReportMetric(l.rate()/e.rate(), prefix+"ratio_echo")
	b.ReportMetric(l.rate()/eb.rate(), prefix+"ratio_batched")
	b.ReportMetric(slices.Min(rate), prefix+"ratio_batched_min")
	b.ReportMetric(slices.Max(rate), prefix+"ratio_batched_max")
	b.ReportMetric(l.cpuPerRequest(), prefix+"lobby_cpu_µs/req")
	b.ReportMetric(l.cpuPerRequest()/eb.cpuPerRequest(), prefix+"cpu_ratio")
	b.ReportMetric(slices.Min(cpu), prefix+"cpu_ratio_min")
	b.ReportMetric(slices.Max(cpu), prefix+"cpu_ratio_max")
	b.ReportMetric(l.userPerRequest(), prefix+"lobby_user_µs/req")
	b.ReportMetric(l.genPerRequest(), prefix+"lobby_gen_µs/req")
	b.ReportMetric(l.median(runP99), prefix+"lobby_p99_µs")
	if prefix == "" {
		b.ReportMetric(e.rate(), "echo_req/s")
		b.ReportMetric(eb.rate(), "batched_req/s")
		b.ReportMetric(eb.cpuPerRequest(), "batched_cpu_µs/req")
		b.ReportMetric(eb.userPerRequest(), "batched_user_µs/req")
		b.ReportMetric(eb.genPerRequest(), "batched_gen_µs/req")
	}
}

// roundRatios are, for each round, the ratio of l's rate to eb's and of
// l's CPU per request to eb's, the two runs of the round set against
// each other. A round's CPU times count in ticks of 10 ms (clockTick):
// a run of a second at half a core is about 50 of them, so a round's CPU
// ratio is good to a few hundredths, the totals' to a few thousandths.
func roundRatios(l, eb loadTotal) (rate, cpu []float64) {
	for i := range min(len(l.runs), len(eb.runs)) {
		var lr, er loadTotal
		lr.add(l.runs[i])
		er.add(eb.runs[i])
		rate = append(rate, lr.rate()/er.rate())
		cpu = append(cpu, lr.cpuPerRequest()/er.cpuPerRequest())
	}
	return rate, cpu
}

// BenchmarkReaders is the native edge with one reader and with one per
// core, interleaved in one run: two lobbies of the real binary, 10 rooms
// each, `readers = 1` and `readers = N`, N the machine's cores (at least
// 2), under the edge benchmarks' loads.
//
// Rows: the two placements (see placements). Pinned, N readers run on
// N-1 cores: on a 2-core machine two readers share the one core, where
// they must cost nothing.
//
// Metrics: each lobby's req/s and CPU per request, and the ratio of N
// readers' rate to one's.
func BenchmarkReaders(b *testing.B) {
	n := max(runtime.NumCPU(), 2)
	for _, pl := range placements() {
		b.Run(pl.name, func(b *testing.B) {
			one, ids := edgeLobby(b, "1 reader", "readers = 1\n", 10, pl.servers...)
			many, manyIDs := edgeLobby(b, fmt.Sprintf("%d readers", n), fmt.Sprintf("readers = %d\n", n), 10, pl.servers...)
			rows, manyRows := edgeRows(b, ids, pl), edgeRows(b, manyIDs, pl)
			for i, row := range rows {
				b.Run(row.name, func(b *testing.B) {
					// Each lobby is asked for its own rooms.
					tot := interleave(b, []target{one, many}, row.shape, manyRows[i].shape)
					row.check(b, one.name, tot[0])
					row.check(b, many.name, tot[1])
					b.ReportMetric(tot[0].rate(), "1reader_req/s")
					b.ReportMetric(tot[1].rate(), "Nreaders_req/s")
					b.ReportMetric(tot[1].rate()/tot[0].rate(), "ratio")
					b.ReportMetric(tot[0].cpuPerRequest(), "1reader_cpu_µs/req")
					b.ReportMetric(tot[1].cpuPerRequest(), "Nreaders_cpu_µs/req")
				})
			}
		})
	}
}

// floodRamp is how long a flood runs before the load it is measured
// against starts.
const floodRamp = 100 * time.Millisecond

// startFlood runs `loadbench flood` against t with datagram, one thread
// sending as fast as it can (a core's worth), until stop, which returns
// how many datagrams it sent.
func startFlood(b *testing.B, t target, datagram []byte) (stop func() int) {
	b.Helper()
	cmd := exec.Command(loadbenchBinary(b), "flood", "-target", t.addr.String(), "-datagram", hex.EncodeToString(datagram))
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // closing it ends the flood
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(floodRamp) // at full speed before the load starts
	return func() int {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("flood: %v", err)
		}
		var n int
		if _, err := fmt.Sscan(out.String(), &n); err != nil {
			b.Fatalf("flood said %q: %v", out.String(), err)
		}
		return n
	}
}

// BenchmarkFilterUnderMalformedFlood is the native edge's socket filter
// at work: LIST from 2 sockets, 4 outstanding on each, while one thread
// floods the lobby with malformed datagrams (a LIST a byte longer than
// its payloadSize says), against two lobbies of the real binary with one
// reader each, one with socket_filter and one without, interleaved in one
// run.
//
// Metrics: each lobby's answered share of the LISTs (answered over sent,
// a LIST unanswered in 200 ms being lost), the filtered lobby's share
// and LIST rate over the unfiltered one's, each one's LIST rate and CPU
// per answered LIST, and the flood's rate.
func BenchmarkFilterUnderMalformedFlood(b *testing.B) {
	on, _ := edgeLobby(b, "filtered", "readers = 1\n", 1)
	off, _ := edgeLobby(b, "unfiltered", "readers = 1\nsocket_filter = false\n", 1)
	targets := []target{on, off}
	list := encode(compact, listRooms, 0, 0, nil)
	junk := append(slices.Clone(list), 0)
	sh := shape{sources: loopbackSockets(2), window: 4, mix: [][]byte{list}}
	totals := make([]loadTotal, len(targets))
	var flooded int
	var flooding time.Duration
	for i := 0; b.Loop(); i++ {
		for j := range targets {
			k := (i + j) % len(targets)
			stop := startFlood(b, targets[k], junk)
			start := time.Now()
			totals[k].add(load(b, targets[k], sh))
			flooded += stop()
			flooding += time.Since(start) + floodRamp
		}
	}
	share := func(t loadTotal) float64 { return float64(t.answered) / float64(max(t.answered+t.lost, 1)) }
	for i, t := range targets {
		b.Logf("%s: %.3f of LISTs answered, %.0f LIST/s, %.2f µs CPU per answered LIST", t.name, share(totals[i]), totals[i].rate(), totals[i].cpuPerRequest())
		b.ReportMetric(share(totals[i]), t.name+"_answered_share")
		b.ReportMetric(totals[i].rate(), t.name+"_list/s")
		b.ReportMetric(totals[i].cpuPerRequest(), t.name+"_cpu_µs/list")
	}
	b.ReportMetric(share(totals[0])/max(share(totals[1]), 1e-9), "share_ratio")
	b.ReportMetric(totals[0].rate()/max(totals[1].rate(), 1e-9), "rate_ratio")
	b.ReportMetric(float64(flooded)/flooding.Seconds(), "flood_datagrams/s")
}

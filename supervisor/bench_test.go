package supervisor

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/requiretest"
)

// benchSupervisor runs reference rooms, as a lobby does by default, with
// an empty timeout long enough that no room ends during a benchmark.
func benchSupervisor(b *testing.B, rooms int, tune func(*Config)) *Supervisor {
	b.Helper()
	s, _ := newTest(b, "refroom", rooms, func(c *Config) {
		c.PortCooldown = time.Millisecond
		c.EmptyTimeout = 10 * time.Minute
		if tune != nil {
			tune(c)
		}
	})
	return s
}

// created is where the time of one Create went.
type created struct {
	total  time.Duration // the whole Create
	spawn  time.Duration // the spawn, if cold (zero if warm): the rest is the hand-out
	phases spawnPhases   // the spawn's, if cold
	// ready is until the room's game was ready, for a room handed out
	// while its instance started (zero otherwise).
	ready time.Duration
}

// createAndDiscard creates a room, returning how long Create took, then
// kills it and waits for the reap so the next iteration starts alike.
func createAndDiscard(b *testing.B, s *Supervisor) created {
	b.Helper()
	st := s.Stats()
	reaped, warm := st.Reaped["crashed"], st.WarmHits
	t0 := time.Now()
	r, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999))
	c := created{total: time.Since(t0)}
	if err != nil {
		b.Fatal(err)
	}
	s.mu.Lock()
	rec := s.live[r.ID]
	if rec != nil && s.stats.WarmHits == warm {
		c.spawn, c.phases = rec.spawnTime, rec.phases
	}
	s.mu.Unlock()
	if rec != nil && rec.bootDone != nil {
		if err := rec.proc.Err(); err != nil {
			b.Fatal(err)
		}
		c.ready = time.Since(t0)
		ph := rec.proc.Phases()
		c.phases.launch, c.phases.ready = ph, ph.Ready
	}
	syscall.Kill(r.PID, syscall.SIGKILL)
	for s.Stats().Reaped["crashed"] == reaped {
		time.Sleep(100 * time.Microsecond)
	}
	return c
}

// reportCreates reports the p50 and p99 of the creates cs and, for cold
// ones, the p50 of each phase of their spawns, and of the hand-out after
// it (the table, the creator's seat, the instance told so), in
// milliseconds.
func reportCreates(b *testing.B, cs []created) {
	var total []time.Duration
	var phases [7][]time.Duration
	for _, c := range cs {
		total = append(total, c.total)
		l := c.phases.launch
		for i, d := range []time.Duration{c.phases.prep, l.Fork, l.Boot, l.Dial, l.Watch, c.phases.ready, c.total - c.spawn} {
			phases[i] = append(phases[i], d)
		}
	}
	reportPercentiles(b, "create", total)
	if cs[0].spawn == 0 {
		return // warm
	}
	if cs[0].ready > 0 {
		var ready []time.Duration
		for _, c := range cs {
			ready = append(ready, c.ready)
		}
		reportPercentiles(b, "room-ready", ready)
	}
	for i, name := range []string{"prep", "fork", "boot", "dial", "watch", "ready", "handout"} {
		slices.Sort(phases[i])
		b.ReportMetric(float64(phases[i][len(phases[i])/2].Microseconds())/1000, name+"-p50-ms")
	}
}

// reportPercentiles reports the p50 and p99 of ds in milliseconds.
func reportPercentiles(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	pct := func(p int) float64 { return float64(ds[(len(ds)-1)*p/100].Microseconds()) / 1000 }
	b.ReportMetric(pct(50), name+"-p50-ms")
	b.ReportMetric(pct(99), name+"-p99-ms")
}

// BenchmarkColdCreate measures Create from request to a room handed out,
// with no warm pool: in cgroups of its own with every limit set (where
// the host has cgroups), and without cgroups; each with the port bound
// by the supervisor and passed to the instance (passed: the room is
// handed out while its instance starts, and room-ready is until its game
// is ready) and bound by the instance (bound: Create waits for the game).
func BenchmarkColdCreate(b *testing.B) {
	for _, mode := range containModes {
		for _, pass := range []bool{true, false} {
			name := mode.name + "/passed"
			if !pass {
				name = mode.name + "/bound"
			}
			b.Run(name, func(b *testing.B) {
				if !mode.noCgroups {
					requiretest.Cgroups(b)
				}
				s := benchSupervisor(b, 8, func(c *Config) {
					c.NoCgroups, c.PassSocket = mode.noCgroups, pass
					if !mode.noCgroups {
						c.Limits = cgroup.Limits{MemoryMax: 256 << 20, CPUMax: 0.5, PidsMax: 64}
					}
				})
				// The supervisor hands a room out while its instance
				// starts once its program has started: the first create
				// waits.
				createAndDiscard(b, s)
				var cs []created
				for b.Loop() {
					cs = append(cs, createAndDiscard(b, s))
				}
				reportCreates(b, cs)
			})
		}
	}
}

// BenchmarkCPUMax runs a busy loop in a room and reports the share of a
// core the room used: about 0.2 with cpu_max 0.2, about 1 without.
func BenchmarkCPUMax(b *testing.B) {
	requiretest.Cgroups(b) // the room's CPU time is its cgroup's
	for _, max := range []float64{0.2, 0} {
		name := "unlimited"
		if max > 0 {
			name = fmt.Sprintf("cpu_max=%v", max)
		}
		b.Run(name, func(b *testing.B) {
			s, _ := newExec(b, []string{"/bin/sh", "-c", "while :; do :; done & exec sleep 1000 {port}"}, "none", func(c *Config) {
				c.Limits.CPUMax = max
			})
			r, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999))
			if err != nil {
				b.Fatal(err)
			}
			u0, t0 := s.Usage()[r.ID], time.Now()
			for b.Loop() {
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(usageTTL) // past Usage's cache
			u1 := s.Usage()[r.ID]
			if !u0.CPUKnown || !u1.CPUKnown {
				b.Fatal("no CPU time")
			}
			b.ReportMetric((u1.CPU-u0.CPU).Seconds()/time.Since(t0).Seconds(), "cores")
		})
	}
}

// BenchmarkWarmCreate measures Create answered from the warm pool; the
// refill happens between iterations, outside the measured call.
func BenchmarkWarmCreate(b *testing.B) {
	s := benchSupervisor(b, 8, func(c *Config) { c.Warm = 1 })
	var cs []created
	for b.Loop() {
		for s.Stats().Warm == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		cs = append(cs, createAndDiscard(b, s))
	}
	if s.Stats().WarmHits != uint64(len(cs)) {
		b.Fatalf("%d of %d creates were warm", s.Stats().WarmHits, len(cs))
	}
	reportCreates(b, cs)
}

// BenchmarkIdleRooms reports the supervisor's own CPU time, in percent of
// one core, while 200 reference rooms sit idle and heartbeat.
func BenchmarkIdleRooms(b *testing.B) {
	const rooms = 200
	s := benchSupervisor(b, rooms, nil)
	reportIdleCPU(b, s, rooms)
}

// reportIdleCPU creates n rooms on s, lets them idle, and reports this
// process's CPU time over 3 s windows in percent of one core.
func reportIdleCPU(b *testing.B, s *Supervisor, n int) {
	createN(b, s, n)
	time.Sleep(time.Second) // let start-up work settle
	var cpu, wall time.Duration
	for b.Loop() {
		c0, w0 := cpuTime(b), time.Now()
		time.Sleep(3 * time.Second)
		cpu += cpuTime(b) - c0
		wall += time.Since(w0)
	}
	if got := len(s.Table().List().Rooms); got != n {
		b.Fatalf("%d rooms left of %d", got, n)
	}
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
}

// cpuTime is this process's user plus system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleProbedRooms reports the supervisor's own CPU time, in
// percent of one core, while the exec driver probes 200 idle foreign
// servers (the test's Teeworlds-info server) once a second each.
func BenchmarkIdleProbedRooms(b *testing.B) {
	const rooms = 200
	s, _ := newTest(b, "", rooms, func(c *Config) {
		c.Command, c.Probe = []string{testroomBin, "tee", "{port}", "8"}, "teeworlds"
	})
	reportIdleCPU(b, s, rooms)
}

// BenchmarkExecCreateDDNet measures Create from request to a DDNet-Server
// answering its first info request on the room's port.
func BenchmarkExecCreateDDNet(b *testing.B) {
	s, _ := newExec(b, ddnetCommand(b), "teeworlds", func(c *Config) { c.PortCooldown = time.Millisecond })
	var cs []created
	for b.Loop() {
		cs = append(cs, createAndDiscard(b, s))
	}
	reportCreates(b, cs)
}

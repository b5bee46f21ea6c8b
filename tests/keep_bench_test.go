package tests

import (
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStartWith200AdoptedRooms measures a lobby's start, from its
// exec to its first ROOM_LIST, when it adopts 200 rooms left running by
// one killed with SIGKILL (ms/op; the target is under 1 s).
func BenchmarkStartWith200AdoptedRooms(b *testing.B) {
	const rooms = 200
	l := newKeptLobby(b, keptSettings{grace: 5 * time.Minute, match: time.Hour, ports: rooms, lobbyKeys: keptCreatesUnlimited})
	var wg sync.WaitGroup
	for w := range 8 { // rooms are created from 8 clients at once
		c := newClient(b, "127.0.0.1", l.lobby)
		wg.Go(func() {
			for i := w; i < rooms; i += 8 {
				if r, err := c.exchange(compact, createRoom, uint16(i+1), nil); err != nil || r.typ != roomCreated {
					b.Errorf("CREATE %d: %#x, %v", i, r.typ, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	c := newClient(b, "127.0.0.1", l.lobby)
	seq := uint16(1)
	var total time.Duration
	for b.Loop() {
		l.kill9()
		t0 := time.Now()
		l.start()
		for ; ; seq++ {
			r, err := c.exchange(compact, listRooms, seq, nil)
			if err == nil && len(r.rooms(b)) == rooms {
				break
			}
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-list")
}

// BenchmarkUpgradeListLatency measures the LIST answers of a steady load
// from 4 sockets across a SIGHUP upgrade of a lobby with 20 rooms: the
// 99th percentile latency before the upgrade and during it (from the
// SIGHUP to the old process's exit), the longest answer during it, and the
// requests never answered (the target is none).
func BenchmarkUpgradeListLatency(b *testing.B) {
	l := newKeptLobby(b, keptSettings{grace: 5 * time.Minute, match: time.Hour, ports: 20, lobbyKeys: keptCreatesUnlimited})
	c := newClient(b, "127.0.0.1", l.lobby)
	for i := range 20 {
		c.request(compact, createRoom, uint16(i+1), nil)
	}
	var before, during []time.Duration
	var unanswered int
	var took time.Duration
	for b.Loop() {
		load := startListLoad(b, l.lobby, 4, "127.0.0.1")
		time.Sleep(time.Second)
		old := l.current()
		hup := time.Now()
		syscall.Kill(old, syscall.SIGHUP)
		l.awaitReady(0, nil)
		if err := l.awaitExit(old); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		time.Sleep(500 * time.Millisecond)
		_, lost := load.finish()
		unanswered += lost
		took += done.Sub(hup)
		for _, s := range load.latencies {
			if s.at.Before(hup) {
				before = append(before, s.latency)
			} else if s.at.Before(done) {
				during = append(during, s.latency)
			}
		}
	}
	b.ReportMetric(p99(before), "p99-before-µs")
	b.ReportMetric(p99(during), "p99-upgrade-µs")
	b.ReportMetric(float64(maxOf(during).Microseconds()), "max-upgrade-µs")
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "upgrade-ms")
	b.ReportMetric(float64(unanswered), "unanswered")
}

// p99 is the 99th percentile of d, in microseconds.
func p99(d []time.Duration) float64 { return percentile(d, 99) }

// percentile is the pth percentile of d, in microseconds.
func percentile(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[len(d)*p/100].Microseconds())
}

func maxOf(d []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return m
}

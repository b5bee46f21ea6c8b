package cluster

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// serveLobby runs a native lobby over rooms on loopback, with limits out
// of the way, and returns its address.
func serveLobby(b *testing.B, rooms room.Table) string {
	cfg := lobby.DefaultConfig()
	cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	lim := limit.DefaultConfig()
	lim.Rate, lim.Burst, lim.ReflectionLimit = math.MaxInt32, math.MaxInt32, math.MaxInt32
	l, err := lobby.New(cfg, rooms, limit.NewGuard(lim), zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Serve(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return l.Addrs()[0].String()
}

// listRound sends lists LISTs from each of 4 clients at once and returns
// how long they took.
func listRound(b *testing.B, clients []*client.Client, lists, want int) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for range lists {
				rooms, err := c.List(context.Background())
				if err != nil || len(rooms) != want {
					b.Errorf("LIST: %d rooms, %v; want %d", len(rooms), err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

func dialAll(b *testing.B, addr string, n int) []*client.Client {
	var out []*client.Client
	for range n {
		c, err := client.Dial(addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		out = append(out, c)
	}
	return out
}

// BenchmarkListClusterVsStandalone: LIST at a lobby whose table is a
// three-host cluster (10 rooms on each host) against a standalone lobby
// with the same 30 rooms in memory, in turn in the same run, 4 clients
// at once over loopback. Metric: the cluster's LIST rate over the
// standalone one's (target: 0.95 or more).
func BenchmarkListClusterVsStandalone(b *testing.B) {
	_, _, url := natsServer(b)
	alone := roomtabletest.New(b, roomtable.Config{})
	fill(alone, 30)
	var a *Cluster
	for _, name := range []string{"a", "b", "c"} {
		c, l := join(b, testConfig(url, name, public), 0)
		fill(l, 10)
		if a == nil {
			a = c
		}
	}
	eventually(b, "30 rooms at a", func() bool { return len(a.List().Rooms) == 30 })
	standalone := dialAll(b, serveLobby(b, alone), 4)
	clustered := dialAll(b, serveLobby(b, a), 4)
	const lists = 500
	var tAlone, tCluster time.Duration
	for b.Loop() {
		tAlone += listRound(b, standalone, lists, 30)
		tCluster += listRound(b, clustered, lists, 30)
	}
	n := float64(b.N * 4 * lists)
	b.ReportMetric(n/tAlone.Seconds(), "standalone-lists/s")
	b.ReportMetric(n/tCluster.Seconds(), "cluster-lists/s")
	b.ReportMetric(tAlone.Seconds()/tCluster.Seconds(), "cluster/standalone")
}

// percentile returns the p-th percentile of d (sorted in place).
func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkCreateRemote: a CREATE a host places on itself against one it
// places on another host (it has no capacity left), over a NATS server
// on loopback. The host placed on runs 100 rooms. The rooms are in memory, so the figures are the cluster's
// own cost. Metrics: p50 of each in µs and their difference (target:
// within 5 ms).
func BenchmarkCreateRemote(b *testing.B) {
	_, _, url := natsServer(b)
	a, _ := join(b, testConfig(url, "a", public), 0)
	other, free := join(b, testConfig(url, "b", public), 1<<30)
	eventually(b, "a sees b", func() bool { return a.Stats().Hosts == 2 })
	fill(free, 100) // a host with rooms running; each room made below is reaped at once
	var local, remote []time.Duration
	for b.Loop() {
		for _, to := range []struct {
			c    *Cluster
			node string
			d    *[]time.Duration
		}{{other, "b", &local}, {a, "b", &remote}} {
			start := time.Now()
			r, err := to.c.Create(context.Background(), player)
			*to.d = append(*to.d, time.Since(start))
			if err != nil || r.Node != to.node {
				b.Fatalf("CREATE: %+v, %v", r, err)
			}
			reap(free, r.ID)
		}
	}
	pl, pr := percentile(local, 0.5), percentile(remote, 0.5)
	b.ReportMetric(float64(pl.Microseconds()), "local-p50-µs")
	b.ReportMetric(float64(pr.Microseconds()), "remote-p50-µs")
	b.ReportMetric(float64(percentile(remote, 0.99).Microseconds()), "remote-p99-µs")
	b.ReportMetric(float64((pr - pl).Microseconds()), "difference-p50-µs")
}

// BenchmarkChangeVisible: a room's change on one host (its players) until
// another host's Watch delivers it, one change at a time, with three
// hosts watching. Metrics: p50 and p99 in µs (target: p99 under 100 ms).
func BenchmarkChangeVisible(b *testing.B) {
	_, _, url := natsServer(b)
	a, la := join(b, testConfig(url, "a", public), 1)
	var watchers []*Cluster
	for _, name := range []string{"b", "c"} {
		w, _ := join(b, testConfig(url, name, public), 0)
		watchers = append(watchers, w)
	}
	r, err := a.Create(context.Background(), player)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range watchers {
		eventually(b, "the room seen", func() bool { return lists(w, r.ID, "a") })
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := watchers[0].Watch(ctx)
	var lat []time.Duration
	players := 0
	for b.Loop() {
		players = (players + 1) % 4
		start := time.Now()
		setPlayers(la, r.ID, players)
		for ev := range events {
			if ev.Kind == room.Changed && ev.Room.ID == r.ID && ev.Room.Players == players {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkScale simulates a large deployment on this machine: 50 hosts
// (each a Cluster with its own connection, as separate machines would
// have) publish 500 rooms each at once to one NATS server, and every host
// keeps a view of the other 24,500. Metrics: seconds until every view
// holds every room; heap per host (its view, its table as published, its
// client); messages the server delivered per room written (the put, its
// ack, and one copy per watching host); bytes the bucket holds per room.
func BenchmarkScale(b *testing.B) {
	const hosts, rooms = 50, 500
	for b.Loop() {
		srv, _, url := natsServer(b)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var cs []*Cluster
		var locals []*roomtabletest.Rooms
		for i := range hosts {
			cfg := testConfig(url, fmt.Sprintf("h%02d", i), public)
			cfg.Heartbeat, cfg.HostTTL = time.Second, 6*time.Second
			c, l := join(b, cfg, 0)
			cs, locals = append(cs, c), append(locals, l)
		}
		eventually(b, "every host sees every host", func() bool { return cs[0].Stats().Hosts == hosts && cs[hosts-1].Stats().Hosts == hosts })
		v0, _ := srv.Varz(nil)
		start := time.Now()
		for _, l := range locals {
			fill(l, rooms)
		}
		for _, c := range cs {
			for c.Stats().RemoteRooms != (hosts-1)*rooms {
				time.Sleep(10 * time.Millisecond)
			}
		}
		took := time.Since(start)
		v1, _ := srv.Varz(nil)
		runtime.GC()
		runtime.ReadMemStats(&after)
		nc, err := nats.Connect(url)
		if err != nil {
			b.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(context.Background(), clusterBucket)
		if err != nil {
			b.Fatal(err)
		}
		st, err := kv.Status(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		nc.Close()
		b.ReportMetric(took.Seconds(), "converge-s")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/hosts/(1<<20), "heap-MiB/host")
		b.ReportMetric(float64(v1.OutMsgs-v0.OutMsgs)/(hosts*rooms), "msgs-out/room")
		b.ReportMetric(float64(st.Bytes())/float64(st.Values()), "bucket-B/key")
		for _, c := range cs {
			c.Close()
		}
	}
}

package cluster

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// A host's local table in these tests is the real room table with no
// processes behind it (roomtabletest): its seat rules, proofs and ids are
// those production runs, so clusters of many hosts run in one test
// process over a real NATS server without spawning rooms.

// fill lists n Waiting rooms of 4 places in local at once.
func fill(local *roomtabletest.Rooms, n int) {
	for range n {
		local.Add(room.Room{State: packet.Waiting, MaxPlayers: 4})
	}
}

// setPlayers makes room id of local report n players, as its process
// would.
func setPlayers(local *roomtabletest.Rooms, id uint32, n int) {
	r, _ := local.Room(id)
	local.Report(id, roomtable.Report{State: r.State, Players: n})
}

// reap removes room id from local, whose capacity grows by the place the
// room frees, as a supervisor's does when a room ends.
func reap(local *roomtabletest.Rooms, id uint32) {
	local.Reap(id)
	local.SetCapacity(local.Capacity() + 1)
}

// natsServer runs a NATS server with JetStream on a free loopback port
// for the test, and returns it, its options (to restart it with) and its
// URL.
func natsServer(t testing.TB) (*server.Server, *server.Options, string) {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	s := restart(t, opts)
	opts.Port = s.Addr().(*net.TCPAddr).Port
	return s, opts, s.ClientURL()
}

// restart starts a NATS server with opts, shut down at the end of the test.
func restart(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// testConfig is a host of the test's cluster at url, with the public
// address addr and timings short enough for a test.
func testConfig(url, name string, addr netip.Addr) Config {
	c := DefaultConfig()
	c.NATS, c.Host, c.PublicAddr = []string{url}, name, addr
	c.HostTTL = 2 * time.Second
	c.Heartbeat = 200 * time.Millisecond
	return c
}

// join starts host cfg.Host with a local table of its own that has room
// for free rooms and hands out the ids of the range the cluster gave the
// host; the host leaves at the end of the test. free is a count, never
// roomtabletest.Unlimited: heartbeats carry it, and others refuse a
// negative one as malformed.
func join(t testing.TB, cfg Config, free int) (*Cluster, *roomtabletest.Rooms) {
	t.Helper()
	c := start(t, cfg)
	first, last, next := c.IDs()
	local := roomtabletest.New(t, roomtable.Config{IDs: roomtable.IDRange{First: first, Last: last, Next: next}})
	local.SetCapacity(free)
	attach(t, c, local)
	return c, local
}

// start joins host cfg.Host to the cluster, without a table yet.
func start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	c, err := Start(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if first, _, next := c.IDs(); next < first {
		t.Fatalf("next id %d below the range's first %d", next, first)
	}
	return c
}

// attach puts local in c, which leaves at the end of the test, before
// local closes.
func attach(t testing.TB, c *Cluster, local Local) {
	t.Helper()
	if err := c.Attach(local); err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
}

// eventually polls cond until it holds, failing after a generous limit.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lists reports whether c lists room id, run by node.
func lists(c *Cluster, id uint32, node string) bool {
	for _, r := range c.List().Rooms {
		if r.ID == id {
			return r.Node == node
		}
	}
	return false
}

// mustJoin is join for a test that does not use the host's table.
func mustJoin(t testing.TB, cfg Config, free int) *Cluster {
	t.Helper()
	c, _ := join(t, cfg, free)
	return c
}

package gunzserver

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/gunz"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// seedRequest is the locator request of the protocol's own description.
var seedRequest = unhex("64 00 0b 00 73 00 05 00 41 9c 00")

type fixture struct {
	t     *testing.T
	loc   *Locator
	table *roomtabletest.Rooms
	conn  *net.UDPConn // the test's client, connected to the locator
}

// start serves a locator, with cfg changed by tweak, whose sources may
// each send 1000 requests a second.
func start(t *testing.T, tweak func(*Config)) *fixture {
	t.Helper()
	return startLimited(t, tweak, edgetest.Limits(1000, 1000))
}

// startLimited is start with the locator's own guard built from lim.
func startLimited(t *testing.T, tweak func(*Config), lim limit.Config) *fixture {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	loc, table := edgetest.Start(t, cfg, tweak, func(c Config, table *roomtabletest.Rooms) (*Locator, error) {
		return New(c, table, limit.NewGuard(lim), zerolog.Nop())
	})
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), loc.Addrs()[0].Port())
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fixture{t: t, loc: loc, table: table, conn: c}
}

func (f *fixture) send(b []byte) {
	f.t.Helper()
	if _, err := f.conn.Write(b); err != nil {
		f.t.Fatal(err)
	}
}

// recv reads one response; the deadline only keeps a broken build from
// hanging.
func (f *fixture) recv() gunz.Response {
	f.t.Helper()
	buf := make([]byte, 1<<16)
	_ = f.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := f.conn.Read(buf)
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := gunz.ParseResponse(buf[:n])
	if err != nil {
		f.t.Fatalf("response %x: %v", buf[:n], err)
	}
	return r
}

// addRooms lists three rooms of this host, two of them with a seat held,
// and registers two that run elsewhere.
func addRooms(t *testing.T, table *roomtabletest.Rooms) {
	t.Helper()
	waiting := table.Add(room.Room{Port: 30001, State: packet.Waiting, Players: 1, MaxPlayers: 4})
	table.Add(room.Room{Port: 30002, State: packet.Playing, Players: 2, MaxPlayers: 4})
	countdown := table.Add(room.Room{Port: 30003, State: packet.Countdown, Players: 3, MaxPlayers: 4})
	edgetest.HoldSeats(t, table, waiting.ID, 1)
	edgetest.HoldSeats(t, table, countdown.ID, 1)
	// Registered rooms elsewhere: listed at their own host when IPv4.
	for _, at := range []string{"192.0.2.9:8190", "[2001:db8::1]:8191"} {
		if _, err := table.Register(at, room.Listing{Addr: netip.MustParseAddrPort(at), MaxPlayers: 10}); err != nil {
			t.Fatal(err)
		}
	}
	// Registered with nothing to prove its address: never listed.
	if _, err := table.Register("unchecked", room.Listing{Addr: netip.MustParseAddrPort("192.0.2.10:8192"), MaxPlayers: 10, Unchecked: true}); err != nil {
		t.Fatal(err)
	}
}

// wantRooms is addRooms as the locator lists them to a source that showed
// it receives: players count the seats held too, as in every listing.
func wantRooms(host netip.Addr) []gunz.Server {
	return append(wantOwnRooms(host),
		gunz.Server{Addr: netip.MustParseAddr("192.0.2.9"), Port: 8190, ID: 4, MaxPlayers: 10, Type: gunz.Match, Status: gunz.Online})
}

// wantOwnRooms is addRooms as the locator lists them to a source never
// seen: Foyer's own rooms only.
func wantOwnRooms(host netip.Addr) []gunz.Server {
	return []gunz.Server{
		{Addr: host, Port: 30001, ID: 1, MaxPlayers: 4, Players: 2, Type: gunz.Match, Status: gunz.Online},
		{Addr: host, Port: 30002, ID: 2, MaxPlayers: 4, Players: 2, Type: gunz.Match, Status: gunz.Offline},
		{Addr: host, Port: 30003, ID: 3, MaxPlayers: 4, Players: 4, Type: gunz.Match, Status: gunz.Offline},
	}
}

func sameServers(t *testing.T, got, want []gunz.Server) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d servers %+v, want %+v", len(got), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("server %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSeedRequestAnswered(t *testing.T) {
	f := start(t, nil)
	addRooms(t, f.table)
	f.send(seedRequest)
	r := f.recv() // ParseResponse checked sizes and checksum
	if r.Serial != 0 {
		t.Errorf("serial %d", r.Serial)
	}
	sameServers(t, r.Servers, wantOwnRooms(netip.MustParseAddr("127.0.0.1")))
	// A reply is counted once sent, which may be after it arrived.
	edgetest.Eventually(t, "reply counted", func() bool { return f.loc.Stats().Replies["locator"] == 1 })
	if st := f.loc.Stats(); st.Requests["locator"] != 1 || len(st.Drops) != 0 {
		t.Errorf("stats %+v", st)
	}
}

// What others registered grows no reply to a source that has not shown it
// receives: it is told of Foyer's own rooms only, however many servers
// registered. A source that has is told of every room but the unchecked.
func TestRegisteredRoomsOnlyToReceivers(t *testing.T) {
	f := start(t, nil)
	for range 1000 {
		f.table.Add(room.Room{Port: 8190, State: packet.Waiting, MaxPlayers: 10, Source: room.GG2,
			Host: netip.MustParseAddr("192.0.2.9")})
	}
	f.send(seedRequest)
	if r := f.recv(); len(r.Servers) != 0 {
		t.Fatalf("a never-seen source is told of %d registered servers", len(r.Servers))
	}
	f.loc.guard.Received(netip.MustParseAddr("127.0.0.1"), time.Now())
	f.send(seedRequest)
	if r := f.recv(); len(r.Servers) != 1000 {
		t.Fatalf("a receiver is told of %d servers, want 1000", len(r.Servers))
	}
	other := start(t, nil)
	addRooms(t, other.table)
	other.loc.guard.Received(netip.MustParseAddr("127.0.0.1"), time.Now())
	other.send(seedRequest)
	sameServers(t, other.recv().Servers, wantRooms(netip.MustParseAddr("127.0.0.1")))
}

func TestSerialEchoedAndPublicAddr(t *testing.T) {
	f := start(t, func(c *Config) { c.PublicAddr = netip.MustParseAddr("198.51.100.4") })
	addRooms(t, f.table)
	f.send(gunz.Request{Serial: 0xA5}.Append(nil))
	r := f.recv()
	if r.Serial != 0xA5 {
		t.Errorf("serial %#x, want 0xa5", r.Serial)
	}
	sameServers(t, r.Servers, wantOwnRooms(netip.MustParseAddr("198.51.100.4")))
}

// On a socket bound to 0.0.0.0 the listed address is the one the request
// arrived on, and the reply comes from it: the client's socket, connected
// to 127.0.0.2, takes nothing from another address.
func TestWildcardListsArrivalAddress(t *testing.T) {
	f := start(t, func(c *Config) { c.Listen = netip.MustParseAddrPort("0.0.0.0:0") })
	f.table.Add(room.Room{Port: 30001, State: packet.Waiting, MaxPlayers: 4})
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), f.loc.Addrs()[0].Port())
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f.conn = c
	f.send(seedRequest)
	r := f.recv()
	if len(r.Servers) != 1 || r.Servers[0].Addr != to.Addr() {
		t.Errorf("servers %+v", r.Servers)
	}
}

// On a socket bound to 0.0.0.0 a request costs the locator no allocation:
// reading where it arrived and sending the reply from there reuse the
// loop's buffers. (The count is the whole process's: the test's client
// allocates nothing either, and less than one per round trip leaves room
// for a stray allocation of the runtime.)
func TestWildcardRequestsAllocateNothing(t *testing.T) {
	f := start(t, func(c *Config) { c.Listen = netip.MustParseAddrPort("0.0.0.0:0") })
	f.table.Add(room.Room{Port: 30001, State: packet.Waiting, MaxPlayers: 4})
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), f.loc.Addrs()[0].Port())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<16)
	roundTrip := func() {
		if _, err := c.Write(seedRequest); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a broken build fails rather than hangs
	roundTrip()
	if n := testing.AllocsPerRun(200, roundTrip); n >= 1 {
		t.Errorf("%v allocations per request", n)
	}
}

// Garbage gets no reply: the first datagram back answers the valid request
// sent after it (one socket, one loop, handled in order). Without the
// socket filter the loop counts each by its reason; with it the kernel
// drops all but the bad checksum, which only a parse tells.
func TestGarbageDropped(t *testing.T) {
	for _, filter := range []bool{false, true} {
		t.Run(fmt.Sprintf("filter=%v", filter), func(t *testing.T) { testGarbageDropped(t, filter) })
	}
}

func testGarbageDropped(t *testing.T, filter bool) {
	f := start(t, func(c *Config) { c.Filter = filter })
	badSum := append([]byte(nil), seedRequest...)
	badSum[4]++
	garbage := [][]byte{
		{},
		[]byte("hello"),
		seedRequest[:10],
		append(append([]byte(nil), seedRequest...), 0),
		badSum,
		unhex("64 00 26 00 1d 02 20 00 42 9c 00 17 00 00 00 0f 00 00 00 01 00 00 00 00 00 00 00 70 17 00 00 01 f4 01 02 00 04 01"),
	}
	for _, g := range garbage {
		f.send(g)
	}
	f.send(gunz.Request{Serial: 9}.Append(nil))
	if r := f.recv(); r.Serial != 9 {
		t.Errorf("first reply has serial %d, want the valid request's 9", r.Serial)
	}
	edgetest.Eventually(t, "reply counted", func() bool { return f.loc.Stats().Replies["locator"] == 1 })
	st := f.loc.Stats()
	var drops uint64
	for _, n := range st.Drops {
		drops += n
	}
	switch {
	case st.Requests["locator"] != 1:
		t.Errorf("stats %+v", st)
	case !filter && (drops != uint64(len(garbage)) || st.Drops["checksum"] != 2 || st.KernelDrops != 0):
		t.Errorf("stats %+v", st)
	case filter && (drops != 1 || st.Drops["checksum"] != 1 || st.KernelDrops != uint64(len(garbage)-1)):
		t.Errorf("filtered: stats %+v; want the bad checksum dropped by the loop, the rest by the kernel", st)
	}
}

func TestRateLimit(t *testing.T) {
	f := startLimited(t, nil, edgetest.Limits(0.001, 2))
	for range 4 {
		f.send(seedRequest)
	}
	edgetest.Eventually(t, "two limited", func() bool { return f.loc.Stats().Drops["rate_limited"] == 2 })
	f.recv()
	f.recv()
	edgetest.Eventually(t, "replies counted", func() bool { return f.loc.Stats().Replies["locator"] == 2 })
	if n := f.loc.Stats().Requests["locator"]; n != 2 {
		t.Errorf("%d requests served, want 2", n)
	}
}

func TestReflectionBudget(t *testing.T) {
	lim := edgetest.Limits(1000, 1000)
	lim.ReflectionLimit = 1 // the budget is one max datagram
	f := startLimited(t, nil, lim)
	for range 1000 {
		f.table.Add(room.Room{Port: 30001, State: packet.Waiting, MaxPlayers: 4})
	}
	const size = 23 + 1000*gunz.ServerLen // four fit in 65507 bytes, the fifth does not
	for range 5 {
		f.send(seedRequest)
	}
	edgetest.Eventually(t, "one over budget", func() bool { return f.loc.Stats().Drops["reflection"] == 1 })
	for range 65507 / size {
		if r := f.recv(); len(r.Servers) != 1000 {
			t.Fatalf("%d servers", len(r.Servers))
		}
	}
}

func TestCapJoinableFirst(t *testing.T) {
	f := start(t, nil)
	for range 10 {
		f.table.Add(room.Room{Port: 1, State: packet.Playing, MaxPlayers: 4})
	}
	for range gunz.MaxServers {
		f.table.Add(room.Room{Port: 2, State: packet.Waiting, MaxPlayers: 4})
	}
	f.send(seedRequest)
	r := f.recv()
	if len(r.Servers) != gunz.MaxServers {
		t.Fatalf("%d servers, want %d", len(r.Servers), gunz.MaxServers)
	}
	for i, s := range r.Servers {
		if s.Status != gunz.Online || s.ID != uint8(i%255+1) {
			t.Fatalf("server %d = %+v", i, s)
		}
	}
}

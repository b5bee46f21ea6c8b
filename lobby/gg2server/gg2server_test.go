package gg2server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// fixture is a front-end serving on loopback in front of the real room
// table, with no processes behind its rooms.
type fixture struct {
	t     *testing.T
	srv   *Server
	table *roomtabletest.Rooms
	addr  netip.AddrPort
	udp   *net.UDPConn // the test's game server socket
}

// start serves a front-end, with cfg changed by tweak, whose sources may
// each send 1000 requests a second.
func start(t *testing.T, tweak func(*Config)) *fixture {
	t.Helper()
	return startLimited(t, tweak, edgetest.Limits(1000, 1000))
}

// startLimited is start with the front-end's own guard built from lim.
func startLimited(t *testing.T, tweak func(*Config), lim limit.Config) *fixture {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.LegacyListen = netip.AddrPort{} // tests that speak it turn it on
	// Most tests register UDP servers, which are listed at once; those of
	// the refusal turn it off.
	cfg.UDPTransport = true
	srv, table := edgetest.Start(t, cfg, tweak, func(c Config, table *roomtabletest.Rooms) (*Server, error) {
		return New(c, table, table, limit.NewGuard(lim), zerolog.Nop())
	})
	return &fixture{t: t, srv: srv, table: table, addr: srv.Addrs()[0], udp: udptest.Listen(t, "127.0.0.1")}
}

func (f *fixture) send(b []byte) {
	f.t.Helper()
	udptest.Send(f.t, f.udp, f.addr, b)
}

// waitDrop waits until the drop counter of reason reaches n.
func (f *fixture) waitDrop(reason string, n uint64) {
	f.t.Helper()
	edgetest.Eventually(f.t, "drop "+reason, func() bool { return f.srv.Stats().Drops[reason] >= n })
}

func (f *fixture) waitRequests(kind string, n uint64) {
	f.t.Helper()
	edgetest.Eventually(f.t, "request "+kind, func() bool { return f.srv.Stats().Requests[kind] >= n })
}

func registration(id byte, port uint16, tr gg2.Transport, form gg2.Form, kv ...string) []byte {
	r := gg2.Registration{
		Form: form, LobbyID: gg2.GG2LobbyUUID, Transport: tr, Port: port,
		Slots: 10, Players: 3, Bots: 1, Flags: gg2.FlagPassword,
	}
	r.ServerID[0] = id
	for i := 0; i+1 < len(kv); i += 2 {
		r.KeyValues = append(r.KeyValues, gg2.KeyValue{Key: kv[i], Value: []byte(kv[i+1])})
	}
	b, err := r.Append(nil)
	if err != nil {
		panic(err)
	}
	return b
}

func unregister(id byte) []byte {
	b := append([]byte(nil), gg2.UnregisterUUID[:]...)
	var sid gg2.UUID
	sid[0] = id
	return append(b, sid[:]...)
}

// list asks for lobby's servers over TCP and reads until the server closes.
func list(t *testing.T, addr netip.AddrPort, lobby gg2.UUID) gg2.ListReply {
	t.Helper()
	b := readAll(t, addr, gg2.ListQuery{Lobby: lobby}.Append(nil))
	r, err := gg2.ParseListReply(b)
	if err != nil {
		t.Fatalf("list reply %x: %v", b, err)
	}
	return r
}

// readAll connects, writes q and reads until the server closes.
func readAll(t *testing.T, addr netip.AddrPort, q []byte) []byte {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

// byPort finds the listed server on port.
func byPort(r gg2.ListReply, port uint16) (gg2.ListServer, bool) {
	for _, s := range r.Servers {
		if s.V4.Port() == port || s.V6.Port() == port {
			return s, true
		}
	}
	return gg2.ListServer{}, false
}

func udpKey(port uint16) string { return "gg2 127.0.0.1:" + strconv.Itoa(int(port)) + "/udp" }
func tcpKey(port uint16) string { return "gg2 127.0.0.1:" + strconv.Itoa(int(port)) + "/tcp" }

func TestRegisterBothFormsAndList(t *testing.T) {
	f := start(t, nil)
	own := f.table.Add(room.Room{Port: 30001, State: packet.Waiting, Players: 1, MaxPlayers: 4})
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "counted server", "game", "gg2", "map", "ctf_a", "x-extra", "v"))
	f.send(registration(2, 8191, gg2.UDP, gg2.Legacy, "name", "legacy server"))
	f.waitRequests("register", 2) // counted once applied

	room, _ := f.table.Registered(udpKey(8190))
	if room.Name != "counted server" || room.Game != "gg2" || room.Map != "ctf_a" || room.Players != 3 ||
		room.MaxPlayers != 10 || !room.Password || room.Host != netip.MustParseAddr("127.0.0.1") || room.Port != 8190 {
		t.Errorf("registered room = %+v", room)
	}

	r := list(t, f.addr, gg2.GG2LobbyUUID)
	if len(r.Servers) != 3 {
		t.Fatalf("listed %d servers, want 3: %+v", len(r.Servers), r.Servers)
	}
	s, ok := byPort(r, 8190)
	want := gg2.KeyValues{{Key: "name", Value: []byte("counted server")}, {Key: "game", Value: []byte("gg2")},
		{Key: "map", Value: []byte("ctf_a")}, {Key: "x-extra", Value: []byte("v")}}
	if !ok || !s.KeyValues.Equal(want) || s.V4.Addr() != netip.MustParseAddr("127.0.0.1") ||
		s.Transport != gg2.UDP || s.Slots != 10 || s.Players != 3 || s.Bots != 1 || s.Flags != gg2.FlagPassword {
		t.Errorf("counted server listed as %+v", s)
	}
	if s, ok := byPort(r, 8191); !ok || s.KeyValues.Name() != "legacy server" {
		t.Errorf("legacy server listed as %+v", s)
	}
	s, ok = byPort(r, own.Port)
	want = gg2.KeyValues{{Key: "name", Value: []byte(fmt.Sprint("Foyer room ", own.ID))}, {Key: "game", Value: []byte("foyer")},
		{Key: "map", Value: []byte("default")}}
	if !ok || !s.KeyValues.Equal(want) || s.V4 != netip.MustParseAddrPort("127.0.0.1:30001") ||
		s.Slots != 4 || s.Players != 1 || s.Flags != 0 {
		t.Errorf("own room listed as %+v", s)
	}
	if st := f.srv.Stats(); st.Registered != 2 || st.Requests["register"] != 2 || st.Requests["list"] != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestPublicAddrAndOtherLobby(t *testing.T) {
	other := gg2.MustParseUUID("00000000-0000-0000-0000-000000000001")
	f := start(t, func(c *Config) {
		c.PublicAddr = netip.MustParseAddr("192.0.2.7")
		c.Game = "mygame"
	})
	f.table.Add(room.Room{Port: 30002, Map: "arena", Name: "Named", MaxPlayers: 2})
	r := list(t, f.addr, gg2.GG2LobbyUUID)
	if len(r.Servers) != 1 || r.Servers[0].V4 != netip.MustParseAddrPort("192.0.2.7:30002") ||
		!r.Servers[0].KeyValues.Equal(gg2.KeyValues{{Key: "name", Value: []byte("Named")},
			{Key: "game", Value: []byte("mygame")}, {Key: "map", Value: []byte("arena")}}) {
		t.Errorf("listed %+v", r.Servers)
	}
	if r := list(t, f.addr, other); len(r.Servers) != 0 {
		t.Errorf("other lobby listed %+v", r.Servers)
	}
}

func TestExpire(t *testing.T) {
	f := start(t, func(c *Config) { c.TTL = 150 * time.Millisecond })
	// The table's events show the server come and go, however slow the
	// machine, where polling could miss a short life.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := f.table.Watch(ctx)
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "short-lived"))
	for _, want := range []room.EventKind{room.Created, room.Reaped} {
		select {
		case ev := <-events:
			if ev.Kind != want || ev.Room.Port != 8190 {
				t.Fatalf("event %+v, want kind %d", ev, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event of kind %d", want)
		}
	}
	if r := list(t, f.addr, gg2.GG2LobbyUUID); len(r.Servers) != 0 {
		t.Errorf("expired server still listed: %+v", r.Servers)
	}
	if st := f.srv.Stats(); st.Registered != 0 || st.Pending != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A server belongs to the ID that registered it: another ID (or the
// legacy protocol, which has none) for its IP, port and transport changes
// nothing, until the owner unregisters it or it expires.
func TestOwnedByTheRegisteringID(t *testing.T) {
	f := start(t, nil)
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "one"))
	f.waitRequests("register", 1)
	f.send(registration(2, 8190, gg2.UDP, gg2.Counted, "name", "FREE SKINS"))
	f.send(registration(3, 8190, gg2.UDP, gg2.Legacy, "name", "FREE SKINS"))
	f.waitDrop("owned", 2)
	if r, _ := f.table.Registered(udpKey(8190)); r.Name != "one" {
		t.Errorf("renamed by another ID: %+v", r)
	}
	// The owner still updates it.
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "one, updated"))
	edgetest.Eventually(t, "the owner's update", func() bool { r, _ := f.table.Registered(udpKey(8190)); return r.Name == "one, updated" })
	// The other IDs remove nothing; the owner's does, and frees the key.
	f.send(unregister(2))
	f.waitDrop("unknown_id", 1)
	if _, ok := f.table.Registered(udpKey(8190)); !ok {
		t.Fatal("another ID removed the server")
	}
	f.send(unregister(1))
	edgetest.Eventually(t, "unregistered", func() bool { _, ok := f.table.Registered(udpKey(8190)); return !ok })
	f.send(registration(2, 8190, gg2.UDP, gg2.Counted, "name", "two"))
	edgetest.Eventually(t, "a new owner", func() bool { r, _ := f.table.Registered(udpKey(8190)); return r.Name == "two" })
	// The same port over the other transport is another server.
	srv := listenTCP(t)
	f.send(registration(3, srv.Port(), gg2.TCP, gg2.Counted, "name", "tcp"))
	f.send(registration(4, srv.Port(), gg2.UDP, gg2.Counted, "name", "udp"))
	edgetest.Eventually(t, "two transports", func() bool { return len(f.table.RegisteredKeys()) == 3 })
}

// A server expired is free for another ID.
func TestExpiredKeyFree(t *testing.T) {
	f := start(t, func(c *Config) { c.TTL = 150 * time.Millisecond })
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "one"))
	edgetest.Eventually(t, "registered", func() bool { _, ok := f.table.Registered(udpKey(8190)); return ok })
	edgetest.Eventually(t, "expired", func() bool { _, ok := f.table.Registered(udpKey(8190)); return !ok })
	f.send(registration(2, 8190, gg2.UDP, gg2.Counted, "name", "two"))
	edgetest.Eventually(t, "the new owner", func() bool { r, _ := f.table.Registered(udpKey(8190)); return r.Name == "two" })
}

// Only the right ID, from the server's own IP, unregisters it.
func TestUnregister(t *testing.T) {
	f := start(t, nil)
	f.send(registration(7, 8190, gg2.UDP, gg2.Counted, "name", "s"))
	edgetest.Eventually(t, "registered", func() bool { _, ok := f.table.Registered(udpKey(8190)); return ok })
	f.send(unregister(8))
	f.waitDrop("unknown_id", 1)
	if _, ok := f.table.Registered(udpKey(8190)); !ok {
		t.Fatal("wrong ID removed the server")
	}
	elsewhere := udptest.Listen(t, "127.0.0.2")
	udptest.Send(t, elsewhere, f.addr, unregister(7))
	f.waitDrop("wrong_source", 1)
	if _, ok := f.table.Registered(udpKey(8190)); !ok {
		t.Fatal("the right ID from another address removed the server")
	}
	f.send(unregister(7))
	f.waitRequests("unregister", 3)
	if _, ok := f.table.Registered(udpKey(8190)); ok {
		t.Error("right ID did not remove the server")
	}
	if st := f.srv.Stats(); st.Requests["unregister"] != 3 || st.Registered != 0 {
		t.Errorf("stats %+v", st)
	}
}

// UDP registrations are refused unless let in; let in, they are marked
// unchecked for the room table.
func TestUDPTransport(t *testing.T) {
	f := start(t, func(c *Config) { c.UDPTransport = false })
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "udp"))
	f.waitDrop("udp_transport", 1)
	if keys := f.table.RegisteredKeys(); len(keys) != 0 {
		t.Errorf("registered %v", keys)
	}
	f = start(t, nil)
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "udp"))
	srv := listenTCP(t)
	f.send(registration(2, srv.Port(), gg2.TCP, gg2.Counted, "name", "tcp"))
	edgetest.Eventually(t, "both registered", func() bool { return len(f.table.RegisteredKeys()) == 2 })
	if r, _ := f.table.Registered(udpKey(8190)); !r.Unchecked {
		t.Errorf("UDP server %+v not marked unchecked", r)
	}
	if r, _ := f.table.Registered(tcpKey(srv.Port())); r.Unchecked {
		t.Errorf("checked TCP server %+v marked unchecked", r)
	}
}

// listenTCP returns the address of a TCP listener that accepts and closes.
func listenTCP(t *testing.T) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

// closedPort returns a loopback TCP port nothing listens on.
func closedPort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).AddrPort().Port()
	l.Close()
	return port
}

func TestTCPReachability(t *testing.T) {
	f := start(t, nil)
	refused := closedPort(t)
	f.send(registration(1, refused, gg2.TCP, gg2.Counted, "name", "nobody home"))
	f.waitDrop("unreachable", 1)
	if _, ok := f.table.Registered(tcpKey(refused)); ok {
		t.Error("unreachable server registered")
	}
	if st := f.srv.Stats(); st.Pending != 0 || st.Registered != 0 {
		t.Errorf("stats %+v: a server that failed its check is not kept", st)
	}
	// A second registration within ttl is refused on the outcome kept: no
	// second connect.
	f.send(registration(1, refused, gg2.TCP, gg2.Counted, "name", "nobody home"))
	f.waitDrop("unreachable_cached", 1)
	if n := f.srv.Stats().Drops["unreachable"]; n != 1 {
		t.Errorf("%d connects failed, want 1", n)
	}

	open := listenTCP(t)
	f.send(registration(2, open.Port(), gg2.TCP, gg2.Counted, "name", "listening"))
	edgetest.Eventually(t, "reachable server registered", func() bool { _, ok := f.table.Registered(tcpKey(open.Port())); return ok })
	r := list(t, f.addr, gg2.GG2LobbyUUID)
	if len(r.Servers) != 1 || r.Servers[0].Transport != gg2.TCP || r.Servers[0].V4 != open {
		t.Errorf("listed %+v", r.Servers)
	}
}

func TestIgnored(t *testing.T) {
	f := start(t, nil)
	// The encoder refuses a table without "name": rename the key on the wire.
	noName := registration(1, 8190, gg2.UDP, gg2.Counted, "name", "no name")
	copy(noName[bytes.Index(noName, []byte("name")):], "nome")
	f.send(noName)
	f.waitDrop("no_name", 1)
	// Garbage: the socket filter drops it in the kernel.
	f.send([]byte("garbage that is no GG2 message at all"))
	edgetest.Eventually(t, "garbage dropped by the kernel", func() bool { return f.srv.Stats().KernelDrops == 1 })
	good := registration(3, 8192, gg2.UDP, gg2.Counted, "name", "ok")
	f.send(good[:len(good)-1])
	f.send(good)
	f.waitRequests("register", 1)
	if keys := f.table.RegisteredKeys(); len(keys) != 1 {
		t.Errorf("keys %v, want only the good one", keys)
	}
	// One socket, one read loop: the cut datagram was handled before the
	// good one, and dropped.
	st := f.srv.Stats()
	var drops uint64
	for _, n := range st.Drops {
		drops += n
	}
	if st.Requests["register"] != 1 || drops != 2 || st.KernelDrops != 1 {
		t.Errorf("stats %+v", st)
	}
}

// dial opens a list connection that sends nothing yet.
func dial(t *testing.T, addr netip.AddrPort) *net.TCPConn {
	t.Helper()
	return dialFrom(t, "127.0.0.1", addr)
}

// dialFrom is dial from the local address ip.
func dialFrom(t *testing.T, ip string, addr netip.AddrPort) *net.TCPConn {
	t.Helper()
	local := net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0))
	c, err := net.DialTCP("tcp", local, net.TCPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// closedByServer reads c until the server closes it and returns what came.
func closedByServer(t *testing.T, c *net.TCPConn) []byte {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("read: %v", err)
	}
	return b
}

// isReset: a server closing with unread input resets the connection.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

func TestSilentClientCut(t *testing.T) {
	f := start(t, func(c *Config) { c.ListTimeout = 100 * time.Millisecond })
	c := dial(t, f.addr)
	if _, err := c.Write(gg2.ListProtocolUUID[:]); err != nil { // half a query
		t.Fatal(err)
	}
	if b := closedByServer(t, c); len(b) != 0 {
		t.Errorf("got %x, want nothing", b)
	}
	f.waitDrop("timeout", 1)
	// The lobby still answers.
	if r := list(t, f.addr, gg2.GG2LobbyUUID); len(r.Servers) != 0 {
		t.Errorf("listed %+v", r.Servers)
	}
}

// A full port cuts the connection idle longest for a newcomer.
func TestIdleCutWhenFull(t *testing.T) {
	// Held connections are cut by the shutdown or a newcomer, not by a
	// timeout.
	f := start(t, func(c *Config) { c.MaxListConns, c.ListTimeout = 2, time.Hour })
	first := dial(t, f.addr)
	dial(t, f.addr)
	edgetest.Eventually(t, "two connections served", func() bool { return f.srv.Stats().ListConns == 2 })
	if r := list(t, f.addr, gg2.GG2LobbyUUID); len(r.Servers) != 0 {
		t.Errorf("listed %+v", r.Servers)
	}
	if b := closedByServer(t, first); len(b) != 0 {
		t.Errorf("the cut connection got %x, want nothing", b)
	}
	f.waitDrop("idle_cut", 1)
}

// One source holds at most MaxListConnsPerIP connections; others are
// served.
func TestListConnsPerSource(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxListConnsPerIP, c.ListTimeout = 2, time.Hour })
	dial(t, f.addr)
	dial(t, f.addr)
	edgetest.Eventually(t, "two connections served", func() bool { return f.srv.Stats().ListConns == 2 })
	c := dial(t, f.addr)
	_, _ = c.Write(gg2.ListQuery{Lobby: gg2.GG2LobbyUUID}.Append(nil))
	if b := closedByServer(t, c); len(b) != 0 {
		t.Errorf("third connection got %x, want nothing", b)
	}
	f.waitDrop("source_conn_limit", 1)
	other := dialFrom(t, "127.0.0.2", f.addr)
	_, _ = other.Write(gg2.ListQuery{Lobby: gg2.GG2LobbyUUID}.Append(nil))
	if b := closedByServer(t, other); !bytes.Equal(b, emptyList) {
		t.Errorf("another source got %x, want the empty list", b)
	}
}

func TestRateLimit(t *testing.T) {
	f := startLimited(t, nil, edgetest.Limits(0.001, 3))
	for i := range 5 {
		f.send(registration(byte(i+1), 8190+uint16(i), gg2.UDP, gg2.Counted, "name", "s"))
	}
	f.waitDrop("rate_limited", 2)
	if n := len(f.table.RegisteredKeys()); n != 3 {
		t.Errorf("%d servers registered, want the burst of 3", n)
	}
	// The source's budget is spent for list connections too.
	c := dial(t, f.addr)
	_, _ = c.Write(gg2.ListQuery{Lobby: gg2.GG2LobbyUUID}.Append(nil))
	if b := closedByServer(t, c); len(b) != 0 {
		t.Errorf("limited list got %x, want nothing", b)
	}
	f.waitDrop("rate_limited", 3)
}

func TestShutdownUnregisters(t *testing.T) {
	table := roomtabletest.New(t, roomtable.Config{})
	cfg := DefaultConfig()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.LegacyListen = netip.AddrPort{}
	cfg.UDPTransport = true
	srv, err := New(cfg, table, table, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	u, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.Addrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.Write(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "s")); err != nil {
		t.Fatal(err)
	}
	edgetest.Eventually(t, "registered", func() bool { return len(table.RegisteredKeys()) == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if keys := table.RegisteredKeys(); len(keys) != 0 {
		t.Errorf("after shutdown still registered: %v", keys)
	}
}

func TestTableBounds(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxServers, c.MaxServersPerIP = 3, 2 })
	for i := range 3 {
		f.send(registration(byte(i+1), 8190+uint16(i), gg2.UDP, gg2.Counted, "name", "s"))
	}
	f.waitDrop("source_full", 1)
	if n := len(f.table.RegisteredKeys()); n != 2 {
		t.Fatalf("%d servers from one IP, want 2", n)
	}
	// Known servers still refresh.
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "renamed"))
	edgetest.Eventually(t, "refreshed", func() bool { r, _ := f.table.Registered(udpKey(8190)); return r.Name == "renamed" })
	// Another source fills the last place, then the table is full.
	other, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.2:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 2 {
		if _, err := other.WriteToUDPAddrPort(registration(byte(10+i), 9000+uint16(i), gg2.UDP, gg2.Counted, "name", "o"), f.addr); err != nil {
			t.Fatal(err)
		}
	}
	f.waitDrop("table_full", 1)
	if keys := f.table.RegisteredKeys(); len(keys) != 3 {
		t.Errorf("keys %v, want 3", keys)
	}
	// Unregistering frees a place for the source.
	f.send(unregister(1))
	edgetest.Eventually(t, "unregistered", func() bool { return len(f.table.RegisteredKeys()) == 2 })
	f.send(registration(3, 8192, gg2.UDP, gg2.Counted, "name", "third"))
	edgetest.Eventually(t, "third registered", func() bool { _, ok := f.table.Registered(udpKey(8192)); return ok })
}

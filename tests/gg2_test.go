package tests

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// gg2Foyer is a running foyer serve with the GG2-style front-end on.
type gg2Foyer struct {
	*server
	gg2 netip.AddrPort // UDP registrations and TCP list queries
}

// gg2Start runs foyer serve with [gg2] enabled on a free loopback port;
// extra is added to the [gg2] section. The legacy port is off unless extra
// sets legacy_listen.
func gg2Start(t *testing.T, extra string) *gg2Foyer {
	t.Helper()
	port := gg2FreePort(t)
	if !strings.Contains(extra, "legacy_listen") {
		extra += "\nlegacy_listen = \"\""
	}
	s := startServer(t, gg2Limits, gg2Section(fmt.Sprintf("enabled = true\nlisten = \"127.0.0.1:%d\"\n%s", port, extra)))
	return &gg2Foyer{server: s, gg2: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)}
}

// gg2Limits raises [lobby]'s per-source limits, which every edge shares:
// the tests poll the native and GG2 lists and register from one address.
const gg2Limits = "rate = 1000\nburst = 1000"

// gg2Section is a [gg2] table to pass as startServer's supervisorExtra:
// the section header ends [supervisor] there.
func gg2Section(keys string) string { return "\n[gg2]\n" + keys + "\n" }

// gg2FreePort returns a loopback port free for both UDP and TCP a moment
// ago, as the front-end binds both.
func gg2FreePort(t testing.TB) uint16 {
	t.Helper()
	return freePort(t, true, true)
}

// gg2Registration describes a game server at port; the server ID is
// random, as a real server's is.
func gg2Registration(t testing.TB, form gg2.Form, tr gg2.Transport, port uint16, name string, slots, players uint16) gg2.Registration {
	t.Helper()
	r := gg2.Registration{Form: form, LobbyID: gg2.GG2LobbyUUID, Transport: tr, Port: port,
		Slots: slots, Players: players, KeyValues: gg2.KeyValues{
			{Key: "name", Value: []byte(name)},
			{Key: "game", Value: []byte("Gang Garrison 2")},
			{Key: "map", Value: []byte("ctf_truefort")},
		}}
	if _, err := rand.Read(r.ServerID[:]); err != nil {
		t.Fatal(err)
	}
	return r
}

// gg2Game is the test's game server: a UDP socket on 127.0.0.1 that
// registers and unregisters with the front-end.
type gg2Game struct {
	t    testing.TB
	conn *net.UDPConn
	to   netip.AddrPort
}

func newGG2Game(t testing.TB, to netip.AddrPort) *gg2Game {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &gg2Game{t: t, conn: c, to: to}
}

func (g *gg2Game) send(b []byte) {
	g.t.Helper()
	if _, err := g.conn.WriteToUDPAddrPort(b, g.to); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gg2Game) register(r gg2.Registration) {
	g.t.Helper()
	b, err := r.Append(nil)
	if err != nil {
		g.t.Fatal(err)
	}
	g.send(b)
}

func (g *gg2Game) unregister(id gg2.UUID) {
	g.t.Helper()
	g.send(gg2.Unregister{ServerID: id}.Append(nil))
}

// gg2List asks for lobby's list over TCP and reads the reply to the end.
func gg2List(t testing.TB, to netip.AddrPort, lobby gg2.UUID) gg2.ListReply {
	t.Helper()
	b := tcpQuery(t, to, gg2.ListQuery{Lobby: lobby}.Append(nil))
	reply, err := gg2.ParseListReply(b)
	if err != nil {
		t.Fatalf("list reply %x: %v", b, err)
	}
	return reply
}

// tcpQuery sends q over a new TCP connection to to and reads the answer
// until the server closes.
func tcpQuery(t testing.TB, to netip.AddrPort, q []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", to.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gg2At returns the listed servers whose IPv4 endpoint is 127.0.0.1:port.
func gg2At(reply gg2.ListReply, port uint16) []gg2.ListServer {
	var out []gg2.ListServer
	for _, s := range reply.Servers {
		if s.V4 == netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port) {
			out = append(out, s)
		}
	}
	return out
}

// nativeAt returns the native ROOM_LIST entries with port.
func nativeAt(rooms []room, port uint16) []room {
	var out []room
	for _, r := range rooms {
		if r.port == port {
			out = append(out, r)
		}
	}
	return out
}

// gg2Eventually polls cond until it holds, failing after 10 s.
func gg2Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// gg2Registrant is a registration and the game server that sends it.
type gg2Registrant struct {
	game *gg2Game
	reg  gg2.Registration
}

// gg2RegisterUntil sends the registrations, sixteen every 10 ms, and sends
// them all again each second, as real servers register again, until cond
// holds, failing after 20 s: a burst of a thousand overflows the lobby's
// socket buffer on a loaded machine, and the kernel drops what does not
// fit.
func gg2RegisterUntil(t testing.TB, regs []gg2Registrant, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		for i, r := range regs {
			r.game.register(r.reg)
			if i%16 == 15 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		for again := time.Now().Add(time.Second); time.Now().Before(again); time.Sleep(20 * time.Millisecond) {
			if cond() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// seqs hands out native request sequence numbers.
type seqs uint16

func (s *seqs) next() uint16 { *s++; return uint16(*s) }

func kv(s gg2.ListServer, key string) string {
	v, _ := s.KeyValues.Get(key)
	return string(v)
}

// Registered servers (both forms) and Foyer's own rooms are one table: the
// GG2 list shows all, native LIST shows the registered ones with their own
// port once their port answered a TCP connect, JOIN answers with it, a
// registration from the same IP, port and transport with another server ID
// changes nothing, and only the owner's ID unregisters.
func TestGG2RegisterListJoinOwnUnregister(t *testing.T) {
	f := gg2Start(t, "")
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	ownID, ownPort := c.request(compact, createRoom, seq.next(), nil).roomPort(t)

	game := newGG2Game(t, f.gg2)
	accepts := make(chan uint16, 8)
	countedPort, legacyPort := acceptingTCP(t, accepts), acceptingTCP(t, accepts)
	counted := gg2Registration(t, gg2.Counted, gg2.TCP, countedPort, "counted server", 8, 2)
	legacyReg := gg2Registration(t, gg2.Legacy, gg2.TCP, legacyPort, "legacy server", 10, 0)
	game.register(counted)
	game.register(legacyReg)

	var list gg2.ListReply
	gg2Eventually(t, "both registrations listed", func() bool {
		list = gg2List(t, f.gg2, gg2.GG2LobbyUUID)
		return len(gg2At(list, countedPort)) == 1 && len(gg2At(list, legacyPort)) == 1
	})
	s := gg2At(list, countedPort)[0]
	if s.Transport != gg2.TCP || s.Slots != 8 || s.Players != 2 || kv(s, "name") != "counted server" || kv(s, "map") != "ctf_truefort" {
		t.Errorf("counted registration listed as %+v", s)
	}
	if s := gg2At(list, legacyPort)[0]; s.Slots != 10 || kv(s, "name") != "legacy server" {
		t.Errorf("legacy registration listed as %+v", s)
	}
	own := gg2At(list, ownPort)
	if len(own) != 1 || own[0].Slots != 4 || kv(own[0], "name") != fmt.Sprintf("Foyer room %d", ownID) ||
		kv(own[0], "game") != "foyer" || kv(own[0], "map") != "default" {
		t.Errorf("own room %d at port %d listed as %+v", ownID, ownPort, own)
	}
	if other := gg2List(t, f.gg2, gg2.MustParseUUID("00000000-0000-0000-0000-000000000001")); len(other.Servers) != 0 {
		t.Errorf("another lobby's list has %d servers", len(other.Servers))
	}

	// Native LIST shows the registered servers with their own ports.
	native := c.list(seq.next())
	reg := nativeAt(native, countedPort)
	if len(reg) != 1 || reg[0].max != 8 || reg[0].players != 2 || len(nativeAt(native, legacyPort)) != 1 {
		t.Fatalf("native LIST %+v lacks the registered servers", native)
	}
	regID := reg[0].id
	joiner := newClient(t, "127.0.0.1", f.lobby)
	joined := joiner.request(legacy, joinRoom, seq.next(), joinPayload(regID))
	if id, port := joined.roomPort(t); joined.typ != joinSuccess || id != regID || port != countedPort {
		t.Fatalf("JOIN of registered room %d answered %#x room %d port %d", regID, joined.typ, id, port)
	}
	// The seat held counts as for any room.
	if r := nativeAt(c.list(seq.next()), countedPort); len(r) != 1 || r[0].players != 3 {
		t.Errorf("after JOIN the registered room is listed as %+v, want 2 players + 1 seat", r)
	}

	// Same IP, port and transport with a new ID and name: ignored, the
	// datagram after it seen once it was handled.
	impostor := gg2Registration(t, gg2.Counted, gg2.TCP, countedPort, "FREE SKINS", 8, 0)
	game.register(impostor)
	game.unregister(impostor.ServerID)
	legacyReg.Players = 7
	game.register(legacyReg)
	gg2Eventually(t, "the legacy server's update", func() bool {
		r := nativeAt(c.list(seq.next()), legacyPort)
		return len(r) == 1 && r[0].players == 7
	})
	if at := gg2At(gg2List(t, f.gg2, gg2.GG2LobbyUUID), countedPort); len(at) != 1 || kv(at[0], "name") != "counted server" {
		t.Fatalf("another ID changed the server: %+v", at)
	}
	// The owner updates it.
	counted.KeyValues[0].Value = []byte("counted server, renamed")
	game.register(counted)
	gg2Eventually(t, "the owner's rename listed", func() bool {
		at := gg2At(gg2List(t, f.gg2, gg2.GG2LobbyUUID), countedPort)
		return len(at) == 1 && kv(at[0], "name") == "counted server, renamed"
	})
	if r := nativeAt(c.list(seq.next()), countedPort); len(r) != 1 || r[0].id != regID {
		t.Errorf("renamed server listed natively as %+v, want room %d once", r, regID)
	}

	game.unregister(counted.ServerID)
	gg2Eventually(t, "the unregistered server gone", func() bool {
		return len(nativeAt(c.list(seq.next()), countedPort)) == 0 && len(gg2At(gg2List(t, f.gg2, gg2.GG2LobbyUUID), countedPort)) == 0
	})
	if r := joiner.request(compact, joinRoom, seq.next(), joinPayload(regID)); r.typ != joinFailed {
		t.Errorf("JOIN of an unregistered room answered %#x", r.typ)
	}
	if len(nativeAt(c.list(seq.next()), legacyPort)) != 1 || len(nativeAt(c.list(seq.next()), ownPort)) != 1 {
		t.Error("unregistering one server removed others")
	}
}

// A server not registered again within ttl leaves both lists; one that
// keeps registering stays.
func TestGG2RegistrationExpires(t *testing.T) {
	f := gg2Start(t, `ttl = "1s"`)
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	game := newGG2Game(t, f.gg2)
	accepts := make(chan uint16, 64)
	lapsingPort, keptPort := acceptingTCP(t, accepts), acceptingTCP(t, accepts)
	lapsing := gg2Registration(t, gg2.Counted, gg2.TCP, lapsingPort, "lapsing", 8, 0)
	kept := gg2Registration(t, gg2.Legacy, gg2.TCP, keptPort, "kept", 8, 0)
	// Taken before the one registration is sent, so that the lobby,
	// which cannot receive it (nor check the server) earlier, must list
	// it until at least 1 s after this: a slow machine only makes the
	// wait below longer.
	sent := time.Now()
	game.register(lapsing)
	game.register(kept)
	gg2Eventually(t, "both listed", func() bool {
		rooms := c.list(seq.next())
		return len(nativeAt(rooms, lapsingPort)) == 1 && len(nativeAt(rooms, keptPort)) == 1
	})
	gg2Eventually(t, "the lapsing server gone", func() bool {
		game.register(kept)
		return len(nativeAt(c.list(seq.next()), lapsingPort)) == 0
	})
	if d := time.Since(sent); d < time.Second {
		t.Errorf("expired %v after its registration was sent, before the 1 s ttl", d)
	}
	list := gg2List(t, f.gg2, gg2.GG2LobbyUUID)
	if len(gg2At(list, lapsingPort)) != 0 || len(gg2At(list, keptPort)) != 1 || len(nativeAt(c.list(seq.next()), keptPort)) != 1 {
		t.Errorf("after expiry: GG2 list %+v", list.Servers)
	}
}

// A server registered for TCP is listed only once a TCP connect to it
// succeeds: never while its port is closed.
func TestGG2TCPServerListedOnlyWhenReachable(t *testing.T) {
	f := gg2Start(t, "")
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	game := newGG2Game(t, f.gg2)

	closed, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closedPort := uint16(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	game.register(gg2Registration(t, gg2.Counted, gg2.TCP, closedPort, "closed", 8, 0))
	gg2Eventually(t, "the reachability check", func() bool { return len(f.logs.lines("server unreachable")) == 1 })

	open, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			conn, err := open.Accept()
			if err != nil {
				return
			}
			conn.Close()
			accepted <- struct{}{}
		}
	}()
	openPort := uint16(open.Addr().(*net.TCPAddr).Port)
	game.register(gg2Registration(t, gg2.Legacy, gg2.TCP, openPort, "open", 8, 0))
	var list gg2.ListReply
	gg2Eventually(t, "the reachable TCP server listed", func() bool {
		list = gg2List(t, f.gg2, gg2.GG2LobbyUUID)
		return len(gg2At(list, openPort)) == 1
	})
	if s := gg2At(list, openPort)[0]; s.Transport != gg2.TCP || kv(s, "name") != "open" {
		t.Errorf("TCP server listed as %+v", s)
	}
	select { // the connect completed before the listing; Accept may lag it
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Error("listed without a TCP connect")
	}
	rooms := c.list(seq.next())
	if len(nativeAt(rooms, openPort)) != 1 {
		t.Errorf("reachable TCP server not in native LIST %+v", rooms)
	}
	if len(gg2At(list, closedPort)) != 0 || slices.ContainsFunc(rooms, func(r room) bool { return r.port == closedPort }) {
		t.Errorf("the unreachable server is listed")
	}
}

package gg2server

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// A server's key/values are cut to MaxKVBytes: the name first, then keys
// in order while they fit; the keys dropped are counted.
func TestKeyValuesCapped(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxKVBytes = MinKVBytes })
	kv := []string{"x-big", strings.Repeat("b", 200), "name", "capped", "map", "ctf_a"}
	for i := range 10 {
		kv = append(kv, fmt.Sprintf("x-%d", i), strings.Repeat("v", 20))
	}
	f.send(registration(1, 8190, gg2.UDP, gg2.Counted, kv...))
	f.waitRequests("register", 1)
	s, ok := byPort(list(t, f.addr, gg2.GG2LobbyUUID), 8190)
	if !ok {
		t.Fatal("not listed")
	}
	size := 0
	for _, e := range s.KeyValues {
		size += wireLen(e)
	}
	// 262 bytes: name 13, x-big 208, map 11, then one 26-byte x- key.
	want := []string{"x-big", "name", "map", "x-0"}
	var got []string
	for _, e := range s.KeyValues {
		got = append(got, e.Key)
	}
	if size > MinKVBytes || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("kept %v (%d bytes), want %v", got, size, want)
	}
	if n := f.srv.Stats().Drops["kv_dropped"]; n != 9 {
		t.Errorf("kv_dropped %d, want 9", n)
	}
	// A name that does not fit by itself: the registration is refused.
	f.send(registration(2, 8191, gg2.UDP, gg2.Counted, "name", strings.Repeat("n", MinKVBytes)))
	f.waitDrop("name_too_long", 1)
	if _, ok := f.table.Registered(udpKey(8191)); ok {
		t.Error("a name longer than max_kv_bytes was registered")
	}
}

// Slots and players above MaxPlayers are clamped.
func TestSeatsClamped(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxPlayers = 8 })
	r := gg2.Registration{LobbyID: gg2.GG2LobbyUUID, Transport: gg2.UDP, Port: 8190, Slots: 1000, Players: 50,
		KeyValues: gg2.KeyValues{{Key: "name", Value: []byte("huge")}}}
	b, err := r.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	f.send(b)
	f.waitRequests("register", 1)
	if room, _ := f.table.Registered(udpKey(8190)); room.MaxPlayers != 8 || room.Players != 8 {
		t.Errorf("registered %d of %d players, want 8 of 8", room.Players, room.MaxPlayers)
	}
	if s, _ := byPort(list(t, f.addr, gg2.GG2LobbyUUID), 8190); s.Slots != 8 || s.Players != 8 {
		t.Errorf("listed %d of %d players", s.Players, s.Slots)
	}
}

// A refresh that changes nothing listed keeps the cached reply; one that
// does is listed.
func TestListCachedUntilChange(t *testing.T) {
	f := start(t, nil)
	host := netip.MustParseAddr("127.0.0.1")
	v1 := gg2.ShortLegacyVersion(1).ID
	reg := registration(1, 8190, gg2.UDP, gg2.Counted, "name", "s", "protocol_id", string(v1[:]))
	f.send(reg)
	f.waitRequests("register", 1)
	replies := func() ([]byte, []byte) {
		t.Helper()
		l, err := f.srv.listReply(gg2.GG2LobbyUUID, host)
		if err != nil {
			t.Fatal(err)
		}
		old, err := f.srv.legacyReply(v1, host)
		if err != nil {
			t.Fatal(err)
		}
		return l, old
	}
	l1, old1 := replies()
	for i := range 5 {
		f.send(reg)
		f.waitRequests("register", uint64(2+i))
		if l, old := replies(); &l[0] != &l1[0] || &old[0] != &old1[0] {
			t.Fatalf("refresh %d rebuilt a list", i+1)
		}
	}
	reg[54]++ // one more player
	f.send(reg)
	f.waitRequests("register", 7)
	if l, old := replies(); &l[0] == &l1[0] || &old[0] == &old1[0] || bytes.Equal(l, l1) {
		t.Error("a new player count was not listed")
	}
}

// Checks are limited per target network: a burst, then one per
// checkEvery; the registrations beyond are dropped and counted.
func TestChecksLimitedPerNetwork(t *testing.T) {
	f := start(t, nil)
	const n = checkBurst + 2
	for i := range n {
		srv := listenTCP(t)
		f.send(registration(byte(i+1), srv.Port(), gg2.TCP, gg2.Counted, "name", "s"))
	}
	f.waitRequests("register", n)
	edgetest.Eventually(t, "checks done", func() bool { return f.srv.Stats().Registered == checkBurst })
	if st := f.srv.Stats(); st.Drops["check_limited"] != 2 || st.Pending != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A wildcard address binds its own family only.
func TestWildcardBindsOneFamily(t *testing.T) {
	for _, tc := range []struct{ listen, other string }{{"0.0.0.0:0", "::1"}, {"[::]:0", "127.0.0.1"}} {
		f := start(t, func(c *Config) { c.Listen = netip.MustParseAddrPort(tc.listen) })
		other := netip.AddrPortFrom(netip.MustParseAddr(tc.other), f.addr.Port())
		if c, err := net.Dial("tcp", other.String()); err == nil {
			c.Close()
			t.Errorf("%s answers TCP on %s", tc.listen, tc.other)
		}
	}
}

// Registrations for every lobby are kept, each listed in its own lobby.
func TestOtherLobbies(t *testing.T) {
	f := start(t, nil)
	f.table.Add(room.Room{Port: 30001, MaxPlayers: 4})
	vanguard := gg2.MustParseUUID("4fd0319b-5868-4f24-8b77-568cbb18fde9")
	other := registration(1, 8190, gg2.UDP, gg2.Counted, "name", "elsewhere", "game_ver", "v1", "game_url", "http://example.org/")
	copy(other[32:48], vanguard[:])
	f.send(other)
	f.waitRequests("register", 1)
	if r := list(t, f.addr, vanguard); len(r.Servers) != 1 || r.Servers[0].KeyValues.Name() != "elsewhere" {
		t.Errorf("the other lobby lists %+v", r.Servers)
	}
	if r := list(t, f.addr, gg2.GG2LobbyUUID); len(r.Servers) != 1 || r.Servers[0].V4.Port() != 30001 {
		t.Errorf("the own lobby lists %+v", r.Servers)
	}
	snap := f.table.List()
	var got []web.Details
	f.srv.Describe(snap.Rooms, func(i int, d web.Details) {
		if snap.Rooms[i].Port != 8190 {
			t.Errorf("described room %+v", snap.Rooms[i])
		}
		got = append(got, d)
	})
	if len(got) != 1 || got[0] != (web.Details{Lobby: vanguard, Bots: 1, GameVersion: "v1", GameURL: "http://example.org/"}) {
		t.Errorf("described %+v", got)
	}
}

// A listed TCP server is checked again once its last good check is a TTL
// old: when its port stopped answering it leaves the lists a TTL after its
// last good check, though it keeps registering; once the port answers
// again it is back within a few registrations, not a TTL later. The
// re-checks of a listed server are not charged to its network's budget.
func TestListedServerCheckedAgain(t *testing.T) {
	f := start(t, func(c *Config) { c.TTL = 900 * time.Millisecond })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr).AddrPort()
	reg := registration(1, addr.Port(), gg2.TCP, gg2.Counted, "name", "flaky")
	// The server registers every 100 ms all along, as GG2 servers do
	// every 30 s.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f.send(reg)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()
	listed := func() bool { _, ok := f.table.Registered(tcpKey(addr.Port())); return ok }

	edgetest.Eventually(t, "the server listed", listed)
	l.Close()
	edgetest.Eventually(t, "the server whose port closed unlisted", func() bool { return !listed() })
	if st := f.srv.Stats(); st.Drops["unreachable"] == 0 || st.Drops["check_limited"] != 0 {
		t.Errorf("drops %v: want a failed check and none limited", st.Drops)
	}

	again, err := net.Listen("tcp", addr.String())
	if err != nil {
		t.Fatalf("the port cannot be listened on again: %v", err)
	}
	defer again.Close()
	edgetest.Eventually(t, "the server listed again once its port answers", listed)
}

// A network holds at most MaxServersPerNetwork servers, whatever its
// addresses; other networks are not charged.
func TestNetworkQuota(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxServersPerIP, c.MaxServersPerNetwork = 2, 3 })
	for i, ip := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.1.1"} {
		udptest.Send(t, udptest.Listen(t, ip), f.addr, registration(byte(i+1), 8190+uint16(i), gg2.UDP, gg2.Counted, "name", "s"))
	}
	f.waitRequests("register", 5)
	if st := f.srv.Stats(); st.Drops["network_full"] != 1 || st.Registered != 4 {
		t.Errorf("stats %+v, want 3 servers of 127.0.0.0/24 and one of 127.0.1.0/24", st)
	}
	if _, ok := f.table.Registered("gg2 127.0.1.1:8194/udp"); !ok {
		t.Errorf("the other network's server not registered: %v", f.table.RegisteredKeys())
	}
}

// New servers wait for their first check in a queue per network, and the
// networks take turns: one network's many servers do not hold up
// another's, and at most checksPerNetwork checks of one network run at
// once.
func TestChecksTakeTurnsByNetwork(t *testing.T) {
	var r reach
	r.init(DefaultConfig())
	a, b := netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24")
	for i := range 6 {
		r.push(&entry{key: fmt.Sprint("a", i), net: a})
	}
	r.push(&entry{key: "b", net: b})
	var order []string
	for e := r.next(); e != nil; e = r.next() {
		order = append(order, e.key)
		r.perNet[e.net]++ // as start counts it; none ends here
	}
	if want := []string{"a0", "b", "a1"}; !slices.Equal(order, want) {
		t.Errorf("checks started %v, want %v", order, want)
	}
	if r.queued != 4 {
		t.Errorf("%d waiting, want 4", r.queued)
	}
	// One ends: the next of its network runs.
	r.perNet[a]--
	if e := r.next(); e == nil || e.key != "a2" {
		t.Errorf("after a check of a ended: %+v", e)
	}
	// A server removed while waiting is skipped.
	r.perNet = map[netip.Prefix]int{}
	e3 := r.waiting[a][0]
	r.drop(e3)
	if e := r.next(); e == nil || e.key != "a4" {
		t.Errorf("after a3 left: %+v", e)
	}
}

// At most queuedPerCheck × MaxChecks servers wait; the next is refused.
func TestCheckQueueBounded(t *testing.T) {
	var r reach
	cfg := DefaultConfig()
	cfg.MaxChecks = 2
	r.init(cfg)
	now := time.Now()
	for i := range queuedPerCheck * 2 {
		ip := netip.AddrFrom4([4]byte{10, byte(i), 0, 1}) // each in a network of its own
		if why := r.admit(ip, now); why != "" {
			t.Fatalf("server %d: %s", i, why)
		}
		r.push(&entry{net: limit.PrefixOf(ip)})
	}
	if why := r.admit(netip.MustParseAddr("10.200.0.1"), now); why != "check_queue_full" {
		t.Errorf("past the bound: %q", why)
	}
}

// A list reply holds at most MaxListBytes: Foyer's own rooms, then one
// server of each network before a second of any; the servers left out are
// counted.
func TestListCapped(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxListBytes = MinListBytes })
	own := f.table.Add(room.Room{Port: 30001, MaxPlayers: 4})
	pad := strings.Repeat("x", 900)
	for i := range 40 {
		f.send(registration(byte(i+1), 9000+uint16(i), gg2.UDP, gg2.Counted, "name", fmt.Sprint("flood ", i), "x-pad", pad))
	}
	udptest.Send(t, udptest.Listen(t, "127.0.1.1"), f.addr, registration(100, 7000, gg2.UDP, gg2.Counted, "name", "alone", "x-pad", pad))
	f.waitRequests("register", 41)
	b := readAll(t, f.addr, gg2.ListQuery{Lobby: gg2.GG2LobbyUUID}.Append(nil))
	r, err := gg2.ParseListReply(b)
	if err != nil || len(b) > MinListBytes {
		t.Fatalf("%d bytes: %v", len(b), err)
	}
	names := map[string]bool{}
	for _, s := range r.Servers {
		names[s.KeyValues.Name()] = true
	}
	if !names[fmt.Sprint("Foyer room ", own.ID)] || !names["alone"] || !names["flood 0"] || names["flood 39"] {
		t.Errorf("listed %v", names)
	}
	if st := f.srv.Stats(); st.Drops["list_cut"] != uint64(42-len(r.Servers)) {
		t.Errorf("%d listed, %d counted as left out", len(r.Servers), st.Drops["list_cut"])
	}
}

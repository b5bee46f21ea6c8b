package tests

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/packet/gg2"
)

// gg2Metered is foyer serve with [gg2] on and its admin listener, for tests
// that wait on the GG2 counters: a registration is counted once applied.
type gg2Metered struct {
	t     *testing.T
	lobby *foyertest.Lobby
	base  string         // the admin pages
	gg2   netip.AddrPort // UDP registrations and TCP list queries
}

// gg2StartMetered runs it with keys added to [gg2] (the legacy port off
// unless keys set it) and extra appended to the config.
func gg2StartMetered(t *testing.T, keys, extra string) *gg2Metered {
	t.Helper()
	port := gg2FreePort(t)
	if !strings.Contains(keys, "legacy_listen") {
		keys += "\nlegacy_listen = \"\""
	}
	l := cliLobby(t, foyertest.Admin(netip.MustParseAddrPort("127.0.0.1:0")),
		foyertest.Config(fmt.Sprintf("[gg2]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n%s\n%s", port, keys, extra)))
	return &gg2Metered{t: t, lobby: l, base: "http://" + l.AdminAddr().String(),
		gg2: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)}
}

// metric is one series of /metrics now (0 when absent).
func (m *gg2Metered) metric(series string) float64 {
	m.t.Helper()
	return adminMetrics(m.t, m.base)[series]
}

// waitMetric waits until series reaches want.
func (m *gg2Metered) waitMetric(series string, want float64) {
	m.t.Helper()
	gg2Eventually(m.t, fmt.Sprintf("%s = %v", series, want), func() bool { return m.metric(series) >= want })
}

func gg2Drops(reason string) string { return fmt.Sprintf("foyer_gg2_drops_total{reason=%q}", reason) }

const gg2Registers = `foyer_gg2_requests_total{kind="register"}`

// A registration's key/values are cut to max_kv_bytes (1 KiB): 4 KiB of
// keys from one server are not kept, listed and re-encoded.
func TestGG2KeyValuesCapped(t *testing.T) {
	m := gg2StartMetered(t, "udp_transport = true", "")
	game := newGG2Game(t, m.gg2)
	r := gg2Registration(t, gg2.Counted, gg2.UDP, 27015, "wordy", 8, 0)
	for i := range 40 {
		r.KeyValues = append(r.KeyValues, gg2.KeyValue{Key: fmt.Sprintf("x-%02d", i), Value: []byte(strings.Repeat("v", 100))})
	}
	game.register(r)
	m.waitMetric(gg2Registers, 1)
	listed := gg2At(gg2List(t, m.gg2, gg2.GG2LobbyUUID), 27015)
	if len(listed) != 1 {
		t.Fatalf("listed %+v", listed)
	}
	size := 0
	for _, e := range listed[0].KeyValues {
		size += 1 + len(e.Key) + 2 + len(e.Value)
	}
	if size > 1024 || kv(listed[0], "name") != "wordy" || kv(listed[0], "map") != "ctf_truefort" {
		t.Errorf("listed %d keys, %d bytes of key/values", len(listed[0].KeyValues), size)
	}
	if dropped := m.metric(gg2Drops("kv_dropped")); dropped+float64(len(listed[0].KeyValues)) != float64(len(r.KeyValues)) {
		t.Errorf("%v keys dropped and %d listed of %d", dropped, len(listed[0].KeyValues), len(r.KeyValues))
	}
}

// A registration's slots and players above max_players (64) are lowered
// to it, in every list.
func TestGG2SeatsCapped(t *testing.T) {
	f := gg2Start(t, "")
	game := newGG2Game(t, f.gg2)
	port := acceptingTCP(t, make(chan uint16, 4))
	game.register(gg2Registration(t, gg2.Counted, gg2.TCP, port, "huge", 1000, 100))
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	var native []room
	gg2Eventually(t, "the server listed", func() bool {
		native = nativeAt(c.list(seq.next()), port)
		return len(native) == 1
	})
	if native[0].max != 64 || native[0].players != 64 {
		t.Errorf("native LIST shows %d of %d", native[0].players, native[0].max)
	}
	if s := gg2At(gg2List(t, f.gg2, gg2.GG2LobbyUUID), port); len(s) != 1 || s[0].Slots != 64 || s[0].Players != 64 {
		t.Errorf("GG2 list shows %+v", s)
	}
}

// A refresh that changes nothing listed does not rebuild the lists; a
// change does, once.
func TestGG2ListsRebuiltOnlyOnChange(t *testing.T) {
	m := gg2StartMetered(t, "legacy_listen = \"127.0.0.1:0\"\nudp_transport = true", "")
	legacyAddr := gg2LegacyAddr(t, m.lobby.Log)
	game := newGG2Game(t, m.gg2)
	r := gg2Registration(t, gg2.Counted, gg2.UDP, 27015, "steady", 8, 1)
	r.KeyValues = append(r.KeyValues, gg2.KeyValue{Key: "protocol_id", Value: legacyID(1)})
	game.register(r)
	m.waitMetric(gg2Registers, 1)
	encoded := func() int { return strings.Count(m.lobby.Log(), `"message":"list encoded"`) }
	query := func() {
		t.Helper()
		if s := gg2At(gg2List(t, m.gg2, gg2.GG2LobbyUUID), 27015); len(s) != 1 || s[0].Players != r.Players {
			t.Fatalf("listed %+v", s)
		}
		if l := legacyQuery(t, legacyAddr, []byte{1}); len(l) != 1 {
			t.Fatalf("legacy list %+v", l)
		}
	}
	query()
	// The log reaches the test through a pipe: wait for both lines.
	gg2Eventually(t, "both lists encoded", func() bool { return encoded() == 2 })
	for i := range 5 {
		game.register(r)
		m.waitMetric(gg2Registers, float64(2+i))
		query()
	}
	r.Players++
	game.register(r)
	m.waitMetric(gg2Registers, 7)
	query()
	gg2Eventually(t, "both lists encoded again", func() bool { return encoded() >= 4 })
	if n := encoded(); n != 4 {
		t.Errorf("the lists were encoded %d times for 2 changes, want 4", n)
	}
}

// The outcome of a reachability check is kept per target for ttl, and
// each target network gets 8 checks, then one per 10 s: forged
// registrations cannot aim a stream of connects anywhere.
func TestGG2ChecksCachedAndLimited(t *testing.T) {
	m := gg2StartMetered(t, "", "")
	game := newGG2Game(t, m.gg2)
	closed := closedTCPPort(t)
	game.register(gg2Registration(t, gg2.Counted, gg2.TCP, closed, "closed", 8, 0))
	m.waitMetric(gg2Drops("unreachable"), 1)
	game.register(gg2Registration(t, gg2.Counted, gg2.TCP, closed, "closed", 8, 0))
	m.waitMetric(gg2Drops("unreachable_cached"), 1)
	if n := m.metric(gg2Drops("unreachable")); n != 1 {
		t.Errorf("%v connects to the closed port, want 1", n)
	}
	// 7 checks left in 127.0.0.0/24's burst: 10 servers, 7 checked.
	accepts := make(chan uint16, 16)
	for i := range 10 {
		port := acceptingTCP(t, accepts)
		game.register(gg2Registration(t, gg2.Counted, gg2.TCP, port, fmt.Sprint("open ", i), 8, 0))
	}
	m.waitMetric(gg2Registers, 12)
	m.waitMetric("foyer_gg2_registered", 7)
	if n := m.metric(gg2Drops("check_limited")); n != 3 {
		t.Errorf("%v checks refused, want 3", n)
	}
	for range 7 {
		select {
		case <-accepts:
		case <-time.After(10 * time.Second):
			t.Fatal("a listed server was never connected to")
		}
	}
	if n := len(gg2List(t, m.gg2, gg2.GG2LobbyUUID).Servers); n != 7 {
		t.Errorf("%d servers listed, want 7", n)
	}
}

// closedTCPPort returns a loopback TCP port nothing listens on.
func closedTCPPort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return port
}

// acceptingTCP listens on loopback until the test ends, closes what it
// accepts and reports its port on accepted each time.
func acceptingTCP(t *testing.T, accepted chan<- uint16) uint16 {
	t.Helper()
	return acceptingTCPAt(t, "127.0.0.1", accepted)
}

// acceptingTCPAt is acceptingTCP on ip.
func acceptingTCPAt(t *testing.T, ip string, accepted chan<- uint16) uint16 {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case accepted <- port:
			default:
			}
		}
	}()
	return port
}

// holdIdle opens n TCP connections from local to addr that send nothing,
// until the test ends. Those the server refuses are closed by it at once.
func holdIdle(t *testing.T, local string, addr netip.AddrPort, n int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	for range n {
		c, err := d.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// One address holding 100 idle connections to each port does not deny
// the lists to another: every query is answered. Nor do idle connections
// from many addresses: the idle longest are cut for newcomers.
func TestGG2ListsUnderIdleFlood(t *testing.T) {
	// The timeout is long: the idle connections are cut by the limits or
	// not at all while the test runs.
	m := gg2StartMetered(t, "legacy_listen = \"127.0.0.1:0\"\nlist_timeout = \"5m\"", "")
	legacyAddr := gg2LegacyAddr(t, m.lobby.Log)
	answered := func(round string) {
		t.Helper()
		for i := range 40 {
			if l := gg2List(t, m.gg2, gg2.GG2LobbyUUID); len(l.Servers) != 0 {
				t.Fatalf("%s, query %d: %+v", round, i, l.Servers)
			}
			if l := legacyQuery(t, legacyAddr, []byte{1}); len(l) != 0 {
				t.Fatalf("%s, legacy query %d: %+v", round, i, l)
			}
		}
	}
	holdIdle(t, "127.0.0.2", m.gg2, 100)
	holdIdle(t, "127.0.0.2", legacyAddr, 100)
	m.waitMetric(gg2Drops("source_conn_limit"), 96)
	m.waitMetric(gg2Drops("legacy_source_conn_limit"), 96)
	answered("one address")
	for i := range 25 {
		ip := fmt.Sprintf("127.0.1.%d", i+1)
		holdIdle(t, ip, m.gg2, 4)
		holdIdle(t, ip, legacyAddr, 4)
	}
	answered("many addresses")
	if n := m.metric("foyer_gg2_list_connections"); n > 2*64 {
		t.Errorf("%v list connections held", n)
	}
}

// A wildcard IPv4 address binds IPv4 only, on every port: nothing answers
// on ::1, over UDP or TCP.
func TestGG2WildcardBindsIPv4Only(t *testing.T) {
	gg2Port, legacyPort, webPort := gg2FreePort(t), gg2FreePort(t), gg2FreePort(t)
	startServer(t, gg2Limits, gg2Section(fmt.Sprintf(
		"enabled = true\nlisten = \"0.0.0.0:%d\"\nlegacy_listen = \"0.0.0.0:%d\"\n[web]\nlisten = \"0.0.0.0:%d\"",
		gg2Port, legacyPort, webPort)))
	for _, port := range []uint16{gg2Port, legacyPort, webPort} {
		v4 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
		c, err := net.DialTimeout("tcp", v4.String(), 5*time.Second)
		if err != nil {
			t.Fatalf("TCP %v: %v", v4, err)
		}
		c.Close()
		v6 := netip.AddrPortFrom(netip.IPv6Loopback(), port)
		if c, err := net.DialTimeout("tcp", v6.String(), 5*time.Second); err == nil {
			c.Close()
			t.Errorf("TCP %v answers", v6)
		}
	}
	for _, port := range []uint16{gg2Port, legacyPort} {
		// Nothing bound: the kernel answers with port unreachable, which a
		// connected socket reads as a refusal.
		v6 := netip.AddrPortFrom(netip.IPv6Loopback(), port)
		u, err := net.DialUDP("udp6", nil, net.UDPAddrFromAddrPort(v6))
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		if _, err := u.Write(gg2.Unregister{}.Append(nil)); err != nil {
			t.Fatal(err)
		}
		_ = u.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := u.Read(make([]byte, 16)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP %v: %v, want connection refused", v6, err)
		}
	}
}

// gg2LegacyAddr reads the legacy port's address from the log line of a
// front-end serving it.
func gg2LegacyAddr(t *testing.T, log func() string) netip.AddrPort {
	t.Helper()
	var ap netip.AddrPort
	gg2Eventually(t, "the legacy port's address", func() bool {
		for _, line := range strings.Split(log(), "\n") {
			if !strings.Contains(line, `"message":"gg2 front-end serving"`) {
				continue
			}
			_, rest, ok := strings.Cut(line, `"legacy_listen":"`)
			addr, _, _ := strings.Cut(rest, `"`)
			var err error
			if ap, err = netip.ParseAddrPort(addr); ok && err == nil {
				return true
			}
		}
		return false
	})
	return ap
}

// legacyQuery sends a legacy query (the version bytes) and reads the
// reply to the end, parsed by hand (see gg2_legacy_test.go).
func legacyQuery(t *testing.T, to netip.AddrPort, version []byte) []legacyServer {
	t.Helper()
	b := tcpQuery(t, to, version)
	servers, err := parseLegacyReply(b)
	if err != nil {
		t.Fatalf("legacy reply %x: %v", b, err)
	}
	return servers
}

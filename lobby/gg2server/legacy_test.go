package gg2server

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// startLegacy serves both ports; the legacy one is f.srv.Addrs()[1].
func startLegacy(t *testing.T, tweak func(*Config)) (*fixture, netip.AddrPort) {
	t.Helper()
	f := start(t, func(c *Config) {
		c.LegacyListen = netip.MustParseAddrPort("127.0.0.1:0")
		if tweak != nil {
			tweak(c)
		}
	})
	return f, f.srv.Addrs()[1]
}

func legacyRegistration(t testing.TB, v gg2.LegacyVersion, port uint16, info string) []byte {
	t.Helper()
	r := gg2.LegacyRegistration{Version: v, Port: port, Info: []byte(info)}
	b, err := r.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// legacyList queries version over TCP and reads the reply to the end.
func legacyList(t *testing.T, addr netip.AddrPort, v gg2.LegacyVersion) gg2.LegacyReply {
	t.Helper()
	b := readAll(t, addr, v.Append(nil))
	r, err := gg2.ParseLegacyReply(b)
	if err != nil {
		t.Fatalf("legacy reply %x: %v", b, err)
	}
	return r
}

func infos(r gg2.LegacyReply) []string {
	var out []string
	for _, s := range r.Servers {
		out = append(out, fmt.Sprintf("%s @%v", s.Info, s.Addr))
	}
	return out
}

// A legacy registration is a TCP server in the GG2 lobby: listed once a
// connect works, with its info string read into fields, and rebuilt from
// them for legacy queries of its version.
func TestLegacyRegisterAndQuery(t *testing.T) {
	f, legacy := startLegacy(t, nil)
	srv := listenTCP(t)
	v1 := gg2.ShortLegacyVersion(1)
	f.sendTo(legacy, legacyRegistration(t, v1, srv.Port(), "!private![ctf_a]  Bacon  [5/10] - OHU"))
	edgetest.Eventually(t, "listed", func() bool { _, ok := f.table.Registered(tcpKey(srv.Port())); return ok })

	s, ok := byPort(list(t, f.addr, gg2.GG2LobbyUUID), srv.Port())
	want := gg2.KeyValues{{Key: "name", Value: []byte("Bacon")}, {Key: "game", Value: []byte(ohuGame)},
		{Key: "game_short", Value: []byte("ohu")}, {Key: "game_url", Value: []byte(ohuGameURL)},
		{Key: "map", Value: []byte("ctf_a")}, {Key: "protocol_id", Value: v1.ID[:]}}
	if !ok || s.Transport != gg2.TCP || s.Flags != gg2.FlagPassword || s.Slots != 10 || s.Players != 5 ||
		s.Bots != 0 || !s.KeyValues.Equal(want) || s.V4 != srv {
		t.Errorf("listed as %+v", s)
	}
	wantInfo := fmt.Sprintf("!private![ctf_a] Bacon [5/10] @%v", srv)
	if got := infos(legacyList(t, legacy, v1)); len(got) != 1 || got[0] != wantInfo {
		t.Errorf("version 1 lists %q", got)
	}
	// The long form of the same id finds it too; another version does not.
	if got := infos(legacyList(t, legacy, gg2.LegacyVersion{ID: v1.ID, Long: true})); len(got) != 1 || got[0] != wantInfo {
		t.Errorf("version 1, long form, lists %q", got)
	}
	if got := legacyList(t, legacy, gg2.ShortLegacyVersion(2)); len(got.Servers) != 0 {
		t.Errorf("version 2 lists %q", infos(got))
	}
	if st := f.srv.Stats(); st.Requests["legacy_register"] != 1 || st.Requests["legacy_list"] != 3 {
		t.Errorf("stats %+v", st)
	}
}

// The game a legacy registration is listed with follows its mod, as the
// reference lobby lists it.
func TestLegacyGame(t *testing.T) {
	for _, tc := range []struct {
		info, game, short string
	}{
		{"a [1/2]", string(legacyGame), "old"},
		{"a [1/2] - Vanilla+", "Vanilla+", ""},
		{"a [1/2] - A mod with a long name", "A mod with a long name", "old"},
	} {
		in := gg2.ParseLegacyInfo([]byte(tc.info))
		kv := legacyKV(nil, &in, &gg2.LegacyBaseUUID)
		short, hasShort := kv.Get("game_short")
		if game, _ := kv.Get("game"); string(game) != tc.game || string(short) != tc.short || hasShort != (tc.short != "") {
			t.Errorf("%q: game %q, short %q", tc.info, game, short)
		}
	}
}

// A legacy server is listed only once a TCP connect to it works.
func TestLegacyReachability(t *testing.T) {
	f, legacy := startLegacy(t, nil)
	refused := closedPort(t)
	f.sendTo(legacy, legacyRegistration(t, gg2.ShortLegacyVersion(1), refused, "nobody [0/8]"))
	f.waitDrop("unreachable", 1)
	if got := legacyList(t, legacy, gg2.ShortLegacyVersion(1)); len(got.Servers) != 0 {
		t.Errorf("listed %q", infos(got))
	}
}

// New-style servers with a protocol_id appear in legacy queries for it,
// bots and all; Foyer's own rooms appear in every legacy query, or only
// in that of Config.ProtocolID when it is set.
func TestLegacyCrossListing(t *testing.T) {
	v1, v2 := gg2.ShortLegacyVersion(1), gg2.ShortLegacyVersion(2)
	for _, own := range []gg2.UUID{{}, v2.ID} {
		f, legacy := startLegacy(t, func(c *Config) { c.ProtocolID = own })
		r := f.table.Add(room.Room{Port: 30001, State: packet.Waiting, Players: 1, MaxPlayers: 4, Map: "arena"})
		f.send(registration(1, 8190, gg2.UDP, gg2.Counted, "name", "new", "map", "m", "protocol_id", string(v1.ID[:])))
		f.send(registration(2, 8191, gg2.UDP, gg2.Counted, "name", "no protocol"))
		f.waitRequests("register", 2)
		ownRoom := fmt.Sprintf("[arena] Foyer room %d [1/4] @127.0.0.1:30001", r.ID)
		wantV1 := []string{"!private![m] new [3+1/10] @127.0.0.1:8190"}
		wantV2 := []string(nil)
		if own == (gg2.UUID{}) {
			wantV1 = append([]string{ownRoom}, wantV1...)
			wantV2 = []string{ownRoom}
		} else {
			wantV2 = []string{ownRoom}
		}
		if got := infos(legacyList(t, legacy, v1)); fmt.Sprint(got) != fmt.Sprint(wantV1) {
			t.Errorf("own protocol %v: version 1 lists %q, want %q", own, got, wantV1)
		}
		if got := infos(legacyList(t, legacy, v2)); fmt.Sprint(got) != fmt.Sprint(wantV2) {
			t.Errorf("own protocol %v: version 2 lists %q, want %q", own, got, wantV2)
		}
		s, _ := byPort(list(t, f.addr, gg2.GG2LobbyUUID), 30001)
		pid, has := s.KeyValues.Get("protocol_id")
		if has != (own != gg2.UUID{}) || has && gg2.UUID(pid) != own {
			t.Errorf("own room's protocol_id %x, configured %v", pid, own)
		}
	}
}

// A legacy reply lists at most 255 servers.
func TestLegacyAtMost255(t *testing.T) {
	f, legacy := startLegacy(t, func(c *Config) { c.MaxServersPerIP, c.MaxServersPerNetwork = 300, 300 })
	v1 := gg2.ShortLegacyVersion(1).ID
	// In rounds, so that the socket's buffer never overflows.
	for i := range 300 {
		f.send(registration(byte(i), 10000+uint16(i), gg2.UDP, gg2.Counted, "name", "s", "protocol_id", string(v1[:])))
		if i%100 == 99 {
			f.waitRequests("register", uint64(i+1))
		}
	}
	if got := legacyList(t, legacy, gg2.ShortLegacyVersion(1)); len(got.Servers) != 255 {
		t.Errorf("listed %d servers", len(got.Servers))
	}
}

// Malformed legacy datagrams and queries are dropped, counted and never
// answered; a silent client is cut after the timeout.
func TestLegacyMalformed(t *testing.T) {
	f, legacy := startLegacy(t, func(c *Config) { c.ListTimeout = 200 * time.Millisecond })
	good := legacyRegistration(t, gg2.ShortLegacyVersion(1), 8190, "x")
	for _, b := range [][]byte{
		[]byte("no magic at all"),
		good[:len(good)-1],
		append(append([]byte(nil), good...), 0),
		legacyRegistration(t, gg2.LegacyVersion{ID: gg2.LegacyBaseUUID, Long: true}, 8190, "y")[:12],
		append(append([]byte(nil), good[:7]...), 0, 0, 1, 'z'), // port 0
	} {
		f.sendTo(legacy, b)
	}
	f.sendTo(legacy, good)
	f.waitRequests("legacy_register", 1)
	st := f.srv.Stats()
	for _, r := range []string{"legacy_truncated", "legacy_length", "legacy_port"} {
		if st.Drops[r] == 0 {
			t.Errorf("no %s drop: %v", r, st.Drops)
		}
	}
	if st.KernelDrops != 1 { // no magic: the socket filter's
		t.Errorf("kernel drops %d, want 1", st.KernelDrops)
	}
	if st.Requests["legacy_register"] != 1 {
		t.Errorf("stats %+v", st)
	}
	// Nothing listens at its port: the check fails and the server is not
	// kept.
	f.waitDrop("unreachable", 1)
	if st := f.srv.Stats(); st.Pending != 0 || st.Registered != 0 {
		t.Errorf("stats %+v", st)
	}

	// A long version cut short, then the end: no reply.
	c := dial(t, legacy)
	if _, err := c.Write([]byte{128, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	if b := closedByServer(t, c); len(b) != 0 {
		t.Errorf("a cut query got %x", b)
	}
	f.waitDrop("legacy_short_query", 1)
	// Half a long version, then silence: cut after the timeout.
	c = dial(t, legacy)
	if _, err := c.Write([]byte{128, 1}); err != nil {
		t.Fatal(err)
	}
	if b := closedByServer(t, c); len(b) != 0 {
		t.Errorf("a silent client got %x", b)
	}
	f.waitDrop("legacy_timeout", 1)
}

// sendTo sends b from the fixture's game server socket to addr.
func (f *fixture) sendTo(addr netip.AddrPort, b []byte) {
	f.t.Helper()
	if _, err := f.udp.WriteToUDPAddrPort(b, addr); err != nil {
		f.t.Fatal(err)
	}
}

// The legacy port bounds its connections like the new-style port.
func TestLegacyConnsPerSource(t *testing.T) {
	f, legacy := startLegacy(t, func(c *Config) { c.MaxListConnsPerIP = 1 })
	dial(t, legacy)
	edgetest.Eventually(t, "one connection", func() bool { return f.srv.Stats().ListConns == 1 })
	c := dial(t, legacy)
	_, _ = c.Write([]byte{1})
	if b, err := io.ReadAll(c); len(b) != 0 && err == nil {
		t.Errorf("a second connection got %x", b)
	}
	f.waitDrop("legacy_source_conn_limit", 1)
	other, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, net.TCPAddrFromAddrPort(legacy))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, _ = other.Write([]byte{1})
	if b, _ := io.ReadAll(other); len(b) != 1 || b[0] != 0 {
		t.Errorf("another source got %x, want the empty list", b)
	}
}

// Legacy registrations draw from the per-source buckets every edge shares.
func TestLegacyRateLimited(t *testing.T) {
	f := startLimited(t, func(c *Config) { c.LegacyListen = netip.MustParseAddrPort("127.0.0.1:0") }, edgetest.Limits(0.001, 2))
	legacy := f.srv.Addrs()[1]
	for i := range 3 {
		f.sendTo(legacy, legacyRegistration(t, gg2.ShortLegacyVersion(1), 8190+uint16(i), "s"))
	}
	f.waitDrop("rate_limited", 1)
	if st := f.srv.Stats(); st.Requests["legacy_register"] != 2 {
		t.Errorf("stats %+v", st)
	}
}

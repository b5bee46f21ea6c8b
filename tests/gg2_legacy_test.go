package tests

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// The legacy protocol, written here by hand from its rules (see
// docs/neighbours.md), independently of package gg2: integers are
// little-endian; a registration is the magic, a version, the game port, an
// info length and the info string; a version is one byte v (not 128), the
// protocol id legacyBase + v, or 128 and the 16-byte id.
var (
	legacyMagic = []byte{0x04, 0x08, 0x0f, 0x10, 0x17, 0x2a}
	// legacyBase is dea41970-4cea-a588-df40-62faef6f1738.
	legacyBase = [16]byte{0xde, 0xa4, 0x19, 0x70, 0x4c, 0xea, 0xa5, 0x88, 0xdf, 0x40, 0x62, 0xfa, 0xef, 0x6f, 0x17, 0x38}
)

// legacyID is the protocol id of version v: legacyBase + v, as a 128-bit
// big-endian number.
func legacyID(v byte) []byte {
	id := legacyBase
	carry := uint(v)
	for i := 15; i >= 0 && carry != 0; i-- {
		sum := uint(id[i]) + carry
		id[i], carry = byte(sum), sum>>8
	}
	return id[:]
}

// legacyLong is the 17-byte version naming id.
func legacyLong(id []byte) []byte { return append([]byte{128}, id...) }

func legacyDatagram(version []byte, port uint16, info string) []byte {
	b := append(slices.Clone(legacyMagic), version...)
	b = binary.LittleEndian.AppendUint16(b, port)
	b = append(b, byte(len(info)))
	return append(b, info...)
}

// legacyServer is one entry of a legacy query's reply.
type legacyServer struct {
	info string
	addr netip.AddrPort
}

func (s legacyServer) String() string { return fmt.Sprintf("%q@%v", s.info, s.addr) }

// parseLegacyReply reads a count byte, then per server an info length,
// the info, an IPv4 address and a little-endian port; nothing may follow.
func parseLegacyReply(b []byte) ([]legacyServer, error) {
	if len(b) < 1 {
		return nil, errors.New("empty")
	}
	var out []legacyServer
	rest := b[1:]
	for range int(b[0]) {
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+6 {
			return nil, errors.New("cut short")
		}
		n := int(rest[0])
		ip := netip.AddrFrom4([4]byte(rest[1+n : 5+n]))
		out = append(out, legacyServer{string(rest[1 : 1+n]), netip.AddrPortFrom(ip, binary.LittleEndian.Uint16(rest[5+n:]))})
		rest = rest[7+n:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the last server", len(rest))
	}
	return out, nil
}

func loopback(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
}

// legacyStart runs foyer serve with both GG2 ports on loopback; extra is
// added to [gg2].
func legacyStart(t *testing.T, extra string) (*gg2Foyer, netip.AddrPort) {
	t.Helper()
	f := gg2Start(t, "legacy_listen = \"127.0.0.1:0\"\n"+extra)
	return f, gg2LegacyAddr(t, f.logs.String)
}

// Legacy registrations in both version forms: listed after a TCP connect
// to their port works, their info strings read into the new-style list's
// fields and rebuilt for legacy queries of their protocol id only.
func TestLegacyRegistrationAndQuery(t *testing.T) {
	f, legacyAddr := legacyStart(t, "")
	accepts := make(chan uint16, 8)
	simple, uuid, closed := acceptingTCP(t, accepts), acceptingTCP(t, accepts), closedTCPPort(t)
	modID := []byte{0x5c, 0x1e, 0x5c, 0x1e, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6}
	server := newGG2Game(t, legacyAddr)
	server.send(legacyDatagram([]byte{1}, simple, "!private![ctf_truefort]  Bacon's server [5/10] - OHU"))
	server.send(legacyDatagram(legacyLong(modID), uuid, "[koth_harvest] Mod server [2/12] - Vanilla+"))
	server.send(legacyDatagram([]byte{1}, closed, "Nobody home [0/8]"))

	var list gg2.ListReply
	gg2Eventually(t, "both reachable servers listed", func() bool {
		list = gg2List(t, f.gg2, gg2.GG2LobbyUUID)
		return len(gg2At(list, simple)) == 1 && len(gg2At(list, uuid)) == 1
	})
	gg2Eventually(t, "the closed port checked", func() bool { return len(f.logs.lines("server unreachable")) == 1 })
	a := gg2At(list, simple)[0]
	if a.Transport != gg2.TCP || a.Flags != gg2.FlagPassword || a.Slots != 10 || a.Players != 5 || a.Bots != 0 ||
		kv(a, "name") != "Bacon's server" || kv(a, "map") != "ctf_truefort" || kv(a, "game") != "Orpheon's Hosting Utilities" ||
		kv(a, "game_short") != "ohu" || kv(a, "game_url") != "http://www.ganggarrison.com/forums/index.php?topic=28839.0" ||
		kv(a, "protocol_id") != string(legacyID(1)) {
		t.Errorf("version 1 server listed as %+v", a)
	}
	b := gg2At(list, uuid)[0]
	if _, short := b.KeyValues.Get("game_short"); kv(b, "name") != "Mod server" || kv(b, "game") != "Vanilla+" || short ||
		kv(b, "map") != "koth_harvest" || kv(b, "protocol_id") != string(modID) || b.Slots != 12 || b.Players != 2 || b.Flags != 0 {
		t.Errorf("UUID-version server listed as %+v", b)
	}
	if len(gg2At(list, closed)) != 0 || len(list.Servers) != 2 {
		t.Errorf("listed %+v", list.Servers)
	}

	wantA := []legacyServer{{"!private![ctf_truefort] Bacon's server [5/10]", loopback(simple)}}
	wantB := []legacyServer{{"[koth_harvest] Mod server [2/12]", loopback(uuid)}}
	for _, q := range []struct {
		name    string
		version []byte
		want    []legacyServer
	}{
		{"version 1", []byte{1}, wantA},
		{"version 1, long form", legacyLong(legacyID(1)), wantA},
		{"the mod's id", legacyLong(modID), wantB},
		{"version 2", []byte{2}, nil},
	} {
		if got := legacyQuery(t, legacyAddr, q.version); !slices.Equal(got, q.want) {
			t.Errorf("%s lists %v, want %v", q.name, got, q.want)
		}
	}
}

// New-style servers carrying a protocol_id appear in legacy queries for
// it; Foyer's own rooms appear in both lists, in the new style with the
// configured game.
func TestLegacyCrossListing(t *testing.T) {
	f, legacyAddr := legacyStart(t, "udp_transport = true")
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	ownID, ownPort := c.request(compact, createRoom, seq.next(), nil).roomPort(t)

	game := newGG2Game(t, f.gg2)
	r := gg2Registration(t, gg2.Counted, gg2.UDP, 27015, "new style", 8, 3)
	r.Bots, r.Flags = 2, gg2.FlagPassword
	r.KeyValues = append(r.KeyValues, gg2.KeyValue{Key: "protocol_id", Value: legacyID(1)})
	game.register(r)
	game.register(gg2Registration(t, gg2.Counted, gg2.UDP, 27016, "no protocol id", 8, 0))
	gg2Eventually(t, "both listed", func() bool {
		l := gg2List(t, f.gg2, gg2.GG2LobbyUUID)
		return len(gg2At(l, 27015)) == 1 && len(gg2At(l, 27016)) == 1
	})
	// The creator's seat may lapse while the test runs: 0 or 1 player.
	ownInfo := regexp.MustCompile(fmt.Sprintf(`^\[default\] Foyer room %d \[[01]/4\]$`, ownID))
	v1 := legacyQuery(t, legacyAddr, []byte{1})
	if len(v1) != 2 || !ownInfo.MatchString(v1[0].info) || v1[0].addr != loopback(ownPort) ||
		v1[1] != (legacyServer{"!private![ctf_truefort] new style [3+2/8]", loopback(27015)}) {
		t.Errorf("version 1 lists %v", v1)
	}
	if v2 := legacyQuery(t, legacyAddr, []byte{2}); len(v2) != 1 || !ownInfo.MatchString(v2[0].info) {
		t.Errorf("version 2 lists %v, want the own room alone", v2)
	}
	own := gg2At(gg2List(t, f.gg2, gg2.GG2LobbyUUID), ownPort)
	if len(own) != 1 || kv(own[0], "game") != "foyer" {
		t.Errorf("own room listed as %+v", own)
	}
}

// A legacy reply holds at most 255 servers.
func TestLegacyAtMost255Servers(t *testing.T) {
	f, legacyAddr := legacyStart(t, "max_servers_per_ip = 300\nmax_servers_per_network = 300\nudp_transport = true")
	game := newGG2Game(t, f.gg2)
	// In rounds, so that the lobby's socket buffer never overflows.
	for round := range 3 {
		for i := range 100 {
			r := gg2Registration(t, gg2.Counted, gg2.UDP, uint16(20000+100*round+i), "s", 8, 0)
			r.KeyValues = append(r.KeyValues, gg2.KeyValue{Key: "protocol_id", Value: legacyID(1)})
			game.register(r)
		}
		gg2Eventually(t, fmt.Sprintf("%d servers listed", 100*(round+1)), func() bool {
			return len(gg2List(t, f.gg2, gg2.GG2LobbyUUID).Servers) == 100*(round+1)
		})
	}
	got := legacyQuery(t, legacyAddr, []byte{1})
	seen := map[netip.AddrPort]bool{}
	for _, s := range got {
		seen[s.addr] = true
	}
	if len(got) != 255 || len(seen) != 255 {
		t.Errorf("%d servers listed, %d distinct; want 255", len(got), len(seen))
	}
}

// Malformed legacy datagrams and queries are dropped, counted and never
// answered; a client that stops mid-query is cut after list_timeout.
func TestLegacyMalformedDropped(t *testing.T) {
	m := gg2StartMetered(t, "legacy_listen = \"127.0.0.1:0\"\nlist_timeout = \"500ms\"", "")
	legacyAddr := gg2LegacyAddr(t, m.lobby.Log)
	accepts := make(chan uint16, 4)
	port := acceptingTCP(t, accepts)
	good := legacyDatagram([]byte{1}, port, "Good [1/8]")
	server := newGG2Game(t, legacyAddr)
	for _, b := range [][]byte{
		[]byte("garbage"),
		append([]byte{0x04, 0x08, 0x0f, 0x10, 0x17, 0x2b}, good[6:]...), // wrong magic
		legacyMagic, // no version
		append(slices.Clone(legacyMagic), 128, 1, 2), // a long version cut short
		good[:len(good)-1],                           // info shorter than its length
		append(slices.Clone(good), '!'),              // info longer than its length
		legacyDatagram([]byte{1}, 0, "port 0"),
	} {
		server.send(b)
	}
	server.send(good)
	m.waitMetric(`foyer_gg2_requests_total{kind="legacy_register"}`, 1)
	m.waitMetric("foyer_gg2_registered", 1)
	// The first four cannot be a legacy registration by their magic or
	// length alone: the socket filter drops them in the kernel.
	for series, want := range map[string]float64{
		"foyer_gg2_kernel_drops_total": 4,
		gg2Drops("legacy_truncated"):   1, gg2Drops("legacy_length"): 1, gg2Drops("legacy_port"): 1,
	} {
		if got := m.metric(series); got != want {
			t.Errorf("%s: %v, want %v", series, got, want)
		}
	}
	if got := legacyQuery(t, legacyAddr, []byte{1}); len(got) != 1 || got[0].addr != loopback(port) {
		t.Errorf("listed %v", got)
	}

	// A long version cut short: the connection ends unanswered.
	noReply := func(b []byte, closeWrite bool) {
		t.Helper()
		c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(legacyAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if closeWrite {
			c.CloseWrite()
		}
		if got, err := io.ReadAll(c); len(got) != 0 || err != nil {
			t.Errorf("query %x got %x, %v; want the end and nothing", b, got, err)
		}
	}
	noReply([]byte{128, 1, 2, 3}, true)
	m.waitMetric(gg2Drops("legacy_short_query"), 1)
	// Half a long version, then silence: cut after the timeout.
	noReply([]byte{128, 1}, false)
	m.waitMetric(gg2Drops("legacy_timeout"), 1)
}

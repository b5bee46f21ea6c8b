package foyertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// Option changes the lobby Start or StartBinary runs.
type Option func(*settings)

// settings is what the options chose; configText renders it as the
// config file both Start and StartBinary run from.
type settings struct {
	maxPlayers, maxInstances, warm int
	minPlayers                     int
	countdown, match, idle         time.Duration
	reconnectGrace                 time.Duration
	first, last                    uint16
	listen                         string
	admin, adminToken              string
	binary                         string
	extra                          []string
	wrap                           []string

	instance string // the per-lobby path the rooms are run from
}

// Test-friendly defaults: small, and a match short enough to play out in
// a test.
const (
	defaultMaxPlayers   = 4
	defaultMaxInstances = 8
	defaultCountdown    = time.Second
	defaultMatch        = 2 * time.Second
	defaultIdle         = 30 * time.Second
)

// ReconnectGrace sets how long a room keeps the seat of a player it lost
// who holds a seat token (default 30s, as config.toml's).
func ReconnectGrace(d time.Duration) Option { return func(s *settings) { s.reconnectGrace = d } }

// MaxPlayers sets the players per room (default 4).
func MaxPlayers(n int) Option { return func(s *settings) { s.maxPlayers = n } }

// MinPlayers sets how many ready players start a room's countdown
// (default 2, or MaxPlayers if smaller).
func MinPlayers(n int) Option { return func(s *settings) { s.minPlayers = n } }

// MaxInstances sets how many rooms may run at once (default 8).
func MaxInstances(n int) Option { return func(s *settings) { s.maxInstances = n } }

// Warm sets how many rooms are started ahead of demand (default 0).
func Warm(n int) Option { return func(s *settings) { s.warm = n } }

// Countdown sets a room's countdown from all ready to the start (default
// 1 s).
func Countdown(d time.Duration) Option { return func(s *settings) { s.countdown = d } }

// MatchDuration sets the length of a match (default 2 s).
func MatchDuration(d time.Duration) Option { return func(s *settings) { s.match = d } }

// IdleTimeout sets how long a room nobody is in lives ([supervisor]
// empty_timeout; default 30 s): it then ends, reaped as "idle".
func IdleTimeout(d time.Duration) Option { return func(s *settings) { s.idle = d } }

// Ports sets the UDP ports, inclusive, handed to rooms. By default the
// harness picks a range below Linux's ephemeral ports that was free when
// the lobby started, and different from every other lobby of the test
// process.
func Ports(first, last uint16) Option {
	return func(s *settings) { s.first, s.last = first, last }
}

// Listen sets the lobby's UDP address (default 127.0.0.1 on a free port).
// With StartBinary an address of another network namespace (see Wrap) is
// where the lobby is reached.
func Listen(addr netip.AddrPort) Option {
	return func(s *settings) { s.listen = addr.String() }
}

// Admin turns on the admin HTTP listener on addr, such as 127.0.0.1:0 for
// a free port (see Lobby.AdminAddr). It is off by default, so that the
// lobbies of tests running in parallel do not compete for its default
// port.
func Admin(addr netip.AddrPort) Option { return func(s *settings) { s.admin = addr.String() } }

// AdminToken sets the bearer token the admin listener asks for ([admin]
// token, at least 16 characters).
func AdminToken(token string) Option { return func(s *settings) { s.adminToken = token } }

// Binary sets the foyer binary whose `instance` subcommand runs the rooms,
// and that StartBinary runs; see the package doc for the default.
func Binary(path string) Option { return func(s *settings) { s.binary = path } }

// Config appends TOML to the config file Start and StartBinary run from,
// after its lobby, supervisor, room, admin and log sections: whole
// sections of its own, such as [gg2].
func Config(toml string) Option { return func(s *settings) { s.extra = append(s.extra, toml) } }

// Wrap runs StartBinary's `foyer serve` under a command, for example
// Wrap("ip", "netns", "exec", "ns1") to run it in a network namespace. The
// wrapper must exec foyer (so SIGTERM reaches it). A lobby in another
// namespace is reached from there only: Addr is its address there, and
// Client is of no use. Start ignores Wrap.
func Wrap(argv ...string) Option { return func(s *settings) { s.wrap = argv } }

func newSettings(t testing.TB, opts []Option) *settings {
	t.Helper()
	s := &settings{
		maxPlayers:   defaultMaxPlayers,
		maxInstances: defaultMaxInstances,
		minPlayers:   2,
		countdown:    defaultCountdown,
		match:        defaultMatch,
		idle:         defaultIdle,
		listen:       "127.0.0.1:0",
	}
	for _, o := range opts {
		o(s)
	}
	s.minPlayers = min(s.minPlayers, s.maxPlayers)
	if s.first == 0 && s.last == 0 {
		s.first, s.last = freePortRange(t, s.maxInstances+4) // spares for ports found taken
	}
	s.instance = instanceLink(t, binaryPath(t, s.binary))
	return s
}

// The test-friendly values both Start and StartBinary use beyond the
// options: tests send bursts from one address, and rooms run on a loaded
// machine (a generous start, quick reuse of ports).
const (
	testRate         = 1000
	testBurst        = 2000
	testCreateRate   = 100
	testCreateBurst  = 100
	testSpawnTimeout = 20 * time.Second
	testStopGrace    = 3 * time.Second
	testPortCooldown = 50 * time.Millisecond
)

// bind is where rooms bind their ports: where the lobby listens, so a
// lobby on loopback opens no port on the network; invalid for a lobby on
// every address.
func (s *settings) bind() netip.Addr {
	ap, err := netip.ParseAddrPort(s.listen)
	if err != nil || ap.Addr().IsUnspecified() {
		return netip.Addr{}
	}
	return ap.Addr()
}

// configText renders the settings as the config file StartBinary runs
// from: the values Start builds from, in TOML. The log is JSON at debug
// level: it is read by tests, and shown only when one fails.
func (s *settings) configText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[lobby]\nlisten = %q\nrate = %d\nburst = %d\ncreate_rate = %d\ncreate_burst = %d\n",
		s.listen, testRate, testBurst, testCreateRate, testCreateBurst)
	fmt.Fprintf(&b, "create_network_rate = %d\ncreate_network_burst = %d\nunverified_create_rate = %d\nunverified_create_burst = %d\n\n",
		testCreateRate, testCreateBurst, testCreateRate, testCreateBurst)
	fmt.Fprintf(&b, "[supervisor]\nports = \"%d-%d\"\nmax_instances = %d\nmax_players = %d\nwarm = %d\ncommand = [%q, \"instance\"]\n",
		s.first, s.last, s.maxInstances, s.maxPlayers, s.warm, s.instance)
	// Every player of a test is 127.0.0.1, as a LAN party behind one
	// address: the quotas of one address and one network are the host's.
	fmt.Fprintf(&b, "seats_per_address = %d\nrooms_per_network = %d\n", s.maxPlayers, s.maxInstances)
	if ip := s.bind(); ip.IsValid() {
		fmt.Fprintf(&b, "bind = %q\n", ip.String())
	}
	if s.reconnectGrace > 0 {
		fmt.Fprintf(&b, "reconnect_grace = %q\n", s.reconnectGrace)
	}
	fmt.Fprintf(&b, "spawn_timeout = %q\nstop_grace = %q\nport_cooldown = %q\nempty_timeout = %q\n\n",
		testSpawnTimeout, testStopGrace, testPortCooldown, s.idle)
	fmt.Fprintf(&b, "[room]\nmin_players = %d\ncountdown = %q\nmatch_duration = %q\n\n", s.minPlayers, s.countdown, s.match)
	fmt.Fprintf(&b, "[admin]\nlisten = %q\n", s.admin)
	if s.adminToken != "" {
		fmt.Fprintf(&b, "token = %q\n", s.adminToken)
	}
	b.WriteString("\n")
	b.WriteString("[log]\nlevel = \"debug\"\nformat = \"json\"\n")
	for _, e := range s.extra {
		b.WriteString("\n" + e + "\n")
	}
	return b.String()
}

// Room port ranges are taken from portBase up, in blocks, below Linux's
// ephemeral ports (32768 and up) where the kernel puts client sockets.
// Each test process starts at a random block so that parallel packages
// rarely meet, and no two lobbies of one process get the same block.
const (
	portBase  = 11000
	portLimit = 20000
)

var portBlocks struct {
	mu   sync.Mutex
	next int
}

// freePortRange returns n consecutive ports, each free on 127.0.0.1 when
// checked. A port taken later is survived: the supervisor quarantines it
// and hands the room another.
func freePortRange(t testing.TB, n int) (uint16, uint16) {
	t.Helper()
	blocks := (portLimit - portBase) / n
	portBlocks.mu.Lock()
	defer portBlocks.mu.Unlock()
	if portBlocks.next == 0 {
		portBlocks.next = rand.IntN(blocks) + 1
	}
	for range blocks {
		b := portBlocks.next % blocks
		portBlocks.next++
		first := portBase + b*n
		if allFree(first, n) {
			return uint16(first), uint16(first + n - 1)
		}
	}
	t.Fatalf("foyertest: no %d free UDP ports in %d-%d", n, portBase, portLimit)
	return 0, 0
}

func allFree(first, n int) bool {
	for p := first; p < first+n; p++ {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

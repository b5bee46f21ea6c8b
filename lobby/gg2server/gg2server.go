// Package gg2server is Foyer's GG2-style lobby front-end: game servers register
// themselves over UDP and become rooms in the one room table, and browsers
// ask over TCP, on the same port, for the list of every room. A second
// port speaks the legacy protocol older Gang Garrison 2 versions use, over
// the same table.
//
// UDP datagrams go through, in order:
//
//	Classify / magic   neither registration nor unregister: dropped
//	limit.Sources      per source IP, shared with the other edges
//	full parse         malformed, no name: dropped, counted
//	transport          UDP refused unless Config.UDPTransport
//	the table          keyed by source IP, port and transport, each key
//	                   owned by the server ID that registered it first;
//	                   quotas per IP and per network; key/values cut to
//	                   MaxKVBytes, seats to MaxPlayers; a TCP server
//	                   appears only once a TCP connect to it works
//
// A registered server stays listed until TTL after its last registration,
// or until an unregister carrying the server ID it registered with, sent
// from its IP. The ID is a secret between server and lobby: a registration
// with another ID for a key that is held changes nothing, and neither does
// an unregister with a wrong ID or from another address.
//
// Nothing unproven is offered as a room of this host. A TCP server is
// listed once a connect to it worked, whatever its source address (a
// datagram can carry the lobby's own). UDP servers, which the seed
// reserves, are refused; an operator may let them in, and then they are
// listed by this front-end as registered but marked Unchecked, so that the
// native lobby never offers them.
//
// The TCP connect that checks a server is aimed at the registration's
// source address, which a forged datagram chooses: so the outcome is kept
// per target for TTL, checks are limited per target network (/24 or /56),
// and new servers wait for theirs in a queue per network, served in turn
// (see reach.go), so that forged registrations cannot aim a stream of
// connects anywhere, nor hold the checks a real server waits for.
//
// A list query is a TCP connection that sends its query and reads the
// reply until the lobby closes. A query for a lobby with no servers gets an
// empty list: the honest answer, and on TCP a reply cannot be aimed at a
// forged address. Connections are bounded in number, per source and per
// network; when the port is full, the connection idle longest, or else the
// one busy longest, is cut for a newcomer. A reply is at most MaxListBytes
// (servers of every network in turn) and is written to a peer that must
// read at MinReadRate at least. Replies are cached until a listed field
// changes.
package gg2server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/connlimit"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/lobby/internal/tally"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// Config is the [gg2] section of config.toml.
type Config struct {
	// Listen is the address served over UDP (registrations) and TCP
	// (list queries); port 0 picks one free port for both (see Addrs).
	Listen netip.AddrPort
	// LegacyListen is the legacy protocol's address, UDP and TCP alike;
	// the zero AddrPort turns it off.
	LegacyListen netip.AddrPort
	// Lobby is the lobby ID Foyer's own rooms are listed in.
	Lobby gg2.UUID
	// ProtocolID, when not the zero UUID, is the protocol_id of Foyer's
	// own rooms: they carry it in the list and appear in legacy queries
	// for it only. With the zero UUID they appear in every legacy query.
	ProtocolID gg2.UUID
	// PublicAddr is the address listed for Foyer's own rooms; when
	// invalid, the local address each list connection arrived on.
	PublicAddr netip.Addr
	// Game is the "game" value of Foyer's own rooms that name none.
	Game string
	// TTL is how long a server stays listed after its last registration,
	// and how long the outcome of a TCP check is kept.
	TTL time.Duration
	// MaxServers bounds the servers listed; MaxServersPerIP and
	// MaxServersPerNetwork those from one source IP and one network
	// (limit.PrefixOf: /24, /56), servers waiting for their check
	// included, so that one host or network cannot fill the table;
	// registrations of new servers beyond them are dropped.
	MaxServers           int
	MaxServersPerIP      int
	MaxServersPerNetwork int
	// UDPTransport lets in registrations for UDP (transport 1), which the
	// seed reserves: they are listed at once, since no check can prove a
	// UDP port, and so are never offered by the native lobby.
	UDPTransport bool
	// MaxKVBytes bounds a server's key/value table, counted as on the
	// wire; keys beyond it are dropped (the name is kept first). A server
	// keeps at most maxKeys keys.
	MaxKVBytes int
	// MaxPlayers caps a registration's slots and players.
	MaxPlayers int
	// DialTimeout bounds the TCP connect that checks a TCP server;
	// MaxChecks bounds the checks running at once (new servers wait in
	// turn for theirs, see reach.go).
	DialTimeout time.Duration
	MaxChecks   int
	// ListTimeout cuts a list connection that has not sent its query in
	// time; MinReadRate cuts one whose peer reads the reply slower than
	// that many bytes a second (see connlimit.MinRate). MaxListConns
	// bounds the list connections served at once on each port,
	// MaxListConnsPerIP those from one source (an IPv4 address or an IPv6
	// /64), MaxListConnsPerNetwork those from one /24 or /56.
	ListTimeout            time.Duration
	MinReadRate            int
	MaxListConns           int
	MaxListConnsPerIP      int
	MaxListConnsPerNetwork int
	// MaxListBytes bounds one list reply: servers beyond it are left out,
	// Foyer's own rooms first, then each network's servers in turn.
	MaxListBytes int
	// ReportInterval is how often non-zero drop counts are logged.
	ReportInterval time.Duration
	// Filter sets a kernel socket filter on each UDP socket that drops a
	// datagram that cannot be a registration or an unregister of its
	// port before it is read.
	Filter bool
}

// DefaultConfig returns the defaults documented in config.toml.
func DefaultConfig() Config {
	return Config{
		Listen:                 netip.MustParseAddrPort("0.0.0.0:29944"),
		LegacyListen:           netip.MustParseAddrPort("0.0.0.0:29942"),
		Lobby:                  gg2.GG2LobbyUUID,
		Game:                   "foyer",
		TTL:                    70 * time.Second,
		MaxServers:             4096,
		MaxServersPerIP:        64,
		MaxServersPerNetwork:   128,
		MaxKVBytes:             1024,
		MaxPlayers:             64,
		DialTimeout:            2 * time.Second,
		MaxChecks:              128,
		ListTimeout:            3 * time.Second,
		MinReadRate:            4 << 10,
		MaxListConns:           64,
		MaxListConnsPerIP:      4,
		MaxListConnsPerNetwork: 16,
		MaxListBytes:           256 << 10,
		ReportInterval:         10 * time.Second,
		Filter:                 sockfilter.Supported,
	}
}

// busyCut is how long a list connection may be busy before a newcomer to
// a full port may take its place: a reply of MaxListBytes takes a
// fraction of it to a reader that keeps up.
const busyCut = time.Second

// MinListBytes is the least MaxListBytes: room for a few servers with
// full tables.
const MinListBytes = 16 << 10

// MinKVBytes is the least MaxKVBytes: room for a name a legacy server
// can send (255 bytes) and its key.
const MinKVBytes = 1 + len("name") + 2 + gg2.MaxLegacyInfo

func (c Config) check() error {
	switch {
	case !c.Listen.IsValid():
		return errors.New("gg2: no listen address")
	case c.TTL <= 0 || c.DialTimeout <= 0 || c.ListTimeout <= 0 || c.ReportInterval <= 0:
		return errors.New("gg2: ttl, dial timeout, list timeout and report interval must be positive")
	case c.MaxServers < 1 || c.MaxServersPerIP < 1 || c.MaxServersPerNetwork < 1 || c.MaxChecks < 1 ||
		c.MaxListConns < 1 || c.MaxListConnsPerIP < 1 || c.MaxListConnsPerNetwork < 1 || c.MaxPlayers < 1 ||
		c.MinReadRate < 1:
		return errors.New("gg2: max_servers, max_servers_per_ip, max_servers_per_network, max_checks, max_list_conns, max_list_conns_per_ip, max_list_conns_per_network, max_players and min_read_rate must be positive")
	case c.MaxListBytes < MinListBytes:
		return fmt.Errorf("gg2: max_list_bytes must be at least %d", MinListBytes)
	case c.MaxKVBytes < MinKVBytes:
		return fmt.Errorf("gg2: max_kv_bytes must be at least %d", MinKVBytes)
	case c.Filter && !sockfilter.Supported:
		return errors.New("gg2: socket filters need Linux")
	}
	return nil
}

// Stats is a snapshot of the front-end's counters.
type Stats struct {
	// Requests counts well-formed requests by kind: "register",
	// "unregister", "list", "legacy_register", "legacy_list".
	Requests map[string]uint64
	// Drops counts what was dropped unanswered or unapplied, by reason:
	// "unknown_message", "rate_limited", the codec's reasons for malformed
	// datagrams ("truncated", "no_name", …), "udp_transport" (refused),
	// "owned" (another server ID holds the key), "table_full",
	// "source_full", "network_full", "name_too_long", "register_error",
	// "check_busy", "check_limited", "check_queue_full", "unreachable",
	// "unreachable_cached", "unknown_id", "wrong_source" (an unregister
	// from an address its ID holds nothing at), "conn_limit",
	// "source_conn_limit", "network_conn_limit", "timeout",
	// "slow_reader", "short_query", "bad_query", "encode_error",
	// "write_error", "read_error", "accept_error"; "idle_cut" and
	// "busy_cut" count connections cut for a newcomer, "list_cut" servers
	// left out of a reply by MaxListBytes, "kv_dropped" keys beyond
	// MaxKVBytes. Reasons of the legacy port carry the prefix "legacy_".
	Drops map[string]uint64
	// Registered is the servers in the room table now; Pending those
	// waiting for, or in, their first TCP check; ListConns the list
	// connections being served on both ports.
	Registered, Pending, ListConns int
	// KernelDrops counts the datagrams the kernel dropped at the UDP
	// sockets before any read: refused by the socket filter
	// (Config.Filter), or with no room left in a receive buffer.
	KernelDrops uint64
}

// Server is the GG2-style front-end.
type Server struct {
	cfg   Config
	rooms room.Table
	reg   room.Registry
	log   zerolog.Logger
	guard *limit.Guard
	ports []*port // the new-style port, then the legacy one if on

	requests, drops tally.Set
	kernelDrops     sockfilter.Counter
	table           table
	lists           replyCache
	work            sync.WaitGroup // list connections and TCP checks
	legacyKV        gg2.KeyValues  // the legacy read loop's table, reused
}

// port is one address the front-end serves: registrations over UDP,
// queries over TCP, each with its own connection limits.
type port struct {
	prefix string             // of its counters: "" or "legacy_"
	shapes []sockfilter.Shape // of its datagrams, for a socket filter
	udp    *net.UDPConn
	tcp    *net.TCPListener
	conns  *connlimit.Limiter
	// datagram handles one registration datagram.
	datagram func(ctx context.Context, b []byte, ip netip.Addr, now time.Time)
	// query reads a query from c and returns the reply; false when there
	// is none to give (the reason is counted).
	query func(c *net.TCPConn, place *connlimit.Conn) ([]byte, bool)
}

// New binds cfg.Listen, and cfg.LegacyListen when valid, over UDP and TCP.
// Registered servers go to reg; list queries list rooms.List(). UDP
// datagrams and TCP connections alike draw from guard's per-source
// buckets, shared with the other edges; a nil guard is one of the
// front-end's own with limit.DefaultConfig.
func New(cfg Config, rooms room.Table, reg room.Registry, guard *limit.Guard, log zerolog.Logger) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := newServer(cfg, rooms, reg, guard, log)
	addrs := []netip.AddrPort{cfg.Listen}
	if cfg.LegacyListen.IsValid() {
		addrs = append(addrs, cfg.LegacyListen)
	}
	for i, ap := range addrs {
		var err error
		p := s.ports[i]
		if p.udp, p.tcp, err = listenBoth(ap); err != nil {
			s.Close()
			return nil, fmt.Errorf("gg2: listen %v: %w", ap, err)
		}
		if !cfg.Filter {
			p.shapes = nil
		}
		if err := sockfilter.Set(p.udp, p.shapes); err != nil {
			s.Close()
			return nil, fmt.Errorf("gg2: socket filter on %v: %w", ap, err)
		}
	}
	s.ports = s.ports[:len(addrs)]
	// Logged once bound, so that every listener's line precedes the
	// server's "ready".
	ev := s.log.Info().Stringer("listen", s.Addrs()[0]).Stringer("lobby", s.cfg.Lobby)
	if len(s.ports) > 1 {
		ev = ev.Stringer("legacy_listen", s.Addrs()[1])
	}
	ev.Msg("gg2 front-end serving")
	return s, nil
}

// newServer builds a front-end without sockets, with both ports' handlers.
func newServer(cfg Config, rooms room.Table, reg room.Registry, guard *limit.Guard, log zerolog.Logger) *Server {
	if guard == nil {
		guard = limit.NewGuard(limit.DefaultConfig())
	}
	s := &Server{cfg: cfg, rooms: rooms, reg: reg, guard: guard,
		log: log.With().Str("component", "gg2").Logger()}
	s.table.init(s)
	s.ports = []*port{
		{shapes: gg2.DatagramShapes(), datagram: s.handleDatagram, query: s.listQuery},
		{prefix: "legacy_", shapes: gg2.LegacyShapes(), datagram: s.handleLegacyDatagram, query: s.legacyQuery},
	}
	for _, p := range s.ports {
		p.conns = connlimit.New(connlimit.Config{Max: cfg.MaxListConns, PerSource: cfg.MaxListConnsPerIP,
			PerNetwork: cfg.MaxListConnsPerNetwork, CutBusyAfter: busyCut})
	}
	return s
}

// listenBoth binds UDP and TCP on one port, of the address's own family
// only: Go would make "0.0.0.0" a dual-stack socket, answering IPv6 the
// operator did not ask for. With port 0 the UDP socket picks the port,
// and another try is made if TCP finds it taken.
func listenBoth(ap netip.AddrPort) (*net.UDPConn, *net.TCPListener, error) {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	family := "6"
	if ap.Addr().Is4() {
		family = "4"
	}
	for tries := 0; ; tries++ {
		u, err := sockets.ListenUDP("udp"+family, net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return nil, nil, err
		}
		port := u.LocalAddr().(*net.UDPAddr).AddrPort().Port()
		t, err := sockets.ListenTCP("tcp"+family, net.TCPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr(), port)))
		if err == nil {
			return u, t, nil
		}
		u.Close()
		if ap.Port() != 0 || tries == 9 {
			return nil, nil, err
		}
	}
}

// Addrs returns the bound addresses, UDP and TCP alike: the new-style
// port, then the legacy port when it is on.
func (s *Server) Addrs() []netip.AddrPort {
	out := make([]netip.AddrPort, len(s.ports))
	for i, p := range s.ports {
		out[i] = p.udp.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	return out
}

// Close releases the sockets of a Server that will not Serve (Serve
// closes them itself when it ends).
func (s *Server) Close() error {
	var errs []error
	for _, p := range s.ports {
		if p.udp != nil {
			errs = append(errs, p.udp.Close())
		}
		if p.tcp != nil {
			errs = append(errs, p.tcp.Close())
		}
	}
	return errors.Join(errs...)
}

// Stats returns the front-end's counters.
func (s *Server) Stats() Stats {
	st := Stats{Requests: s.requests.Snapshot(), Drops: s.drops.Snapshot()}
	udp := make([]*net.UDPConn, 0, len(s.ports))
	for _, p := range s.ports {
		st.ListConns += p.conns.Len()
		udp = append(udp, p.udp)
	}
	st.KernelDrops = s.kernelDrops.Read(udp)
	st.Registered, st.Pending = s.table.counts()
	return st
}

// Serve answers until ctx is done or a UDP socket fails, then closes the
// sockets, cuts the list connections, waits for them and the TCP checks,
// and unregisters every server it registered. It returns the socket's
// error, if one failed. Serve runs once per Server.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make(chan error, len(s.ports))
	var loops sync.WaitGroup
	for _, p := range s.ports {
		loops.Go(func() {
			if err := s.readLoop(ctx, p); err != nil {
				failed <- err
			}
		})
		loops.Go(func() { s.acceptLoop(ctx, p) })
	}
	loops.Go(func() { s.table.expireLoop(ctx) })
	loops.Go(func() { tally.Report(ctx, s.log, s.cfg.ReportInterval, "drops", tally.Names("dropped", &s.drops)) })
	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
		cancel()
	}
	s.Close()
	loops.Wait()
	s.work.Wait()
	n := s.table.clear()
	s.log.Info().Int("unregistered", n).Msg("gg2 front-end stopped")
	return err
}

func (s *Server) readLoop(ctx context.Context, p *port) error {
	buf := make([]byte, 1<<16)
	return tally.ReadLoop(s.drops.Counter("read_error"), func() error {
		n, from, err := p.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return err
		}
		p.datagram(ctx, buf[:n], from.Addr().Unmap(), time.Now())
		return nil
	})
}

func (s *Server) handleDatagram(ctx context.Context, b []byte, ip netip.Addr, now time.Time) {
	kind := gg2.Classify(b)
	if kind == gg2.KindUnknown {
		s.drops.Add("unknown_message")
		return
	}
	if !s.allow(ip, now) {
		return
	}
	if kind == gg2.KindUnregister {
		u, err := gg2.ParseUnregister(b)
		if err != nil {
			s.drops.Add(reason(err))
			return
		}
		// Counted once applied, so that a counter seen is a change made.
		if why := s.table.unregister(u.ServerID, ip); why != "" {
			s.drops.Add(why)
		}
		s.requests.Add("unregister")
		return
	}
	r, err := gg2.ParseRegistration(b)
	if err != nil {
		s.drops.Add(reason(err))
		return
	}
	if r.Transport == gg2.UDP && !s.cfg.UDPTransport {
		// Counted with the requests: a refusal seen is a datagram
		// handled.
		s.drops.Add("udp_transport")
		s.requests.Add("register")
		return
	}
	s.table.apply(ctx, ip, &update{
		lobby: r.LobbyID, id: r.ServerID, hasID: true, transport: r.Transport, port: r.Port,
		slots: r.Slots, players: r.Players, bots: r.Bots, flags: r.Flags, kv: r.KeyValues,
	}, now)
	s.requests.Add("register")
}

// allow checks ip against the deny list and takes a token from its
// bucket, or counts the drop.
func (s *Server) allow(ip netip.Addr, now time.Time) bool {
	if s.guard.Denied(ip) {
		s.drops.Add("denied")
		return false
	}
	v := s.guard.Admit(ip, now)
	if !v.OK() {
		s.drops.Add(v.Reason())
	}
	return v.OK()
}

// reasons names the codec's sentinels for the drop counters.
var reasons = []struct {
	err  error
	name string
}{
	{gg2.ErrTruncated, "truncated"}, {gg2.ErrLength, "length"},
	{gg2.ErrMessageType, "message_type"}, {gg2.ErrTransport, "transport"},
	{gg2.ErrPort, "port"}, {gg2.ErrNoName, "no_name"}, {gg2.ErrKey, "key"},
	{gg2.ErrValue, "value"}, {gg2.ErrDuplicateKey, "duplicate_key"},
	{gg2.ErrCount, "count"}, {gg2.ErrAddr, "addr"},
}

func reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "malformed"
}

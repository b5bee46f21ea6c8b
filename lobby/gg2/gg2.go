// Package gg2 is Foyer's GG2-style lobby front-end: game servers register
// themselves over UDP and become rooms in the one room table, and browsers
// ask over TCP, on the same port, for the list of every room.
//
// UDP datagrams go through, in order:
//
//	gg2wire.Classify   neither registration nor unregister: dropped
//	limit.Sources      per source IP, shared with the other edges
//	full parse         malformed, no name, other lobby: dropped, counted
//	the table          keyed by source IP, port and transport; a TCP
//	                   server appears only once a TCP connect to it works
//
// A registered server stays listed until TTL after its last registration,
// or until an unregister carrying the server ID it registered with. The
// ID is a secret between server and lobby, so a wrong ID removes nothing.
//
// A list query is a TCP connection that sends 32 bytes and reads the reply
// until the lobby closes. A query for another lobby ID gets an empty list:
// the honest answer (this lobby knows no servers of that lobby), and on TCP
// a reply cannot be aimed at a forged address. Connections are bounded in
// number and time; beyond the bound they are closed at once and counted.
package gg2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// Config is the [gg2] section of config.toml.
type Config struct {
	// Listen is the address served over UDP (registrations) and TCP
	// (list queries); port 0 picks one free port for both (see Addrs).
	Listen netip.AddrPort
	// Lobby is the lobby ID registrations and list queries must carry.
	Lobby gg2wire.UUID
	// PublicAddr is the address listed for Foyer's own rooms; when
	// invalid, the local address each list connection arrived on.
	PublicAddr netip.Addr
	// Game is the "game" value of Foyer's own rooms that name none.
	Game string
	// TTL is how long a server stays listed after its last registration.
	TTL time.Duration
	// MaxServers bounds the registered servers (pending ones included),
	// MaxServersPerIP those from one source IP, so that one host cannot
	// fill the table; registrations of new servers beyond them are
	// dropped.
	MaxServers      int
	MaxServersPerIP int
	// DialTimeout bounds the TCP connect that checks a TCP server;
	// MaxChecks bounds the checks running at once (more are dropped, the
	// server's next registration tries again).
	DialTimeout time.Duration
	MaxChecks   int
	// ListTimeout cuts a list connection that has not been answered in
	// time; MaxListConns bounds the list connections served at once.
	ListTimeout  time.Duration
	MaxListConns int
	// ReportInterval is how often non-zero drop counts are logged.
	ReportInterval time.Duration
}

// DefaultConfig returns the defaults documented in config.toml.
func DefaultConfig() Config {
	return Config{
		Listen:          netip.MustParseAddrPort("0.0.0.0:29944"),
		Lobby:           gg2wire.GG2LobbyUUID,
		Game:            "foyer",
		TTL:             70 * time.Second,
		MaxServers:      4096,
		MaxServersPerIP: 64,
		DialTimeout:     2 * time.Second,
		MaxChecks:       16,
		ListTimeout:     3 * time.Second,
		MaxListConns:    64,
		ReportInterval:  10 * time.Second,
	}
}

func (c Config) check() error {
	switch {
	case !c.Listen.IsValid():
		return errors.New("gg2: no listen address")
	case c.TTL <= 0 || c.DialTimeout <= 0 || c.ListTimeout <= 0 || c.ReportInterval <= 0:
		return errors.New("gg2: ttl, dial timeout, list timeout and report interval must be positive")
	case c.MaxServers < 1 || c.MaxServersPerIP < 1 || c.MaxChecks < 1 || c.MaxListConns < 1:
		return errors.New("gg2: max_servers, max_servers_per_ip, max_checks and max_list_conns must be positive")
	}
	return nil
}

// Stats is a snapshot of the front-end's counters.
type Stats struct {
	// Requests counts well-formed requests by kind: "register",
	// "unregister", "list".
	Requests map[string]uint64
	// Drops counts what was dropped unanswered or unapplied, by reason:
	// "unknown_message", "rate_limited", the codec's reasons for malformed
	// datagrams ("truncated", "no_name", …), "wrong_lobby", "table_full", "source_full",
	// "register_error", "check_busy", "unreachable", "unknown_id",
	// "conn_limit", "timeout", "short_query", "bad_query", "encode_error",
	// "write_error", "read_error", "accept_error".
	Drops map[string]uint64
	// Registered is the servers in the room table now; Pending those
	// waiting for (or having failed) their TCP check; ListConns the list
	// connections being served.
	Registered, Pending, ListConns int
}

// Server is the GG2-style front-end.
type Server struct {
	cfg   Config
	rooms room.Table
	reg   room.Registry
	log   zerolog.Logger
	udp   *net.UDPConn
	tcp   *net.TCPListener
	guard *limit.Guard

	requests, drops frontend.Counters
	listConns       atomic.Int64
	table           table
	lists           listCache
	work            sync.WaitGroup // list connections and TCP checks
}

// New binds cfg.Listen over UDP and TCP. Registered servers go to reg;
// list queries list rooms.List(). UDP datagrams and TCP connections alike
// draw from guard's per-source buckets, shared with the other edges; a nil
// guard is one of the front-end's own with limit.DefaultConfig.
func New(cfg Config, rooms room.Table, reg room.Registry, guard *limit.Guard, log zerolog.Logger) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := newServer(cfg, rooms, reg, guard, log)
	var err error
	if s.udp, s.tcp, err = listenBoth(cfg.Listen); err != nil {
		return nil, fmt.Errorf("gg2: listen %v: %w", cfg.Listen, err)
	}
	return s, nil
}

// newServer builds a front-end without sockets.
func newServer(cfg Config, rooms room.Table, reg room.Registry, guard *limit.Guard, log zerolog.Logger) *Server {
	if guard == nil {
		guard = limit.NewGuard(limit.DefaultConfig())
	}
	s := &Server{cfg: cfg, rooms: rooms, reg: reg, guard: guard,
		log: log.With().Str("component", "gg2").Logger()}
	s.table.init(s)
	return s
}

// listenBoth binds UDP and TCP on one port. With port 0 the UDP socket
// picks it, and another try is made if TCP finds it taken.
func listenBoth(ap netip.AddrPort) (*net.UDPConn, *net.TCPListener, error) {
	for tries := 0; ; tries++ {
		u, err := sockets.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return nil, nil, err
		}
		port := u.LocalAddr().(*net.UDPAddr).AddrPort().Port()
		t, err := sockets.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr(), port)))
		if err == nil {
			return u, t, nil
		}
		u.Close()
		if ap.Port() != 0 || tries == 9 {
			return nil, nil, err
		}
	}
}

// Addrs returns the bound address; UDP and TCP share it.
func (s *Server) Addrs() []netip.AddrPort {
	return []netip.AddrPort{s.udp.LocalAddr().(*net.UDPAddr).AddrPort()}
}

// Close releases the sockets of a Server that will not Serve (Serve
// closes them itself when it ends).
func (s *Server) Close() error {
	return errors.Join(s.udp.Close(), s.tcp.Close())
}

// Stats returns the front-end's counters.
func (s *Server) Stats() Stats {
	st := Stats{Requests: s.requests.Snapshot(), Drops: s.drops.Snapshot(), ListConns: int(s.listConns.Load())}
	st.Registered, st.Pending = s.table.counts()
	return st
}

// Serve answers until ctx is done or the UDP socket fails, then closes the
// sockets, cuts the list connections, waits for them and the TCP checks,
// and unregisters every server it registered. It returns the socket's
// error, if one failed. Serve runs once per Server.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.log.Info().Stringer("listen", s.Addrs()[0]).Stringer("lobby", s.cfg.Lobby).Msg("gg2 front-end serving")
	failed := make(chan error, 1)
	var loops sync.WaitGroup
	loops.Go(func() {
		if err := s.readLoop(ctx); err != nil {
			failed <- err
		}
	})
	loops.Go(func() { s.acceptLoop(ctx) })
	loops.Go(func() { s.table.expireLoop(ctx) })
	loops.Go(func() { frontend.Report(ctx, s.log, s.cfg.ReportInterval, &s.drops) })
	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
		cancel()
	}
	s.udp.Close()
	s.tcp.Close()
	loops.Wait()
	s.work.Wait()
	n := s.table.clear()
	s.log.Info().Int("unregistered", n).Msg("gg2 front-end stopped")
	return err
}

func (s *Server) readLoop(ctx context.Context) error {
	buf := make([]byte, 1<<16)
	errs := 0
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if stop, err := frontend.ReadError(err, &errs, &s.drops); stop {
				return err
			}
			continue
		}
		errs = 0
		s.handleDatagram(ctx, buf[:n], from.Addr().Unmap(), time.Now())
	}
}

func (s *Server) handleDatagram(ctx context.Context, b []byte, ip netip.Addr, now time.Time) {
	kind := gg2wire.Classify(b)
	if kind == gg2wire.KindUnknown {
		s.drops.Add("unknown_message")
		return
	}
	if !s.allow(ip, now) {
		return
	}
	if kind == gg2wire.KindUnregister {
		u, err := gg2wire.ParseUnregister(b)
		if err != nil {
			s.drops.Add(reason(err))
			return
		}
		// Counted once applied, so that a counter seen is a change made.
		if !s.table.unregister(u.ServerID) {
			s.drops.Add("unknown_id")
		}
		s.requests.Add("unregister")
		return
	}
	r, err := gg2wire.ParseRegistration(b)
	if err != nil {
		s.drops.Add(reason(err))
		return
	}
	if r.LobbyID != s.cfg.Lobby {
		s.drops.Add("wrong_lobby")
		return
	}
	s.table.register(ctx, ip, &r, now)
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
	{gg2wire.ErrTruncated, "truncated"}, {gg2wire.ErrLength, "length"},
	{gg2wire.ErrMessageType, "message_type"}, {gg2wire.ErrTransport, "transport"},
	{gg2wire.ErrPort, "port"}, {gg2wire.ErrNoName, "no_name"}, {gg2wire.ErrKey, "key"},
	{gg2wire.ErrValue, "value"}, {gg2wire.ErrDuplicateKey, "duplicate_key"},
	{gg2wire.ErrCount, "count"}, {gg2wire.ErrAddr, "addr"},
}

func reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "malformed"
}

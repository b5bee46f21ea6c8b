// Package web is Foyer's public server list: read-only pages over the
// room table for players looking for a game, in the reference GG2 lobby's
// columns.
//
//	GET /status        an HTML table per lobby: password flag, name, map,
//	                   players, game (linked to its page), address
//	GET /status.json   the same list as JSON
//
// Every room is listed: registered servers (their lobby and the details
// only the registering edge knows come from a Describer) and Foyer's own
// rooms, in Config.Lobby. Nothing else is shown: no player addresses, no
// counters, nothing of the admin listener.
//
// Everything a registrant sends is hostile. Text is escaped, invalid UTF-8
// and control characters are shown as U+FFFD, only http and https URLs
// become links, and the page's Content-Security-Policy runs no script even
// if escaping failed. The listener limits connections per source, per
// network and in total (cutting the idle longest, or else the busy
// longest, when full), draws from the per-source buckets every edge
// shares, times slow clients out and cuts those that read slower than
// MinReadRate. A page holds at most MaxPageBytes of rows: Foyer's own
// rooms first, then the servers of each network in turn; the rest are
// counted on the page. Pages are cached until the room table or a
// description changes.
package web

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/connlimit"
	"github.com/foyerlobby/foyer/internal/httpserve"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/lobby/internal/tally"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// Config is the [web] section of config.toml, with what the pages take
// from [gg2].
type Config struct {
	// Listen is the TCP address of the pages; port 0 picks a free port.
	Listen netip.AddrPort
	// Lobby is the lobby Foyer's own rooms are listed in; Game their game
	// when they name none.
	Lobby gg2.UUID
	Game  string
	// PublicAddr is the address shown for Foyer's own rooms; when invalid,
	// the local address each request arrived on.
	PublicAddr netip.Addr
	// Title heads the page and names the lobby Foyer's own rooms are in:
	// the host's name for its players.
	Title string
	// MaxConns bounds the connections served at once, MaxConnsPerIP those
	// from one source (an IPv4 address or an IPv6 /64), MaxConnsPerNetwork
	// those from one /24 or /56.
	MaxConns, MaxConnsPerIP, MaxConnsPerNetwork int
	// MinReadRate is the bytes a second a client must read a page at at
	// least (see connlimit.MinRate).
	MinReadRate int
	// MaxPageBytes bounds the rows of one page.
	MaxPageBytes int
	// ReportInterval is how often non-zero drop counts are logged.
	ReportInterval time.Duration
}

// DefaultConfig returns the defaults documented in config.toml; Listen is
// the zero AddrPort (the pages are off).
func DefaultConfig() Config {
	return Config{
		Lobby:              gg2.GG2LobbyUUID,
		Game:               "foyer",
		Title:              "Foyer Lobby",
		MaxConns:           64,
		MaxConnsPerIP:      8,
		MaxConnsPerNetwork: 16,
		MinReadRate:        4 << 10,
		MaxPageBytes:       512 << 10,
		ReportInterval:     10 * time.Second,
	}
}

func (c Config) check() error {
	switch {
	case !c.Listen.IsValid():
		return errors.New("web: no listen address")
	case c.MaxConns < 1 || c.MaxConnsPerIP < 1 || c.MaxConnsPerNetwork < 1 || c.MinReadRate < 1 ||
		c.MaxPageBytes < 1 || c.ReportInterval <= 0:
		return errors.New("web: max conns, max conns per IP and per network, min read rate, max page bytes and report interval must be positive")
	case c.Title == "" || len(c.Title) > MaxTitle:
		return fmt.Errorf("web: title %q is empty or longer than %d bytes", c.Title, MaxTitle)
	}
	return nil
}

// MaxTitle bounds Config.Title.
const MaxTitle = 100

// Details is what the edge that registered a room knows of it beyond the
// room table.
type Details struct {
	Lobby                gg2.UUID
	Bots                 int
	GameVersion, GameURL string
}

// Describer is an edge that registers rooms (the GG2-style front-end).
type Describer interface {
	// Generation changes whenever a description may have.
	Generation() uint64
	// Describe calls each with the details of every rooms[i] the edge
	// registered. Rooms that are neither Foyer's own nor described are
	// not listed.
	Describe(rooms []room.Room, each func(i int, d Details))
}

// Server serves the pages.
type Server struct {
	cfg       Config
	rooms     room.Table
	describer Describer
	log       zerolog.Logger
	guard     *limit.Guard
	gate      *connlimit.Gate
	ln        *net.TCPListener
	http      *http.Server
	drops     tally.Set
	pages     pageCache
}

// busyCut is how long a request may be answered before a newcomer to a
// full listener may take its connection's place: a page of MaxPageBytes
// takes a fraction of it to a reader that keeps up.
const busyCut = time.Second

// Stats is a snapshot of the pages' counters.
type Stats struct {
	// Drops counts connections and requests refused or cut, by reason
	// (see connlimit.Gate.Drop), and "page_cut" the rows left out of the
	// pages made, by MaxPageBytes.
	Drops map[string]uint64
	// Conns is the connections holding a place now.
	Conns int
}

// Stats returns the pages' counters.
func (s *Server) Stats() Stats { return Stats{Drops: s.drops.Snapshot(), Conns: s.gate.Len()} }

// idleTimeout is shorter than other listeners': this one is public, and a
// kept-alive connection holds a place of the per-source limit.
const idleTimeout = 30 * time.Second

// New binds cfg.Listen, of its own address family only. describer may be
// nil (no edge registers rooms). Connections draw from guard's per-source
// buckets, shared with the other edges; a nil guard is one of the pages'
// own with limit.DefaultConfig.
func New(cfg Config, rooms room.Table, describer Describer, guard *limit.Guard, log zerolog.Logger) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := newServer(cfg, rooms, describer, guard, log)
	ap := netip.AddrPortFrom(cfg.Listen.Addr().Unmap(), cfg.Listen.Port())
	network := "tcp6"
	if ap.Addr().Is4() {
		network = "tcp4"
	}
	// Through sockets: an upgrade hands the listener to the next process.
	ln, err := sockets.ListenTCP(network, net.TCPAddrFromAddrPort(ap))
	if err != nil {
		return nil, fmt.Errorf("web: listen %v: %w", cfg.Listen, err)
	}
	s.ln = ln
	// Logged once bound, so that every listener's line precedes the
	// server's "ready".
	s.log.Info().Stringer("listen", s.Addrs()[0]).Msg("web listening")
	return s, nil
}

// newServer builds the pages without a socket.
func newServer(cfg Config, rooms room.Table, describer Describer, guard *limit.Guard, log zerolog.Logger) *Server {
	if guard == nil {
		guard = limit.NewGuard(limit.DefaultConfig())
	}
	s := &Server{cfg: cfg, rooms: rooms, describer: describer, guard: guard,
		gate: connlimit.NewGate(connlimit.Config{Max: cfg.MaxConns, PerSource: cfg.MaxConnsPerIP,
			PerNetwork: cfg.MaxConnsPerNetwork, CutBusyAfter: busyCut}),
		log: log.With().Str("component", "web").Logger()}
	// Connections draw from the per-source buckets the other edges use.
	// A connection accepted has shown that its source receives: the guard
	// hears of it.
	s.gate.Admit = func(ip netip.Addr) string {
		if s.guard.Denied(ip) {
			return "denied"
		}
		now := time.Now()
		if v := s.guard.Admit(ip, now); !v.OK() {
			return v.Reason()
		}
		s.guard.Received(ip, now)
		return ""
	}
	s.gate.MinReadRate = cfg.MinReadRate
	s.gate.Drop = func(reason string) { s.drops.Add(reason) }
	s.http = httpserve.New(s, stdlog.New(s.log, "", 0))
	s.http.IdleTimeout = idleTimeout
	return s
}

// Addrs returns the bound address.
func (s *Server) Addrs() []netip.AddrPort {
	return []netip.AddrPort{s.ln.Addr().(*net.TCPAddr).AddrPort()}
}

// Close releases the socket of a Server that will not Serve.
func (s *Server) Close() error { return s.ln.Close() }

// Serve answers until ctx is done, then closes the listener and lets
// requests in progress finish (for up to 5 s). It returns nil after ctx
// ends, and the listener's error if it fails.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var report sync.WaitGroup
	report.Go(func() { tally.Report(ctx, s.log, s.cfg.ReportInterval, "drops", tally.Names("dropped", &s.drops)) })
	defer report.Wait()
	if err := httpserve.Serve(ctx, s.http, s.gate.Wrap(s.http, s.ln)); err != nil {
		return fmt.Errorf("web: %w", err)
	}
	return nil
}

// ServeHTTP answers GET and HEAD for /status and /status.json.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var kind pageKind
	switch r.URL.Path {
	case "/status":
		kind = htmlPage
	case "/status.json":
		kind = jsonPage
	case "/":
		http.Redirect(w, r, "/status", http.StatusSeeOther)
		return
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	host := s.cfg.PublicAddr
	if !host.IsValid() {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ta, ok := a.(*net.TCPAddr); ok {
				host = ta.AddrPort().Addr().Unmap()
			}
		}
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	if kind == htmlPage {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
	} else {
		h.Set("Content-Type", "application/json")
	}
	w.Write(s.page(kind, host))
}

// contentSecurityPolicy lets the page have its inline style and nothing
// else: no script runs, whatever a server's name holds.
const contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

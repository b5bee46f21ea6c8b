// Package admin is Foyer's admin HTTP listener, for the people and
// machines that run a lobby:
//
//	GET /          the board: a live page of the rooms, the request and
//	               drop rates and the spawn latencies (see board.go)
//	GET /metrics   Foyer's counters and gauges, and the Go runtime's and
//	               the process's, for Prometheus
//	GET /healthz   200 "ok" while serving ("degraded: ..." while cut off from
//	               the cluster), 503 "draining: ..." while an operator drains
//	               the host, 503 "shutting down" after Drain; then the version
//	GET /rooms     the room table as JSON
//	GET /rooms/{id}/log  the last lines of a room's log
//	POST /rooms/{id}/stop, POST /drain, POST /resume  see actions.go
//
// It reads what it shows through Sources, plain functions, so it depends
// on the lobby and the supervisor only through their Stats and room-table
// types. On loopback it needs no authentication; on any other address it
// answers only requests carrying the configured bearer token, since the
// pages are for whoever runs the host: every room's process id and
// resource use, the cluster's host names, the lobby's counters. No page
// shows a player's address. The board also takes a cookie
// that the token buys once (see auth.go), since a browser's event stream
// cannot carry the token.
package admin

import (
	"context"
	"encoding/json"
	"fmt"
	stdlog "log"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cluster"
	"github.com/foyerlobby/foyer/internal/buildinfo"
	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/connlimit"
	"github.com/foyerlobby/foyer/internal/httpserve"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// Config is the [admin] section of config.toml.
type Config struct {
	// Listen is the TCP address of the listener, e.g. "127.0.0.1:9477";
	// empty disables it.
	Listen string
	// Token, when set, is the bearer token every request must carry
	// ("Authorization: Bearer TOKEN"), at least MinToken characters. An
	// address other than loopback needs one.
	Token string
	// Hosts are the names, besides its own addresses and "localhost",
	// that requests may give as their Host (see hosts.go).
	Hosts []string
	// Session is how long the board's cookie lasts; zero means
	// DefaultSession.
	Session time.Duration
}

// MinToken is the shortest token the listener takes: 32 characters, as
// `foyer token` makes (43), leave no guess worth making at ten a minute.
const MinToken = 32

// DefaultSession is how long the board's cookie lasts by default.
const DefaultSession = 12 * time.Hour

// Sources are where the admin pages read from; a nil source leaves its
// metrics out (and /rooms empty, for Rooms).
type Sources struct {
	Lobby      func() lobby.Stats
	Supervisor func() supervisor.Stats
	Rooms      func() room.Snapshot
	// Usage is what each room's processes use, by room id; a room it
	// leaves out shows none (it runs without cgroups).
	Usage func() map[uint32]cgroup.Usage
	// GG2 and Gunz are the neighbour-protocol edges, Web the public
	// server list; nil when disabled.
	GG2  func() gg2server.Stats
	Gunz func() gunzserver.Stats
	Web  func() web.Stats
	// Cluster is the cluster this host is part of; nil when standalone.
	Cluster func() cluster.Stats
	// Guard is the rate limiting every edge shares.
	Guard func() GuardStats
	// HeldPorts, when set, are the ports of the pool something holds
	// that the pool did not give it (a room squatting them, say): /rooms
	// lists them with their holders, /metrics counts them.
	HeldPorts func() []supervisor.HeldPort
	// Watch, when set, follows the room table's changes: the board then
	// shows them as they happen, and the rooms that ended lately with
	// why. Without it the board shows the table once a second.
	Watch func(context.Context) <-chan room.Event
	// StopRoom and Drain, when set, are the actions (see actions.go):
	// StopRoom returns an error matching room.ErrNoRoom for a room with
	// no process on this host. Drain needs Supervisor, whose Draining
	// and Live say how it goes.
	StopRoom func(id uint32) error
	Drain    func(on bool)
	// RoomLog, when set, returns the last lines of room id's log, or an
	// error matching room.ErrNoRoom when this host has none.
	RoomLog func(id uint32, lines int) ([]byte, error)
	// LogDropped, when set, is how many lines the host's log dropped so
	// far, its writer not taking them.
	LogDropped func() uint64
}

// The admin listener's connections at once, from one IPv4 address or
// IPv6 /64, and from one /24 or /56: every board stream (maxStreams) from
// one machine, with room left for scrapes and pages. A client must read
// what it is sent at minReadRate at least (see connlimit.MinRate), an
// event stream included.
const (
	maxConns           = 2 * maxStreams
	maxConnsPerSource  = maxStreams + 8
	maxConnsPerNetwork = maxConnsPerSource + 8
	minReadRate        = 4 << 10
)

// Server is the admin listener. A nil *Server is a disabled listener: its
// methods do nothing.
type Server struct {
	ln       net.Listener
	http     *http.Server
	src      Sources
	board    *board
	guesses  *guesses // the failed authentications of each source
	log      zerolog.Logger
	draining atomic.Bool
	drops    *dropCounts // connections refused or cut
}

// New binds cfg.Listen; Serve answers on it. With an empty Listen it
// returns a nil *Server and no error: the listener is disabled.
func New(cfg Config, src Sources, logger zerolog.Logger) (*Server, error) {
	if cfg.Listen == "" {
		return nil, nil
	}
	if ap, err := netip.ParseAddrPort(cfg.Listen); err != nil || (!ap.Addr().Unmap().IsLoopback() && cfg.Token == "") {
		return nil, fmt.Errorf("admin: listen %s: an address other than loopback needs a token", cfg.Listen)
	}
	if cfg.Token != "" && len(cfg.Token) < MinToken {
		return nil, fmt.Errorf("admin: a token of %d characters is too short (at least %d; foyer token makes one)", len(cfg.Token), MinToken)
	}
	if cfg.Session <= 0 {
		cfg.Session = DefaultSession
	}
	ln, err := sockets.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("admin: listen %s: %w", cfg.Listen, err)
	}
	s := &Server{ln: ln, src: src, log: logger.With().Str("component", "admin").Logger(), drops: newDropCounts()}
	// Logged once bound, so that every listener's line precedes the
	// server's "ready".
	s.log.Info().Stringer("listen", s.Addr()).Msg("admin listening")
	s.board = newBoard(src, s.log)
	s.guesses = newGuesses(s.log)
	errLog := stdlog.New(s.log, "", 0)
	reg := newRegistry(src, s.drops.collector())
	pages := http.NewServeMux()
	pages.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A series that fails to collect is logged and left out; the
		// rest of the page still answers.
		ErrorLog:      errLog,
		ErrorHandling: promhttp.ContinueOnError,
	}))
	pages.HandleFunc("GET /healthz", s.healthz)
	pages.HandleFunc("GET /rooms", s.rooms)
	if src.RoomLog != nil {
		pages.HandleFunc("GET /rooms/{id}/log", s.roomLog)
	}
	actions := http.NewServeMux()
	if src.StopRoom != nil {
		actions.HandleFunc("POST /rooms/{id}/stop", s.stopRoom)
	}
	if src.Drain != nil && src.Supervisor != nil {
		actions.HandleFunc("POST /drain", s.drain(true))
		actions.HandleFunc("POST /resume", s.drain(false))
	}
	board := http.NewServeMux()
	board.Handle("GET /{$}", boardPage)
	board.Handle("GET /board.css", boardStyle)
	board.Handle("GET /board.js", boardScript)
	board.HandleFunc("GET /board/events", s.board.stream)
	var pagesHandler, boardHandler http.Handler = pages, board
	if cfg.Token != "" {
		pagesHandler, boardHandler = s.bearer(cfg.Token, pages), newBoardGate(cfg.Token, cfg.Session, s.guesses, board)
	}
	actionHandler := newActionGate(cfg.Token, s.guesses, actions)
	mux := http.NewServeMux()
	for _, path := range []string{"/metrics", "/healthz", "/rooms", "GET /rooms/{id}/log"} {
		mux.Handle(path, pagesHandler)
	}
	for _, path := range []string{"POST /rooms/{id}/stop", "POST /drain", "POST /resume"} {
		mux.Handle(path, actionHandler)
	}
	mux.Handle("/", boardHandler)
	// Host first: a rebinding page learns nothing, not even whether a
	// token is asked.
	hosts := newHostGate(cfg.Hosts, noStore(mux)) // every page is of now
	reg.MustRegister(authCollector{g: s.guesses, wrongHost: &hosts.wrong})
	s.http = httpserve.New(hosts, errLog)
	return s, nil
}

// Addr returns the bound address (with the port chosen for ":0"); the zero
// value when disabled.
func (s *Server) Addr() netip.AddrPort {
	if s == nil {
		return netip.AddrPort{}
	}
	return s.ln.Addr().(*net.TCPAddr).AddrPort()
}

// Drain makes /healthz answer 503 from now on, so that a load balancer or
// supervisor stops sending players here while the rooms are stopped.
func (s *Server) Drain() {
	if s != nil {
		s.draining.Store(true)
	}
}

// Serve answers until ctx is done, then closes the listener and lets
// requests in progress finish (for up to 5 s). It returns nil after ctx
// ends, and the listener's error if it fails. A disabled Server only
// waits for ctx, so that a caller can treat both alike.
func (s *Server) Serve(ctx context.Context) error {
	if s == nil {
		<-ctx.Done()
		return nil
	}
	// The board's sampler ends with the listener, so that its streams do
	// not hold up the shutdown.
	boardCtx, stopBoard := context.WithCancel(ctx)
	var board sync.WaitGroup
	board.Go(func() { s.board.run(boardCtx) })
	defer func() {
		stopBoard()
		board.Wait()
	}()
	// Bounded before any token is checked: connections a client opens
	// and never uses would otherwise take every descriptor the process
	// has. A board's event stream holds one while it is watched.
	gate := connlimit.NewGate(connlimit.Config{Max: maxConns, PerSource: maxConnsPerSource, PerNetwork: maxConnsPerNetwork})
	gate.BodyLimit = maxLoginBytes
	gate.MinReadRate = minReadRate
	gate.Drop = s.drops.add
	if err := httpserve.Serve(ctx, s.http, gate.Wrap(s.http, s.ln)); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	return nil
}

// healthz says whether the host takes players, in its first line, with
// the status code a load balancer reads; the second line is the version.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	line := "ok"
	switch {
	case s.draining.Load():
		w.WriteHeader(http.StatusServiceUnavailable)
		line = "shutting down"
	case s.drained():
		// Rooms in play finish; an upgrade script waits for "drained".
		w.Header().Set("Retry-After", strconv.Itoa(int(drainPoll.Seconds())))
		w.WriteHeader(http.StatusServiceUnavailable)
		line = s.drainState(s.src.Supervisor())
	case s.src.Cluster != nil:
		if l, degraded := clusterHealth(s.src.Cluster()); degraded {
			line = l
		}
	}
	fmt.Fprintf(w, "%s\nfoyer %s\n", line, buildinfo.Version())
}

// drained reports whether an operator drains the host.
func (s *Server) drained() bool { return s.src.Supervisor != nil && s.src.Supervisor().Draining }

// noStore has h's answers kept by no cache.
func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// roomJSON is one row of /rooms.
type roomJSON struct {
	ID         uint32    `json:"id"`
	State      string    `json:"state"`
	Players    int       `json:"players"`
	Seats      int       `json:"seats"`
	MaxPlayers int       `json:"max_players"`
	Port       uint16    `json:"port"`
	PID        int       `json:"pid,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	AgeSeconds float64   `json:"age_seconds"`
	Source     string    `json:"source,omitempty"`
	Name       string    `json:"name,omitempty"`
	Game       string    `json:"game,omitempty"`
	Map        string    `json:"map,omitempty"`
	Host       string    `json:"host,omitempty"`
	Node       string    `json:"node,omitempty"`
	Password   bool      `json:"password,omitempty"`
	// What the lobby's extension shows: the room's join code, mode and
	// tags, and whether it is private (listed nowhere but here).
	Code    string            `json:"code,omitempty"`
	Mode    string            `json:"mode,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Private bool              `json:"private,omitempty"`
	Adopted bool              `json:"adopted"`
	// CPUSeconds and MemoryBytes are what the room's processes use
	// (CPU time since the room started, resident memory now), where the
	// host measures them.
	CPUSeconds  *float64 `json:"cpu_seconds,omitempty"`
	MemoryBytes *int64   `json:"memory_bytes,omitempty"`
}

// tableJSON is the body of /rooms.
type tableJSON struct {
	Version uint64     `json:"version"`
	Rooms   []roomJSON `json:"rooms"`
	// HeldPorts are the ports of the pool held by what the pool did not
	// give them to; left out when there are none.
	HeldPorts []supervisor.HeldPort `json:"held_ports,omitempty"`
}

func (s *Server) rooms(w http.ResponseWriter, _ *http.Request) {
	snap := s.src.snapshot()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	table := roomTable(snap, s.src.usage(snap), time.Now())
	if s.src.HeldPorts != nil {
		table.HeldPorts = s.src.HeldPorts()
	}
	enc.Encode(table) // a write error means the client left
}

// snapshot is the room table, empty without a source.
func (src Sources) snapshot() room.Snapshot {
	if src.Rooms == nil {
		return room.Snapshot{}
	}
	return src.Rooms()
}

// usage is what the rooms of snap use, when there are rooms to ask for.
func (src Sources) usage(snap room.Snapshot) map[uint32]cgroup.Usage {
	if src.Usage == nil || len(snap.Rooms) == 0 {
		return nil
	}
	return src.Usage()
}

// roomTable is the table as /rooms and the board show it, each room with
// its usage.
func roomTable(snap room.Snapshot, usage map[uint32]cgroup.Usage, now time.Time) tableJSON {
	out := tableJSON{Version: snap.Version, Rooms: make([]roomJSON, 0, len(snap.Rooms))} // "[]", never null
	for _, r := range snap.Rooms {
		row := roomRow(r, now)
		if u, ok := usage[r.ID]; ok {
			row.setUsage(u)
		}
		out.Rooms = append(out.Rooms, row)
	}
	return out
}

// setUsage adds what the host measures of u to the row.
func (row *roomJSON) setUsage(u cgroup.Usage) {
	if u.CPUKnown {
		secs := math.Round(u.CPU.Seconds()*1000) / 1000
		row.CPUSeconds = &secs
	}
	if u.ResidentKnown {
		row.MemoryBytes = &u.Resident
	}
}

// roomRow is r as /rooms and the board show it: a field added here shows
// on both.
func roomRow(r room.Room, now time.Time) roomJSON {
	row := roomJSON{
		ID: r.ID, State: r.State.String(), Players: r.Players, Seats: r.Seats, MaxPlayers: r.MaxPlayers,
		Port: r.Port, PID: r.PID, StartedAt: r.StartedAt.UTC(), AgeSeconds: now.Sub(r.StartedAt).Truncate(time.Millisecond).Seconds(),
		Source: string(r.Source), Name: r.Name, Game: r.Game, Map: r.Map, Node: r.Node, Password: r.Password,
		Code: r.Code, Mode: r.Mode, Tags: tagMap(r.Tags), Private: r.Private,
		Adopted: r.Adopted,
	}
	if r.Host.IsValid() {
		row.Host = r.Host.String()
	}
	return row
}

// bearer lets through the requests that carry token as their bearer
// token, compared in constant time, within their source's allowance of
// guesses; the others get 401, or 429 past the allowance.
func (s *Server) bearer(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth == "" {
			unauthorized(w)
			return
		}
		switch ok, checked := s.guesses.check(w, r, func() bool { return hasBearer(auth, want) }); {
		case !checked:
		case !ok:
			unauthorized(w)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// tagMap is a room's tags as JSON shows them; nil for none.
func tagMap(t room.Tags) map[string]string {
	var m map[string]string
	for _, g := range t.Slice() {
		if m == nil {
			m = make(map[string]string)
		}
		m[g.Key] = g.Value
	}
	return m
}

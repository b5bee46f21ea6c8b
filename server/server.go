//go:build linux

// Package server assembles a Foyer host from its configuration and runs
// it: the supervisor and the room table behind it, the cluster when there
// is one, the native lobby, the neighbour-protocol edges, the public server
// list and the admin listener. A Server is built (New), serves until told
// to stop (Serve), hands its sockets and rooms over to a new process on an
// upgrade, and stops its parts in order. `foyer serve` runs one from
// config.toml; the test harness (package foyertest) runs the same, from
// the same kind of config, in a test's process.
package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cluster"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/announce"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/server/admin"
	"github.com/foyerlobby/foyer/server/config"
	"github.com/foyerlobby/foyer/supervisor"
)

// shutdownLimit bounds how long stopping the rooms may take once the
// server stops; the supervisor's own stop_grace applies per room.
const shutdownLimit = 30 * time.Second

// Options are what a server needs from the process that runs it, beyond
// its configuration.
type Options struct {
	Log zerolog.Logger
	// LogDropped, when set, is how many lines Log dropped so far (a
	// writer that never waits drops what it cannot queue): /metrics
	// counts them.
	LogDropped func() uint64
	// ReadyJSON, when set, gets one JSON line of every bound address once
	// every listener serves (foyer serve --ready-json).
	ReadyJSON io.Writer
	// Notify is the service manager's notification socket (sd_notify);
	// nil without one. See NotifySocket.
	Notify *net.UnixAddr
	// Successor is this process's side of an upgrade that started it;
	// nil otherwise. See Inherited.
	Successor *Successor
}

// Server is one Foyer host, built and bound.
type Server struct {
	cfg        config.Config
	log        zerolog.Logger
	logDropped func() uint64 // nil when Log never drops
	ready      readiness
	up         *Successor

	cl    *cluster.Cluster // nil when standalone
	sup   *supervisor.Supervisor
	rooms room.Table // what every edge lists: the cluster's, or the supervisor's table
	guard *limit.Guard
	lobby *lobby.Lobby
	edges []edge
	admin *admin.Server
}

// edge is a server run next to the lobby until its context ends; Close
// releases it if it is never served.
type edge interface {
	Serve(ctx context.Context) error
	io.Closer
}

// New builds a server from cfg and binds every listener (or takes the
// sockets an upgrade handed over). With a state directory, the rooms that
// outlived an earlier lobby are adopted. On error nothing is left bound,
// and the rooms are left as a failed start leaves them (see leave).
func New(cfg config.Config, o Options) (*Server, error) {
	s := &Server{cfg: cfg, log: o.Log, logDropped: o.LogDropped, up: o.Successor,
		ready: readiness{notify: o.Notify, json: o.ReadyJSON, log: o.Log, upgraded: o.Successor != nil}}
	if err := s.build(); err != nil {
		s.undo()
		return nil, err
	}
	return s, nil
}

// build makes the parts in the order they depend on one another.
func (s *Server) build() error {
	var err error
	if s.cl, err = cluster.Start(s.cfg.Cluster, s.log); err != nil {
		return err
	}
	if s.sup, err = s.newSupervisor(); err != nil {
		return err
	}
	local := s.sup.Table()
	if err := s.cl.Attach(local); err != nil {
		return err
	}
	s.rooms = s.cl.Table(local)
	// Every edge draws from one table of per-source buckets and charges one
	// per-network reply budget.
	s.guard = limit.NewGuard(s.cfg.Limits)
	if err := s.neighbours(local); err != nil {
		return err
	}
	if s.lobby, err = lobby.New(s.cfg.Lobby, s.rooms, s.guard, s.log); err != nil {
		return err
	}
	// A taken admin address stops the start like a taken lobby port: an
	// operator who asked for /metrics and /healthz must not run blind.
	s.admin, err = admin.New(admin.Config{Listen: s.cfg.Admin.Listen, Token: s.cfg.Admin.Token,
		Hosts: s.cfg.Admin.Hosts, Session: s.cfg.Admin.Session}, s.sources(), s.log)
	return err
}

// newSupervisor starts the supervisor; in a cluster, with the host's range
// of room ids.
func (s *Server) newSupervisor() (*supervisor.Supervisor, error) {
	cfg := s.cfg.Supervisor
	if s.cl != nil {
		first, last, next := s.cl.IDs()
		cfg.IDs = roomtable.IDRange{First: first, Last: last, Next: next}
		cfg.CodeTaken = s.cl.CodeTaken // join codes unique across the cluster
	}
	return supervisor.New(cfg, s.log)
}

// neighbours binds the enabled neighbour-protocol front-ends and the public
// server list, and makes the announcer, if configured. The front-ends and
// the list show the whole table; registrations go into this host's own
// (local), and the announcer announces this host's rooms only.
func (s *Server) neighbours(local *roomtable.Table) error {
	cfg := s.cfg
	var describer web.Describer // the GG2-style front-end, when on
	if cfg.GG2.Enabled {
		g, err := gg2server.New(cfg.GG2.Server, s.rooms, local, s.guard, s.log)
		if err != nil {
			return err
		}
		s.edges = append(s.edges, g)
		describer = g
	}
	if cfg.Web.Listen.IsValid() {
		wc := cfg.Web
		wc.Lobby, wc.Game, wc.PublicAddr = cfg.GG2.Server.Lobby, cfg.GG2.Server.Game, cfg.GG2.Server.PublicAddr
		w, err := web.New(wc, s.rooms, describer, s.guard, s.log)
		if err != nil {
			return err
		}
		s.edges = append(s.edges, w)
	}
	if cfg.Gunz.Enabled {
		loc, err := gunzserver.New(cfg.Gunz.Locator, s.rooms, s.guard, s.log)
		if err != nil {
			return err
		}
		s.edges = append(s.edges, loc)
	}
	if cfg.GG2.Announce.Upstream != "" {
		a, err := announce.New(cfg.GG2.Announce, local, s.log)
		if err != nil {
			return err
		}
		s.edges = append(s.edges, a)
	}
	return nil
}

// sources are what the admin listener shows.
func (s *Server) sources() admin.Sources {
	src := admin.Sources{Lobby: s.lobby.Stats, Supervisor: s.sup.Stats, Rooms: s.rooms.List, Usage: s.sup.Usage,
		HeldPorts: s.sup.HeldPorts, StopRoom: s.sup.StopRoom, Drain: s.sup.Drain, RoomLog: s.sup.RoomLog,
		LogDropped: s.logDropped,
		Watch:      s.rooms.Watch, Guard: func() admin.GuardStats {
			return admin.GuardStats{Counts: s.guard.Counts(), UnderPressure: s.guard.UnderPressure(time.Now())}
		}}
	if s.cl != nil {
		src.Cluster = s.cl.Stats
	}
	for _, e := range s.edges {
		switch e := e.(type) {
		case *gg2server.Server:
			src.GG2 = e.Stats
		case *gunzserver.Locator:
			src.Gunz = e.Stats
		case *web.Server:
			src.Web = e.Stats
		}
	}
	return src
}

// undo releases what a failed build made, in reverse order.
func (s *Server) undo() {
	if s.lobby != nil {
		s.lobby.Close()
	}
	for _, e := range s.edges {
		e.Close()
	}
	if s.sup != nil {
		s.leave()
	}
	s.cl.Close()
}

// leave ends the supervisor of a server that failed to start. With a state
// directory its rooms, adopted ones included, are left playing for the
// next lobby (or for the old process of a failed upgrade, which takes them
// back); without one they are stopped.
func (s *Server) leave() {
	if s.cfg.Supervisor.StateDir == "" {
		s.shutdown()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	if err := s.sup.Release(ctx); err != nil {
		s.log.Warn().Err(err).Msg("rooms not released")
	}
}

// shutdown stops every room, within shutdownLimit.
func (s *Server) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	if err := s.sup.Shutdown(ctx); err != nil {
		s.log.Warn().Err(err).Msg("supervisor shutdown")
	}
}

// Lobby is the server's native lobby.
func (s *Server) Lobby() *lobby.Lobby { return s.lobby }

// Supervisor is the server's supervisor, with its room table.
func (s *Server) Supervisor() *supervisor.Supervisor { return s.sup }

// Rooms is the table every edge lists: this host's, or in a cluster every
// host's.
func (s *Server) Rooms() room.Table { return s.rooms }

// AdminAddr is the admin listener's address; the zero value when it is
// off.
func (s *Server) AdminAddr() netip.AddrPort { return s.admin.Addr() }

// Serve runs every part until ctx is done, then stops taking CREATEs,
// stops the neighbour-protocol edges (the announcer unregisters its rooms
// upstream, the GG2-style front-end its registered servers), stops every
// room and closes the lobby; a socket that fails stops everything the same
// way, and Serve returns its error. The service manager hears when every
// listener serves and when the shutdown begins. A signal on hup hands
// everything to a new process of the binary on disk (upgrade); once it
// serves, Serve returns nil, leaving the rooms running.
func (s *Server) Serve(ctx context.Context, hup <-chan os.Signal) error {
	defer s.cl.Close() // after the rooms are stopped: they leave the lists first
	lobbyDone := make(chan error, 1)
	lobbyCtx, closeLobby := context.WithCancel(context.Background())
	go func() { lobbyDone <- s.lobby.Serve(lobbyCtx) }()
	s.log.Info().Stringers("listen", stringers(s.lobby.Addrs())).Msg("lobby listening")
	// The admin listener stops last, so that /healthz answers 503 while
	// the rooms are stopped; its failure is logged and stops nothing else.
	adminDone := make(chan struct{})
	adminCtx, closeAdmin := context.WithCancel(context.Background())
	go func() {
		defer close(adminDone)
		if err := s.admin.Serve(adminCtx); err != nil {
			s.log.Error().Err(err).Msg("admin listener failed")
		}
	}()
	edgeFailed := make(chan error, len(s.edges))
	edgesCtx, stopEdges := context.WithCancel(context.Background())
	var running sync.WaitGroup
	for _, e := range s.edges {
		running.Go(func() {
			if err := e.Serve(edgesCtx); err != nil {
				edgeFailed <- err
			}
		})
	}
	stopReading := func() {
		stopEdges()
		running.Wait()
		closeLobby()
		<-lobbyDone
		closeAdmin()
		<-adminDone
	}
	// Every socket is bound and read by now: what reaches them is served.
	if dropped := sockets.CloseUnclaimed(); len(dropped) > 0 {
		s.log.Info().Strs("sockets", dropped).Msg("inherited sockets the config no longer names closed")
	}
	s.ready.ready(s.lobby, s.admin, s.edges)
	s.up.serving()
	var err error
	lobbyOver := false
wait:
	for {
		select { // a socket that fails stops everything
		case <-ctx.Done():
			break wait
		case err = <-lobbyDone:
			lobbyOver = true
			break wait
		case err = <-edgeFailed:
			break wait
		case <-hup:
			s.cl.Hold(true) // the new process writes the rooms from now on
			if s.upgrade() {
				// The new process serves: this one stops reading and
				// leaves the rooms to it.
				stopReading()
				return nil
			}
			s.cl.Hold(false)
		}
	}
	s.log.Info().Msg("shutting down")
	s.ready.stopping()
	s.lobby.Drain()
	s.admin.Drain()
	stopEdges()
	running.Wait()
	s.shutdown()
	closeLobby()
	if !lobbyOver {
		if lerr := <-lobbyDone; err == nil {
			err = lerr
		}
	}
	closeAdmin()
	<-adminDone
	return err
}

func stringers[T fmt.Stringer](v []T) []fmt.Stringer {
	out := make([]fmt.Stringer, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

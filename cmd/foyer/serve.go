//go:build linux

package main

import (
	"context"
	"fmt"
	"github.com/foyerlobby/foyer/cmd/foyer/internal/cli"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cluster"
	"github.com/foyerlobby/foyer/cmd/foyer/internal/admin"
	"github.com/foyerlobby/foyer/cmd/foyer/internal/config"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/announce"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/supervisor"
)

// shutdownLimit bounds how long stopping the instances may take after
// SIGINT/SIGTERM; the supervisor's own stop_grace applies per instance.
const shutdownLimit = 30 * time.Second

// noCgroupsEnv, set to 1, runs the rooms without cgroups where the host
// has them (supervisor.Config.NoCgroups): a setting for the tests of
// that fallback only, which no config file can carry.
const noCgroupsEnv = "FOYER_TEST_NO_CGROUPS"

var serveHelp = cli.Help{
	Usage: []string{"foyer serve [--config PATH] [--ready-json]"},
	About: `Run the lobby (UDP, native protocol), the GG2-style and GunZ front-ends,
the public server list and the upstream announcer when configured, and
the supervisor of the rooms, until SIGINT or SIGTERM, which stop every
room before exiting.
Every config key and its default is documented in config.toml.

SIGHUP upgrades without a gap: a new process of the binary now on disk,
with the same arguments, reads the config file again and takes over the
listening sockets and, with [supervisor] state_dir, every room; this one
exits 0 once the new one serves. A new process that fails to start (a
config that no longer parses, a crash) is stopped, and this one serves
on and logs why. Without state_dir the rooms could not follow: SIGHUP is
refused. With state_dir a lobby killed any other way leaves its rooms
playing for reattach_grace, and the next foyer serve adopts them.

Once every listener serves, a unit with Type=notify gets READY=1 (through
$NOTIFY_SOCKET), and STOPPING=1 when the shutdown begins. --ready-json
prints one line on stdout at that moment, with every bound address (a
port 0 in the config shows as the port the system chose; admin, gg2,
gg2_legacy, gunz and web appear when enabled):
  {"foyer":"ready","version":1,"pid":4242,"lobby":["127.0.0.1:7777"],
   "admin":"127.0.0.1:9477","gg2":"0.0.0.0:29944",
   "gg2_legacy":"0.0.0.0:29942","gunz":"0.0.0.0:8900","web":"0.0.0.0:29950"}
Nothing else is written to stdout; the log goes to stderr.`,
	Example: []string{
		"foyer serve --config config.toml",
		"foyer serve --config test.toml --ready-json > ready.json &",
	},
}

func runServe(args []string, stdout, stderr io.Writer) int {
	c := cli.New("serve", serveHelp, stdout, stderr)
	path := c.Flags.String("config", "", "`PATH` of the config file (TOML); built-in defaults when empty")
	readyJSON := c.Flags.Bool("ready-json", false, "once every listener serves, print a JSON line of the bound addresses on stdout")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if code, ok := c.NoArgs(pos); !ok {
		return code
	}
	up, err := inherited() // set when an upgrade started this process
	if err != nil {
		fmt.Fprintf(stderr, "foyer serve: %v\n", err)
		return cli.ExitFail
	}
	cfg := config.Default()
	if *path != "" {
		if cfg, err = config.Load(*path); err != nil {
			fmt.Fprintf(stderr, "foyer serve: %v\n", err)
			up.failed(err)
			return cli.ExitFail
		}
	}
	// Only Foyer's tests of the fallback turn cgroups off.
	cfg.Supervisor.NoCgroups = os.Getenv(noCgroupsEnv) == "1"
	log := newLogger(cfg.Log, stderr)
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	r := readiness{notify: notifySocket(), log: log, upgraded: up != nil}
	if *readyJSON {
		r.json = stdout
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if up != nil {
		up.prepared(cfg.Supervisor.StateDir)
	}
	if err := serve(ctx, cfg, log, r, up, hup); err != nil {
		log.Error().Err(err).Msg("serve failed")
		up.failed(err)
		return cli.ExitFail
	}
	return cli.ExitOK
}

// serve runs until ctx is done, then stops taking CREATEs, stops the
// neighbour-protocol edges (the announcer unregisters its rooms upstream,
// the GG2-style front-end its registered servers), stops every instance
// and closes the lobby. r hears when every listener serves and when the
// shutdown begins. A SIGHUP on hup hands everything to a new process
// (upgrade); once it serves, serve returns nil, leaving the rooms running.
// up is the old process, when an upgrade started this one.
func serve(ctx context.Context, cfg config.Config, log zerolog.Logger, r readiness, up *successor, hup <-chan os.Signal) error {
	cl, err := cluster.Start(cfg.Cluster, log) // nil when standalone
	if err != nil {
		return err
	}
	defer cl.Close() // after the rooms are stopped: they leave the lists first
	sup, err := newSupervisor(cfg.Supervisor, cl, log)
	if err != nil {
		return err
	}
	if err := cl.Attach(sup.Table()); err != nil {
		leave(sup, cfg, log)
		return err
	}
	rooms := cl.Table(sup.Table())
	// Every edge draws from one table of per-source buckets and charges one
	// per-network reply budget.
	guard := limit.NewGuard(cfg.Limits)
	edges, err := neighbours(cfg, rooms, sup, guard, log)
	if err != nil {
		leave(sup, cfg, log)
		return err
	}
	l, adm, err := listeners(cfg, rooms, sup, cl, guard, edges, log)
	if err != nil {
		for _, e := range edges {
			e.Close()
		}
		leave(sup, cfg, log)
		return err
	}
	lobbyDone := make(chan error, 1)
	lobbyCtx, closeLobby := context.WithCancel(context.Background())
	go func() { lobbyDone <- l.Serve(lobbyCtx) }()
	log.Info().Stringers("listen", stringers(l.Addrs())).Msg("lobby listening")
	// The admin listener stops last, so that /healthz answers 503 while
	// the rooms are stopped; its failure is logged and stops nothing else.
	adminDone := make(chan struct{})
	adminCtx, closeAdmin := context.WithCancel(context.Background())
	go func() {
		defer close(adminDone)
		if err := adm.Serve(adminCtx); err != nil {
			log.Error().Err(err).Msg("admin listener failed")
		}
	}()
	edgeFailed := make(chan error, len(edges))
	edgesCtx, stopEdges := context.WithCancel(context.Background())
	var running sync.WaitGroup
	for _, e := range edges {
		running.Go(func() {
			if err := e.Serve(edgesCtx); err != nil {
				edgeFailed <- err
			}
		})
	}
	// Every socket is bound and read by now: what reaches them is served.
	if dropped := sockets.CloseUnclaimed(); len(dropped) > 0 {
		log.Info().Strs("sockets", dropped).Msg("inherited sockets the config no longer names closed")
	}
	r.ready(l, adm, edges)
	up.serving()
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
			cl.Hold(true) // the new process writes the rooms from now on
			if upgrade(cfg.Supervisor.StateDir, cfg.Cluster.Embedded, sup, l, r, log) {
				// The new process serves: this one stops reading and
				// leaves the rooms to it.
				stopEdges()
				running.Wait()
				closeLobby()
				<-lobbyDone
				closeAdmin()
				<-adminDone
				return nil
			}
			cl.Hold(false)
		}
	}
	log.Info().Msg("shutting down")
	r.stopping()
	l.Drain()
	adm.Drain()
	stopEdges()
	running.Wait()
	shutdown(sup, log)
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

// listeners binds the native edge and the admin pages; on error nothing is
// left bound. A taken admin address stops the start like a taken lobby
// port: an operator who asked for /metrics and /healthz must not run blind.
func listeners(cfg config.Config, rooms room.Table, sup *supervisor.Supervisor, cl *cluster.Cluster, guard *limit.Guard, edges []edge, log zerolog.Logger) (*lobby.Lobby, *admin.Server, error) {
	l, err := lobby.New(cfg.Lobby, rooms, guard, log)
	if err != nil {
		return nil, nil, err
	}
	src := admin.Sources{Lobby: l.Stats, Supervisor: sup.Stats, Rooms: rooms.List, Usage: sup.Usage, Watch: rooms.Watch, Guard: func() admin.GuardStats {
		return admin.GuardStats{Counts: guard.Counts(), UnderPressure: guard.UnderPressure(time.Now())}
	}}
	if cl != nil {
		src.Cluster = cl.Stats
	}
	for _, e := range edges {
		switch e := e.(type) {
		case *gg2server.Server:
			src.GG2 = e.Stats
		case *gunzserver.Locator:
			src.Gunz = e.Stats
		}
	}
	adm, err := admin.New(admin.Config{Listen: cfg.Admin.Listen, Token: cfg.Admin.Token}, src, log)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, adm, nil
}

// edge is a server run next to the lobby until its context ends; Close
// releases it if it is never served.
type edge interface {
	Serve(ctx context.Context) error
	io.Closer
}

// neighbours binds the enabled neighbour-protocol front-ends and the public
// server list, and makes the announcer, if configured; on error nothing is
// left bound.
// The front-ends and the list show the whole table (rooms); registrations
// go into this host's own (sup), and the announcer announces this host's
// rooms only.
func neighbours(cfg config.Config, rooms room.Table, sup *supervisor.Supervisor, guard *limit.Guard, log zerolog.Logger) ([]edge, error) {
	var edges []edge
	fail := func(err error) ([]edge, error) {
		for _, e := range edges {
			e.Close()
		}
		return nil, err
	}
	var describer web.Describer // the GG2-style front-end, when on
	if cfg.GG2.Enabled {
		s, err := gg2server.New(cfg.GG2.Server, rooms, sup.Table(), guard, log)
		if err != nil {
			return fail(err)
		}
		edges = append(edges, s)
		describer = s
	}
	if cfg.Web.Listen.IsValid() {
		wc := cfg.Web
		wc.Lobby, wc.Game, wc.PublicAddr = cfg.GG2.Server.Lobby, cfg.GG2.Server.Game, cfg.GG2.Server.PublicAddr
		w, err := web.New(wc, rooms, describer, guard, log)
		if err != nil {
			return fail(err)
		}
		edges = append(edges, w)
	}
	if cfg.Gunz.Enabled {
		loc, err := gunzserver.New(cfg.Gunz.Locator, rooms, guard, log)
		if err != nil {
			return fail(err)
		}
		edges = append(edges, loc)
	}
	if cfg.GG2.Announce.Upstream != "" {
		a, err := announce.New(cfg.GG2.Announce, sup.Table(), log)
		if err != nil {
			return fail(err)
		}
		edges = append(edges, a)
	}
	return edges, nil
}

// leave ends the supervisor of a serve that failed to start. With a state
// directory its rooms, adopted ones included, are left playing for the
// next lobby (or for the old process of a failed upgrade, which takes them
// back); without one they are stopped.
func leave(sup *supervisor.Supervisor, cfg config.Config, log zerolog.Logger) {
	if cfg.Supervisor.StateDir == "" {
		shutdown(sup, log)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	if err := sup.Release(ctx); err != nil {
		log.Warn().Err(err).Msg("rooms not released")
	}
}

func shutdown(sup *supervisor.Supervisor, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	if err := sup.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("supervisor shutdown")
	}
}

func stringers[T fmt.Stringer](v []T) []fmt.Stringer {
	out := make([]fmt.Stringer, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func newLogger(c config.Log, w io.Writer) zerolog.Logger {
	if c.Format == "console" {
		// Colours only for a person at a terminal, not for a file or journal.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !cli.IsTerminal(w)}
	}
	return zerolog.New(w).Level(c.Level).With().Timestamp().Logger()
}

// newSupervisor starts the supervisor; in a cluster, with the host's range
// of room ids.
func newSupervisor(cfg supervisor.Config, cl *cluster.Cluster, log zerolog.Logger) (*supervisor.Supervisor, error) {
	if cl == nil {
		return supervisor.New(cfg, log)
	}
	first, last, next := cl.IDs()
	cfg.IDs = roomtable.IDRange{First: first, Last: last, Next: next}
	return supervisor.New(cfg, log)
}

//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cmd/internal/cli"
	"github.com/foyerlobby/foyer/internal/logq"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/server"
	"github.com/foyerlobby/foyer/server/config"
)

// noCgroupsEnv, set to 1, runs the rooms without cgroups where the host
// has them (supervisor.Config.NoCgroups): a setting for the tests of
// that fallback only, which no config file can carry.
const noCgroupsEnv = "FOYER_TEST_NO_CGROUPS"

var serveHelp = cli.Help{
	Usage: []string{"foyer serve [--config PATH] [--ready-json]", "foyer serve --check [--config PATH]"},
	About: `Run the lobby (UDP, native protocol), the GG2-style and GunZ front-ends,
the public server list and the upstream announcer when configured, and
the supervisor of the rooms, until SIGINT or SIGTERM, which stop every
room before exiting.
Every config key and its default is documented in config.toml.
--check reads the config, says what it refuses or doubts (file:line:
reason), and exits, 0 if foyer serve would start with it, 1 if not: as
nginx -t does, before a restart.

SIGHUP upgrades without a gap: a new process of the binary now on disk,
with the same arguments, reads the config file again and takes over the
listening sockets and, with [supervisor] state_dir, every room; this one
exits 0 once the new one serves. A new process that fails to start (a
config that no longer parses, a crash) is stopped, and this one serves
on and logs why. Without state_dir the rooms could not follow: SIGHUP is
refused. With state_dir a lobby killed any other way leaves its rooms
playing for reattach_grace, and the next foyer serve adopts them. The
SIGHUP of a terminal that hangs up (its window closed, its ssh session
gone) stops foyer serve as SIGTERM does, if it was started from it.

Once every listener serves, a unit with Type=notify gets READY=1 (through
$NOTIFY_SOCKET), and STOPPING=1 when the shutdown begins. --ready-json
prints one line on stdout at that moment, with every bound address (a
port 0 in the config shows as the port the system chose; admin, gg2,
gg2_legacy, gunz and web appear when enabled):
  {"foyer":"ready","version":1,"foyer_version":"v1.2.3","pid":4242,
   "lobby":["127.0.0.1:7777"],
   "admin":"127.0.0.1:9477","gg2":"0.0.0.0:29944",
   "gg2_legacy":"0.0.0.0:29942","gunz":"0.0.0.0:8900","web":"0.0.0.0:29950"}
Nothing else is written to stdout; the log goes to stderr.`,
	Example: []string{
		"foyer serve --config config.toml",
		"foyer serve --check --config /etc/foyer/config.toml && systemctl restart foyer",
		"foyer serve --config test.toml --ready-json > ready.json &",
	},
}

func runServe(args []string, stdout, stderr io.Writer) int {
	c := cli.New("serve", serveHelp, stdout, stderr)
	path := c.Flags.String("config", "", "`PATH` of the config file (TOML); built-in defaults when empty")
	readyJSON := c.Flags.Bool("ready-json", false, "once every listener serves, print a JSON line of the bound addresses on stdout")
	check := c.Flags.Bool("check", false, "check the config and exit: 0 if it would serve, 1 if not")
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if code, ok := c.NoArgs(pos); !ok {
		return code
	}
	if *check {
		return checkConfig(*path, stdout, stderr)
	}
	// A log reader that exits (the other end of a pipe, a collector that
	// crashed) loses the lines written after it, not the lobby and its
	// rooms.
	proc.SurviveBrokenPipes()
	up, err := server.Inherited() // set when an upgrade started this process
	if err != nil {
		fmt.Fprintf(stderr, "foyer serve: %v\n", err)
		return cli.ExitFail
	}
	// What started foyer serve may have left it descriptors (a shell's, a
	// supervisor's): the rooms inherit none of them.
	_ = proc.CloseOnExecFrom(3)
	cfg := config.DefaultConfig()
	if *path != "" {
		if cfg, err = config.Load(*path); err != nil {
			fmt.Fprintf(stderr, "foyer serve: %v\n", err)
			up.Failed(err)
			return cli.ExitFail
		}
	}
	// Only Foyer's tests of the fallback turn cgroups off.
	cfg.Supervisor.NoCgroups = os.Getenv(noCgroupsEnv) == "1"
	// The log is queued (see package logq): a stderr that stops taking
	// lines never stops the server. The drops are said straight to stderr,
	// by the one goroutine that writes there.
	color := cli.IsTerminal(stderr)
	direct := newLogger(cfg.Log, stderr, color)
	q := logq.New(stderr, logq.MaxLines, logq.MaxBytes, func(n uint64) {
		direct.Warn().Uint64("lines", n).Msg("log lines dropped")
	})
	defer q.Close(logFlush)
	log := newLogger(cfg.Log, q, color)
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	o := server.Options{Log: log, LogDropped: q.Dropped, Notify: server.NotifySocket(), Successor: up}
	if *readyJSON {
		o.ReadyJSON = stdout
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	hup := upgrades(log, hangUp)
	up.Prepared(cfg.Supervisor.StateDir)
	srv, err := server.New(cfg, o)
	if err == nil {
		err = srv.Serve(ctx, hup)
	}
	if err != nil {
		log.Error().Err(err).Msg("serve failed")
		up.Failed(err)
		return cli.ExitFail
	}
	return cli.ExitOK
}

// checkConfig is foyer serve --check: the config at path (the built-in
// one if empty) is read as foyer serve reads it, with every check it
// makes of the file.
func checkConfig(path string, stdout, stderr io.Writer) int {
	name := path
	if path == "" {
		name = "the built-in config"
	}
	cfg := config.DefaultConfig()
	var err error
	if path != "" {
		cfg, err = config.Load(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "foyer serve: %v\n", err)
		fmt.Fprintf(stderr, "foyer serve --check: %s: refused\n", name)
		return cli.ExitFail
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "foyer serve: warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "%s: ok\n", name)
	return cli.ExitOK
}

// logFlush bounds how long foyer serve, as it exits, waits for the last
// lines of its log to go out to a stderr that does not take them.
const logFlush = 5 * time.Second

// newLogger is the log c configures, written to w, in colour if color is
// set and the format is for a person ("console").
func newLogger(c config.Log, w io.Writer, color bool) zerolog.Logger {
	if c.Format == "console" {
		// Colours only for a person at a terminal, not for a file or journal.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !color}
	}
	return zerolog.New(w).Level(c.Level).With().Timestamp().Logger()
}

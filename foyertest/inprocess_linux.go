package foyertest

import (
	"context"
	"net/netip"
	"os"
	"testing"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/server"
	"github.com/foyerlobby/foyer/server/config"
	"github.com/foyerlobby/foyer/supervisor"
)

// inProcess is what a lobby started by Start runs in the test's process.
type inProcess struct {
	srv *server.Server
}

// Start runs a Foyer server inside the test's process, on a free port of
// 127.0.0.1, with the reference room as its game: the same assembly as
// `foyer serve` (package server), from the same config file StartBinary
// would write for opts, so every option, Config and Admin included, means
// the same for both. See the package doc for where the room processes
// come from. The server and every room are stopped at the end of the test,
// which fails if a room process is left over.
func Start(t testing.TB, opts ...Option) *Lobby {
	t.Helper()
	s := newSettings(t, opts)
	cfg, err := config.Parse("foyertest.toml", s.configText())
	if err != nil {
		t.Fatalf("foyertest: %v", err)
	}
	// As for foyer serve, only Foyer's tests of that fallback set it.
	cfg.Supervisor.NoCgroups = os.Getenv("FOYER_TEST_NO_CGROUPS") == "1"
	// This process is no foyer binary: the one the rooms run starts each
	// as its user, where the lobby is root.
	cfg.Supervisor.Warden = []string{s.instance, "instance"}
	logs := &logBuffer{}
	log := zerolog.New(logs).With().Timestamp().Logger()
	srv, err := server.New(cfg, server.Options{Log: log})
	if err != nil {
		t.Fatalf("foyertest: %v\n%s", err, logs)
	}
	l := &Lobby{t: t, first: s.first, last: s.last, logs: logs, instance: s.instance, inProcess: inProcess{srv: srv}, admin: s.admin}
	l.addr = srv.Lobby().Addrs()[0]
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("foyertest: serve: %v", err)
		}
		l.checkGone()
		l.dumpLogsIfFailed()
	})
	return l
}

// Lobby returns the lobby of a lobby started by Start, for its Stats; it
// is nil for StartBinary.
func (l *Lobby) Lobby() *lobby.Lobby {
	if l.inProcess.srv == nil {
		return nil
	}
	return l.inProcess.srv.Lobby()
}

// Supervisor returns the supervisor of a lobby started by Start, for its
// Stats and room table; it is nil for StartBinary.
func (l *Lobby) Supervisor() *supervisor.Supervisor {
	if l.inProcess.srv == nil {
		return nil
	}
	return l.inProcess.srv.Supervisor()
}

// Server returns the server a lobby started by Start runs: the assembly
// `foyer serve` runs; it is nil for StartBinary.
func (l *Lobby) Server() *server.Server { return l.inProcess.srv }

// inProcessAdmin is AdminAddr for Start.
func (l *Lobby) inProcessAdmin() netip.AddrPort { return l.inProcess.srv.AdminAddr() }

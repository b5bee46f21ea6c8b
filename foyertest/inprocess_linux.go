package foyertest

import (
	"context"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/supervisor"
)

// inProcess is what a lobby started by Start runs in the test's process.
type inProcess struct {
	lobby *lobby.Lobby
	sup   *supervisor.Supervisor
}

// Start runs a lobby and its supervisor inside the test's process, on a
// free port of 127.0.0.1, with the reference room as its game; see the
// package doc for where the room processes come from. The lobby and every
// room are stopped at the end of the test, which fails if a room process
// is left over.
func Start(t testing.TB, opts ...Option) *Lobby {
	t.Helper()
	s := newSettings(t, opts)
	logs := &logBuffer{}
	log := zerolog.New(logs).With().Timestamp().Logger()
	sup, err := supervisor.New(s.supervisorConfig(), log)
	if err != nil {
		t.Fatalf("foyertest: supervisor: %v", err)
	}
	l := &Lobby{t: t, first: s.first, last: s.last, logs: logs, instance: s.instance, inProcess: inProcess{sup: sup}}
	lob, err := lobby.New(s.lobbyConfig(t), sup.Table(), limit.NewGuard(s.limits()), log)
	if err != nil {
		l.stopSupervisor()
		t.Fatalf("foyertest: lobby: %v", err)
	}
	l.lobby = lob
	l.addr = lob.Addrs()[0]
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- lob.Serve(ctx) }()
	t.Cleanup(func() {
		lob.Drain()
		l.stopSupervisor()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("foyertest: lobby: %v", err)
		}
		l.checkGone()
		l.dumpLogsIfFailed()
	})
	return l
}

// stopSupervisor stops every room, within stopLimit.
func (l *Lobby) stopSupervisor() {
	ctx, cancel := context.WithTimeout(context.Background(), stopLimit)
	defer cancel()
	if err := l.sup.Shutdown(ctx); err != nil {
		l.t.Errorf("foyertest: stopping the rooms: %v", err)
	}
}

// Lobby returns the lobby of a lobby started by Start, for its Stats; it
// is nil for StartBinary.
func (l *Lobby) Lobby() *lobby.Lobby { return l.lobby }

// Supervisor returns the supervisor of a lobby started by Start, for its
// Stats and room table; it is nil for StartBinary.
func (l *Lobby) Supervisor() *supervisor.Supervisor { return l.sup }

// roomConfig is the reference room's rules the options chose.
func (s *settings) roomConfig() refroom.Config {
	c := refroom.DefaultConfig
	c.MinPlayers, c.Countdown, c.MatchDuration, c.IdleTimeout = s.minPlayers, s.countdown, s.match, s.idle
	return c
}

// supervisorConfig is the supervisor Start runs.
func (s *settings) supervisorConfig() supervisor.Config {
	return supervisor.Config{
		FirstPort: s.first, LastPort: s.last,
		MaxInstances: s.maxInstances, MaxPlayers: s.maxPlayers, Warm: s.warm,
		Command:      []string{s.instance, "instance"},
		Bind:         s.bind(),
		SpawnTimeout: testSpawnTimeout, StopGrace: testStopGrace, PortCooldown: testPortCooldown,
		Room: s.roomConfig().Settings(),
	}
}

// lobbyConfig is the native edge Start runs.
func (s *settings) lobbyConfig(t testing.TB) lobby.Config {
	t.Helper()
	ap, err := netip.ParseAddrPort(s.listen)
	if err != nil {
		t.Fatalf("foyertest: listen address %q: %v", s.listen, err)
	}
	c := lobby.DefaultConfig()
	c.Listen = []netip.AddrPort{ap}
	return c
}

// limits are the rate limits of a test lobby.
func (s *settings) limits() limit.Config {
	c := limit.DefaultConfig()
	c.Rate, c.Burst, c.CreateRate, c.CreateBurst = testRate, testBurst, testCreateRate, testCreateBurst
	return c
}

package admin

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/supervisor"
)

// roomEnv, set, makes the test binary a reference room, as `foyer
// instance` is: the same SDK and game, so the pages are tested against
// real rooms without building the foyer binary.
const roomEnv = "FOYER_TEST_ADMIN_ROOM"

func TestMain(m *testing.M) {
	if os.Getenv(roomEnv) != "" {
		instance.Serve(refroom.New(zerolog.New(os.Stderr)))
	}
	os.Exit(m.Run())
}

// testLobby is a real lobby in front of a real supervisor whose rooms are
// reference rooms, for the pages to show.
type testLobby struct {
	t     testing.TB
	lobby *lobby.Lobby
	sup   *supervisor.Supervisor
}

// startLobby runs a lobby of rooms of maxPlayers on 127.0.0.1 until the
// end of the test, when it stops every room.
func startLobby(t testing.TB, maxPlayers int) *testLobby {
	t.Helper()
	os.Setenv(roomEnv, "1") // the rooms' environment; this process has served its TestMain
	first := uint16(21000 + rand.IntN(800)*10)
	cfg := supervisor.DefaultConfig()
	cfg.FirstPort, cfg.LastPort, cfg.MaxInstances, cfg.MaxPlayers = first, first+9, 4, maxPlayers
	cfg.Command, cfg.SpawnTimeout, cfg.StopGrace = []string{os.Args[0]}, 20*time.Second, 3*time.Second
	cfg.PassEnv = []string{roomEnv} // a room gets nothing of this process's environment unless told
	sup, err := supervisor.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sup.Shutdown(ctx); err != nil {
			t.Errorf("stopping the rooms: %v", err)
		}
	})
	lc := lobby.DefaultConfig()
	lc.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	lim := limit.DefaultConfig()
	lim.Rate, lim.Burst = 1000, 2000
	l, err := lobby.New(lc, sup.Table(), limit.NewGuard(lim), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("lobby: %v", err)
		}
	})
	return &testLobby{t: t, lobby: l, sup: sup}
}

// Addr is the lobby's address.
func (l *testLobby) Addr() netip.AddrPort { return l.lobby.Addrs()[0] }

// Client is a client of the lobby, closed at the end of the test.
func (l *testLobby) Client(opts ...client.Option) *client.Client {
	c, err := client.Dial(l.Addr().String(), opts...)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { c.Close() })
	return c
}

// sourcesOf are the sources of a real lobby.
func sourcesOf(l *testLobby) Sources {
	return Sources{
		Lobby:      l.lobby.Stats,
		Supervisor: l.sup.Stats,
		Rooms:      l.sup.Table().List,
		Usage:      l.sup.Usage,
		Watch:      l.sup.Table().Watch,
	}
}

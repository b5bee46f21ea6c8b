package foyertest_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet"
)

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestCleanupStopsEveryRoom runs a lobby in a subtest, creates rooms there
// (one warm, two asked for) and checks that the end of the subtest
// stopped their processes.
func TestCleanupStopsEveryRoom(t *testing.T) {
	var pids []int
	t.Run("lobby", func(t *testing.T) {
		l := foyertest.Start(t, foyertest.Warm(1), foyertest.MaxInstances(3))
		for range 2 {
			if _, err := l.Client().Create(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		rooms := l.Supervisor().Table().List().Rooms
		if len(rooms) != 2 {
			t.Fatalf("%d rooms listed, want 2", len(rooms))
		}
		first, last := l.Ports()
		for _, r := range rooms {
			if r.Port < first || r.Port > last || r.PID == 0 || !alive(r.PID) {
				t.Fatalf("room %+v: want a live process on a port in %d-%d", r, first, last)
			}
			pids = append(pids, r.PID)
		}
	})
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("room process %d outlived its test", pid)
		}
	}
}

func TestStartBinaryServesTheRealBinary(t *testing.T) {
	l := foyertest.StartBinary(t, foyertest.MaxPlayers(3))
	if l.PID() == 0 || l.Lobby() != nil {
		t.Fatalf("StartBinary: pid %d, in-process lobby %v", l.PID(), l.Lobby())
	}
	c := l.Client()
	seat, err := c.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rooms, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := packet.Room{ID: seat.Room, Players: 1, MaxPlayers: 3, Port: seat.Port, State: packet.Waiting}
	if len(rooms) != 1 || rooms[0] != want {
		t.Fatalf("listed %+v, want [%+v]", rooms, want)
	}
	l.WaitLog("room created")
}

func TestJoinOfAMissingRoomFails(t *testing.T) {
	l := foyertest.Start(t)
	_, err := l.Client().Join(context.Background(), 12345)
	if !errors.Is(err, client.ErrJoinFailed) {
		t.Fatalf("join of a missing room: %v, want ErrJoinFailed", err)
	}
}

func TestOptionsReachTheRooms(t *testing.T) {
	l := foyertest.Start(t, foyertest.MaxPlayers(2), foyertest.Ports(0, 0), foyertest.MaxInstances(1))
	c := l.Client()
	if _, err := c.Create(context.Background()); err != nil {
		t.Fatal(err)
	}
	rooms := l.Supervisor().Table().List().Rooms
	if len(rooms) != 1 || rooms[0].MaxPlayers != 2 {
		t.Fatalf("rooms %+v, want one of 2 players", rooms)
	}
	// MaxInstances(1): the second room is refused.
	if _, err := c.Create(context.Background()); !errors.Is(err, client.ErrJoinFailed) {
		t.Fatalf("second create past max_instances 1: %v, want ErrJoinFailed", err)
	}
}

// TestStartRunsTheServerAssembly: Start runs what foyer serve runs, from
// the same config: a neighbour edge from Config, the admin listener from
// Admin, next to the lobby, all in the test's process.
func TestStartRunsTheServerAssembly(t *testing.T) {
	l := foyertest.Start(t, foyertest.Admin(netip.MustParseAddrPort("127.0.0.1:0")),
		foyertest.Config("[gunz]\nenabled = true\nlisten = \"127.0.0.1:0\"\n"))
	if l.Server() == nil || l.PID() != 0 {
		t.Fatalf("Start: server %v, pid %d; want the assembly in this process", l.Server(), l.PID())
	}
	resp, err := http.Get("http://" + l.AdminAddr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
	if !strings.Contains(l.Log(), `"message":"gunz locator serving"`) {
		t.Errorf("the [gunz] section of Config did not start the locator; log:\n%s", l.Log())
	}
}

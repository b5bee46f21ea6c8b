package supervisor

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/nftdoor"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/teeinfo/teeinfotest"
	"github.com/foyerlobby/foyer/room"
)

// teeAnswers reports whether the Teeworlds server on 127.0.0.1:port
// answers an info request from the address from, asking tries times.
func teeAnswers(t *testing.T, from netip.Addr, port uint16, tries int) bool {
	t.Helper()
	return teeinfotest.Answers(t, peerSocket(t, from, port), netip.AddrPortFrom(loopback, port), tries, 200*time.Millisecond)
}

// An exec room's port answers only the addresses of its seats (the
// creator's at once) and its keeper's probes, which keep it healthy; it
// leaves the door when it is reaped, and the door goes with the
// supervisor.
func TestExecRoomsDoorFollowsTheirSeats(t *testing.T) {
	requiretest.Root(t)
	var table string
	t.Cleanup(func() { // after the supervisor's Shutdown
		if table == "" {
			return
		}
		if ok, err := nftdoor.Exists(table); ok || err != nil {
			t.Errorf("table inet %s still there after Shutdown (%v)", table, err)
		}
	})
	s, sink := newExec(t, []string{testroomBin, "tee", "{port}", "12"}, "teeworlds", func(c *Config) {
		c.HealthTimeout = 3 * time.Second
	})
	if s.door == nil {
		t.Fatal("no door as root")
	}
	table = s.door.Name()
	sink.await(t, doorShut, `"table":"inet `+table+`"`)
	creator, joiner, stranger := netip.MustParseAddr("127.0.0.5"), netip.MustParseAddr("127.0.0.6"), netip.MustParseAddr("127.0.0.7")
	r, err := s.Table().Create(context.Background(), netip.AddrPortFrom(creator, 7000))
	if err != nil {
		t.Fatal(err)
	}
	if port, ok := s.door.Rooms()[r.ID]; !ok || port != r.Port {
		t.Fatalf("room %d on port %d: the door has %v", r.ID, r.Port, s.door.Rooms())
	}
	if !teeAnswers(t, creator, r.Port, 1) {
		t.Fatal("the creator's first datagram did not pass the door")
	}
	if teeAnswers(t, joiner, r.Port, 3) || teeAnswers(t, stranger, r.Port, 3) {
		t.Fatal("an address without a seat passed the door")
	}
	if _, err := s.Table().Join(context.Background(), r.ID, netip.AddrPortFrom(joiner, 7001), room.Unproven); err != nil {
		t.Fatal(err)
	}
	if !teeAnswers(t, joiner, r.Port, 10) {
		t.Fatal("a joiner did not pass the door")
	}
	if teeAnswers(t, stranger, r.Port, 3) {
		t.Fatal("a stranger passed the door")
	}
	// The probes pass: the room outlives twice its health timeout.
	time.Sleep(2 * s.cfg.HealthTimeout)
	if _, ok := listed(s, r.ID); !ok || sink.has("room unhealthy, killing") {
		t.Fatal("the room's probes were shut out: it was killed as unhealthy")
	}
	if err := syscall.Kill(r.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("room %d out of the door", r.ID), func() bool {
		_, ok := s.door.Rooms()[r.ID]
		return !ok
	})
}

// Only the tables and trees of lobbies without a state directory that no
// longer run are those of dead lobbies.
func TestDeadLobbies(t *testing.T) {
	dead := os.Getpid() + 1<<22 // above pid_max
	for name, stale := range map[string]bool{
		fmt.Sprintf("foyer-%d-3", dead):        true,
		fmt.Sprintf("foyer-%d-1", os.Getpid()): false,
		treeName("/var/lib/foyer"):             false,
		"filter":                               false,
		fmt.Sprintf("foyer-%d", dead):          false,
	} {
		if deadLobby(name) != stale {
			t.Errorf("%s: stale %v, want %v", name, !stale, stale)
		}
	}
}

// sweepDoors removes the tables of lobbies killed without a Shutdown.
func sweepDoors(t testing.TB) {
	if _, err := nftdoor.Sweep(deadLobby); err != nil {
		t.Logf("doors of dead lobbies not swept: %v", err)
	}
}

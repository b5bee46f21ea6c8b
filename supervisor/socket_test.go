package supervisor

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/instance/keeper"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/room"
)

// newGated starts a supervisor of gated test instances, adjusted by tune:
// each starts once the returned gate's "open" file exists, and exits at
// once while its "fail" file does. It creates a first room with the gate
// open, which waits for its instance (the program has never started),
// and returns with the gate shut: a room created next is handed out
// while its instance cannot start.
func newGated(t *testing.T, tune func(*Config)) (*Supervisor, *logSink, string) {
	t.Helper()
	gate := t.TempDir()
	s, sink := newTest(t, "gated", 4, func(c *Config) {
		c.Command = append(testExe("gated"), gate)
		if tune != nil {
			tune(c)
		}
	})
	setGate(t, gate, "open", true)
	first, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	if booting(s, first.ID) {
		t.Fatal("the first room of a program that never started before was handed out while it started")
	}
	setGate(t, gate, "open", false)
	return s, sink, gate
}

// setGate creates (on) or removes (off) the gate's file name.
func setGate(t *testing.T, gate, name string, on bool) {
	t.Helper()
	path := filepath.Join(gate, name)
	var err error
	if on {
		err = os.WriteFile(path, nil, 0o644)
	} else {
		err = os.Remove(path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// booting reports whether room id is in the supervisor's hands while its
// instance still starts.
func booting(s *Supervisor, id uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.live[id]
	return r != nil && r.booting
}

// Once a room's program has started, a room is handed out as soon as its
// instance's process is forked, on a port the supervisor bound and passed
// to it: what its creator sends while the instance starts waits in the
// socket and is answered once the game is ready, and the creator's seat
// reaches the instance then.
func TestRoomIsHandedOutWhileItsInstanceStarts(t *testing.T) {
	s, sink, gate := newGated(t, nil)
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	if !booting(s, r.ID) {
		t.Fatal("a room whose instance cannot have started was not handed out as starting")
	}
	if n := spawns(s); n != 1 {
		t.Fatalf("%d spawns timed, want 1: a start under way is timed once over", n)
	}
	if row, ok := listed(s, r.ID); !ok || row.Seats != 1 || row.Port != r.Port {
		t.Fatalf("listed %+v, %v; want room %d on port %d with its creator's seat", row, ok, r.ID, r.Port)
	}
	// One datagram, sent once, before the game can read it.
	c, game := peerSocket(t, loopback, r.Port), netip.AddrPortFrom(loopback, r.Port)
	udptest.Send(t, c, game, []byte("hello"))
	setGate(t, gate, "open", true)
	if b, err := udptest.Read(c, game, 20*time.Second); err != nil || string(b) != "ok" {
		t.Fatalf("the hello sent while the room started: %q, %v", b, err)
	}
	eventually(t, "the creator in its room", func() bool {
		row, _ := listed(s, r.ID)
		return row.Players == 1 && row.Seats == 0
	})
	sink.await(t, "room ready", `"port":`+strconv.Itoa(int(r.Port)))
	if booting(s, r.ID) {
		t.Fatal("a ready room is still starting")
	}
	if n := spawns(s); n != 2 {
		t.Fatalf("%d spawns timed, want 2", n)
	}
}

// spawns is how many spawns the supervisor's latency histogram holds.
func spawns(s *Supervisor) uint64 {
	var n uint64
	for _, c := range s.Stats().SpawnLatency.Counts {
		n += c
	}
	return n
}

// A room handed out while its instance started, whose instance then fails
// to start, is reaped and frees its port; the program no longer counts as
// one that starts, so the next create waits for its instance and fails.
func TestRoomWhoseInstanceFailsToStartIsReaped(t *testing.T) {
	s, sink, gate := newGated(t, nil)
	setGate(t, gate, "fail", true)
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatalf("a create while the program last started: %v", err)
	}
	eventually(t, "the room reaped", func() bool { _, ok := listed(s, r.ID); return !ok })
	id := `"id":` + strconv.Itoa(int(r.ID))
	sink.await(t, "spawn failed", id)
	sink.await(t, "room reaped", id, `"cause":"crashed"`)
	eventually(t, "its port back", func() bool { return s.Stats().PortsInUse == 1 })
	if _, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999")); !errors.Is(err, room.ErrSpawn) {
		t.Fatalf("a create after a failed start: %v, want %v", err, room.ErrSpawn)
	}
	if n := s.Stats().SpawnFailures; n != 2 {
		t.Fatalf("%d spawn failures, want 2", n)
	}
}

// A room program that binds its port itself cannot start while the
// supervisor passes it the port: the create fails and says which key to
// set, and with it set the program runs.
func TestRoomProgramThatBindsItsPortNeedsPassSocketOff(t *testing.T) {
	for _, pass := range []bool{true, false} {
		s, _ := newTest(t, "own-bind", 2, func(c *Config) { c.PassSocket = pass })
		r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
		switch {
		case pass && (!errors.Is(err, room.ErrSpawn) || !strings.Contains(err.Error(), "pass_socket = false")):
			t.Fatalf("with the port passed: %v; want a spawn error naming pass_socket = false", err)
		case !pass && err != nil:
			t.Fatalf("with pass_socket off: %v", err)
		case !pass:
			send(t, loopback, r.Port, "hello")
		}
	}
}

// A room stopped while its instance starts, whose instance the stop ends
// before it could start, ends as stopped, not as a program that failed
// to start: the next create is handed out while its instance starts too.
func TestRoomStoppedWhileItsInstanceStarts(t *testing.T) {
	s, sink, gate := newGated(t, func(c *Config) { c.StopGrace = 200 * time.Millisecond })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StopRoom(r.ID); err != nil {
		t.Fatal(err)
	}
	// The gate stays shut: the instance is killed after the grace.
	id := `"id":` + strconv.Itoa(int(r.ID))
	sink.await(t, "room reaped", id, `"cause":"operator"`)
	if sink.has("spawn failed") || s.Stats().SpawnFailures != 0 {
		t.Fatal("a room stopped while it started counted as a failed start")
	}
	next, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	if !booting(s, next.ID) {
		t.Fatal("after a room stopped while it started, a create waited for its instance")
	}
	setGate(t, gate, "open", true)
}

// A room handed out while its instance starts is held to spawn_timeout
// until its game is ready, not to health_timeout: an instance has nothing
// to report before then.
func TestRoomStartingPastHealthTimeoutLives(t *testing.T) {
	s, sink, gate := newGated(t, func(c *Config) { c.HealthTimeout = 300 * time.Millisecond })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * s.cfg.HealthTimeout) // many sweeps, the instance still held at its gate
	if !booting(s, r.ID) || sink.has("room unhealthy, killing", `"id":`+strconv.Itoa(int(r.ID))) {
		t.Fatal("a room still starting was killed as silent")
	}
	setGate(t, gate, "open", true)
	sink.await(t, "room ready", `"id":`+strconv.Itoa(int(r.ID)))
}

// A Runner (the keeper of a foreign server) among go-plugin rooms lets go
// of the socket its host passes: the program it runs binds the port.
func TestRunnerLetsItsProgramBindThePort(t *testing.T) {
	s, _ := newTest(t, "keep", 2, func(c *Config) {
		c.Command = append(testExe("keep"), keeper.Args(keeper.Config{
			Command: []string{testroomBin, "tee", "{port}", "4"}, Probe: keeper.ProbeTeeworlds})...)
	})
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	if in := askInfoAt(t, netip.AddrPortFrom(loopback, r.Port)); in.Name != "tee" {
		t.Fatalf("the kept server on port %d says %+v", r.Port, in)
	}
}

// The port the supervisor binds for a room is bound where the rooms'
// ports are (Config.Bind), at that address only, while its instance
// starts as after: the instance keeps the socket it was passed, and
// another address of the host keeps its own use of the port.
func TestRoomSocketBoundAtBind(t *testing.T) {
	s, _, gate := newGated(t, func(c *Config) { c.Bind = loopback })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:9999"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, r.Port))); err == nil {
			c.Close()
			t.Fatalf("%s: port %d free at %v, where the room is bound", when, r.Port, loopback)
		}
		other := netip.AddrFrom4([4]byte{127, 0, 0, 2})
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(other, r.Port)))
		if err != nil {
			t.Fatalf("%s: port %d taken at %v too: %v", when, r.Port, other, err)
		}
		c.Close()
	}
	if !booting(s, r.ID) {
		t.Fatal("the room was not handed out while its instance started")
	}
	check("while its instance starts")
	setGate(t, gate, "open", true)
	eventually(t, "the room ready", func() bool { return !booting(s, r.ID) })
	check("once ready")
}

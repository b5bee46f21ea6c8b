package host_test

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// The reference room end to end: the test binary runs it in mode
// "refroom", the host launches it as the supervisor does, and players
// play it over real UDP sockets. These tests live with the host, not with
// the room, so that the SDK's own tests never link the host.

// openRefRoom launches a reference room and starts it on a free port.
func openRefRoom(t testing.TB, maxPlayers int, settings map[string]string) (*host.Process, uint16, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	p, err := host.Launch(ctx, host.LaunchConfig{Cmd: selfCommand("refroom", "")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		<-p.Exited()
	})
	port := freePort(t)
	err = p.Start(ctx, instance.Assignment{RoomID: 42, Port: port, MaxPlayers: maxPlayers, Settings: settings, Bind: loopback})
	if err == nil {
		seatLoopback(t, p)
	}
	return p, port, err
}

// client is a player on a real UDP socket.
type client struct {
	t       *testing.T
	conn    *net.UDPConn
	seq     uint16
	framing packet.Framing
}

func dial(t *testing.T, port uint16) *client {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, conn: c}
}

// dialLegacy is dial for a player in the original game's framing.
func dialLegacy(t *testing.T, port uint16) *client {
	c := dial(t, port)
	c.framing = packet.Legacy
	return c
}

func (c *client) send(typ game.Type) {
	c.t.Helper()
	c.seq++
	m := game.Message{Framing: c.framing, Type: typ, Seq: c.seq, Tick: uint32(c.seq) * 7, Token: uint32(c.seq) * 1000}
	b, err := m.Append(nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() game.Message {
	c.t.Helper()
	buf := make([]byte, 1500)
	c.conn.SetReadDeadline(time.Now().Add(patience))
	n, err := c.conn.Read(buf)
	if err != nil {
		c.t.Fatalf("waiting for the room: %v", err)
	}
	m, err := game.Parse(buf[:n])
	if err != nil {
		c.t.Fatalf("the room sent %x: %v", buf[:n], err)
	}
	if m.Framing != c.framing {
		c.t.Fatalf("the room answered a %v player in the %v framing", c.framing, m.Framing)
	}
	return m
}

// expect reads messages until one of type typ, which it returns; only
// pongs may come before it.
func (c *client) expect(typ game.Type) game.Message {
	c.t.Helper()
	for {
		m := c.recv()
		if m.Type == typ {
			return m
		}
		if m.Type != game.ServerPong {
			c.t.Fatalf("got %v, want %v", m.Type, typ)
		}
	}
}

// states collects the distinct states of p's status stream until it
// ends, and the player events.
func states(p *host.Process) (seen []packet.RoomState, events []string) {
	for s := range p.Status() {
		if len(seen) == 0 || seen[len(seen)-1] != s.State {
			seen = append(seen, s.State)
		}
		switch s.Event {
		case host.PlayerConnected:
			events = append(events, "+"+s.IP.String())
		case host.PlayerDisconnected:
			events = append(events, "-"+s.IP.String())
		}
	}
	return seen, events
}

func collect(p *host.Process) <-chan [2][]string {
	ch := make(chan [2][]string, 1)
	go func() {
		seen, events := states(p)
		var names []string
		for _, s := range seen {
			names = append(names, s.String())
		}
		ch <- [2][]string{names, events}
	}()
	return ch
}

// waitCleanExit waits for p to exit, and fails unless it exited with 0.
func waitCleanExit(t *testing.T, p *host.Process) {
	t.Helper()
	if code, sig := waitExit(t, p); code != 0 {
		t.Fatalf("room exited with %d %s", code, sig)
	}
}

func TestRefRoomMatchEndToEnd(t *testing.T) {
	t.Parallel()
	p, port, err := openRefRoom(t, 2, map[string]string{"countdown": "1100ms", "match_duration": "300ms"})
	if err != nil {
		t.Fatal(err)
	}
	history := collect(p)
	alice, bob, carol := dial(t, port), dial(t, port), dial(t, port)
	alice.send(game.ClientHello)
	if m := alice.expect(game.ServerHello); m.RoomID != 42 || m.Slot != 0 || m.MaxPlayers != 2 {
		t.Fatalf("alice's hello: %+v", m)
	}
	bob.send(game.ClientHello)
	if m := bob.expect(game.ServerHello); m.Slot != 1 {
		t.Fatalf("bob's hello: %+v", m)
	}
	carol.send(game.ClientHello)
	if m := carol.expect(game.ServerJoinDeny); m.Deny != game.DenyFull {
		t.Fatalf("carol's deny: %+v", m)
	}
	alice.send(game.ClientPing)
	if m := alice.expect(game.ServerPong); m.Seq != alice.seq || m.Token != uint32(alice.seq)*1000 {
		t.Fatalf("pong %+v does not echo ping %d", m, alice.seq)
	}
	alice.send(game.ClientReady)
	bob.send(game.ClientReady)
	for _, c := range []*client{alice, bob} {
		for _, want := range []uint16{2, 1} {
			if m := c.expect(game.CountdownTick); m.Seconds != want {
				t.Fatalf("tick %d, want %d", m.Seconds, want)
			}
		}
		if m := c.expect(game.GameStart); m.Seconds != 1 {
			t.Fatalf("game start %+v", m)
		}
		if m := c.expect(game.GameEnd); m.End != game.EndTimeUp {
			t.Fatalf("game end %+v", m)
		}
	}
	h := <-history
	if got := strings.Join(h[0], " "); got != "waiting countdown playing finished" {
		t.Fatalf("states %q", got)
	}
	if got := strings.Join(h[1], " "); got != "+127.0.0.1 +127.0.0.1" {
		t.Fatalf("player events %q", got)
	}
	waitCleanExit(t, p)
}

// A player in the original game's framing and a compact one play a match
// in one room, each answered in its own framing.
func TestRefRoomMixedFramingsEndToEnd(t *testing.T) {
	t.Parallel()
	p, port, err := openRefRoom(t, 3, map[string]string{"countdown": "1100ms", "match_duration": "300ms"})
	if err != nil {
		t.Fatal(err)
	}
	history := collect(p)
	alice, bob := dialLegacy(t, port), dial(t, port)
	alice.send(game.ClientJoinRequest)
	if m := alice.expect(game.ServerJoinAccept); m.Seq != alice.seq {
		t.Fatalf("accept %+v does not echo request %d", m, alice.seq)
	}
	alice.send(game.ClientHello)
	alice.expect(game.ServerHello)
	bob.send(game.ClientHello)
	if m := bob.expect(game.ServerHello); m.Slot != 1 || m.MaxPlayers != 3 {
		t.Fatalf("bob's hello: %+v", m)
	}
	alice.send(game.ClientPing)
	if m := alice.expect(game.ServerPong); m.Seq != alice.seq || m.Tick != uint32(alice.seq)*7 {
		t.Fatalf("pong %+v does not echo ping %d", m, alice.seq)
	}
	alice.send(game.ClientReady)
	bob.send(game.ClientReady)
	alice.expect(game.AllReady)
	for _, c := range []*client{alice, bob} {
		for _, want := range []uint16{2, 1} {
			if m := c.expect(game.CountdownTick); m.Seconds != want {
				t.Fatalf("tick %d, want %d", m.Seconds, want)
			}
		}
		c.expect(game.GameStart)
		if m := c.expect(game.GameEnd); m.End != game.EndTimeUp {
			t.Fatalf("game end %+v", m)
		}
	}
	h := <-history
	if got := strings.Join(h[0], " "); got != "waiting countdown playing finished" {
		t.Fatalf("states %q", got)
	}
	waitCleanExit(t, p)
}

// TestRefRoomSilentPlayerDropped: a player silent for silence_timeout is
// dropped, and the player who stays is told which slot it left; a room
// nobody is left in waits for its host to stop it.
func TestRefRoomSilentPlayerDropped(t *testing.T) {
	t.Parallel()
	p, port, err := openRefRoom(t, 4, map[string]string{"silence_timeout": "500ms"})
	if err != nil {
		t.Fatal(err)
	}
	history := collect(p)
	bob, alice := dial(t, port), dial(t, port)
	bob.send(game.ClientHello)
	bob.expect(game.ServerHello)
	// Alice comes later, so bob falls silent first on the room's clock.
	time.Sleep(300 * time.Millisecond)
	alice.send(game.ClientHello)
	alice.expect(game.ServerHello)
	if m := alice.expect(game.PlayerLeft); m.Slot != 0 {
		t.Fatalf("told that slot %d left, want bob's 0", m.Slot)
	}
	p.Stop(patience)
	h := <-history
	if got := strings.Join(h[0], " "); got != "waiting finished" {
		t.Fatalf("states %q", got)
	}
	if got := strings.Join(h[1], " "); !strings.HasPrefix(got, "+127.0.0.1 +127.0.0.1 -127.0.0.1") {
		t.Fatalf("player events %q", got)
	}
	waitCleanExit(t, p)
}

func TestRefRoomStopEndsTheMatch(t *testing.T) {
	t.Parallel()
	p, port, err := openRefRoom(t, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, port)
	c.send(game.ClientHello)
	c.expect(game.ServerHello)
	p.Stop(patience)
	if m := c.expect(game.GameEnd); m.End != game.EndStopped {
		t.Fatalf("game end %+v", m)
	}
	waitCleanExit(t, p)
}

func TestRefRoomGarbageGetsNoAnswer(t *testing.T) {
	t.Parallel()
	_, port, err := openRefRoom(t, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, port)
	hello, _ := (&game.Message{Type: game.ClientHello}).Append(nil)
	bad := slices.Clone(hello)
	bad[len(bad)-1] ^= 1
	// An info request one byte too long is the SDK's to drop, not the room's.
	for _, b := range [][]byte{bad, hello[:5], []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x05\x00")} {
		c.conn.Write(b)
	}
	// Legacy garbage: a CRC-less datagram (the original client sends its
	// waiting-room heartbeat so), a lobby message, an input.
	legacyHello, _ := (&game.Message{Framing: packet.Legacy, Type: game.ClientHello}).Append(nil)
	for _, b := range [][]byte{legacyHello[:packet.LegacyHeaderLen],
		packet.AppendFrame(nil, packet.Header{Framing: packet.Legacy, Type: packet.ListRooms}, packet.ClientToServer, nil),
		packet.AppendFrame(nil, packet.Header{Framing: packet.Legacy, Type: 0x05}, packet.ClientToServer, []byte{1, 2, 3})} {
		c.conn.Write(b)
	}
	c.send(game.ClientPing) // a stranger's ping gets nothing either
	c.send(game.ClientHello)
	if m := c.recv(); m.Type != game.ServerHello {
		t.Fatalf("first answer is %v, want the hello's", m.Type)
	}
}

func TestRefRoomBadSettingsFailStart(t *testing.T) {
	t.Parallel()
	_, _, err := openRefRoom(t, 4, map[string]string{"countdown": "three"})
	if err == nil || !strings.Contains(err.Error(), `countdown="three"`) {
		t.Fatalf("Start: %v", err)
	}
}

// BenchmarkColdStart measures what a room create waits for without a warm
// pool: Launch (process start and handshake) plus Start until ready.
func BenchmarkColdStart(b *testing.B) {
	var took []time.Duration
	ctx := context.Background()
	for b.Loop() {
		begin := time.Now()
		p, err := host.Launch(ctx, host.LaunchConfig{Cmd: selfCommand("refroom", "")})
		if err != nil {
			b.Fatal(err)
		}
		err = p.Start(ctx, instance.Assignment{RoomID: 1, Port: freePort(b), MaxPlayers: 4, Bind: loopback})
		took = append(took, time.Since(begin))
		if err != nil {
			b.Fatal(err)
		}
		p.Kill()
		<-p.Exited()
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	ms := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkIdleRoomsHostCPU measures what idle rooms cost their host:
// rooms are started, their status streams read (heartbeats included), and
// the host's CPU time over a quiet window is reported per 200 rooms.
func BenchmarkIdleRoomsHostCPU(b *testing.B) {
	const rooms = 100
	const window = 5 * time.Second
	for b.Loop() {
		for range rooms {
			p, _, err := openRefRoom(b, rooms, nil)
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				for range p.Status() {
				}
			}()
		}
		before := cpuTime(b)
		time.Sleep(window)
		used := cpuTime(b) - before
		b.ReportMetric(100*float64(used)/float64(window)*200/rooms, "host-cpu-%-per-200-rooms")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

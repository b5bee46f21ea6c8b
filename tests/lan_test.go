package tests

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/internal/requiretest"
)

// The LAN test's network: two namespaces joined by a veth pair, with
// addresses that exist only inside them. Nothing is sent anywhere else.
var (
	lanServerIP = netip.MustParseAddr("10.213.0.1")
	lanPlayerIP = netip.MustParseAddr("10.213.0.2")
)

const lanPrefixBits = 24

// lanPort is the lobby's port on the test network: the default one, as a
// LAN party would use (the namespace has no other lobby).
const lanPort = 7777

// lanWait is how long `rooms --lan` collects answers. A broadcast has no
// last answer to wait for, so this is a window; the lobby answers LIST at
// once, and the window is generous for a loaded machine.
const lanWait = "3s"

// lanRun runs a command and fails the test with its output if it fails.
func lanRun(t testing.TB, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// lanNamespaces creates the server's and the player's namespaces and the
// veth pair between them, and deletes them at the end of the test, even a
// failed one. It requires network namespaces (root, the ip command, a
// kernel or container that allows them): the LAN path is what the test is
// there to show, and the loopback path is TestLANRoomsOnLoopback's. It
// returns the namespaces' names and their ends of the pair.
func lanNamespaces(t testing.TB) (server, player, serverDev, playerDev string) {
	t.Helper()
	requiretest.Netns(t)
	// Unique per run, short enough for interface names (15 bytes).
	tag := fmt.Sprintf("fy%d%04x", os.Getpid()%100000, rand.IntN(1<<16))
	server, player = tag+"s", tag+"p"
	lanRun(t, "ip", "netns", "add", server)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", server).Run() })
	lanRun(t, "ip", "netns", "add", player)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", player).Run() })

	// The pair is created inside the server's namespace, so that not even
	// for a moment does an end of it exist in the test's own.
	lanRun(t, "ip", "-n", server, "link", "add", tag+"a", "type", "veth", "peer", "name", tag+"b", "netns", player)
	for _, end := range []struct {
		ns, dev string
		ip      netip.Addr
	}{{server, tag + "a", lanServerIP}, {player, tag + "b", lanPlayerIP}} {
		lanRun(t, "ip", "-n", end.ns, "addr", "add", netip.PrefixFrom(end.ip, lanPrefixBits).String(),
			"brd", "+", "dev", end.dev)
		lanRun(t, "ip", "-n", end.ns, "link", "set", end.dev, "up")
		lanRun(t, "ip", "-n", end.ns, "link", "set", "lo", "up")
	}
	return server, player, tag + "a", tag + "b"
}

// TestLANRooms finds a lobby on the local network without its address:
// `foyer serve` with its default listen address in one network namespace,
// `foyer rooms --lan` in another, joined by a veth pair. It needs root and
// ip(8).
func TestLANRooms(t *testing.T) {
	server, player, _, _ := lanNamespaces(t)
	t.Logf("LAN path: network namespaces %s (%v) and %s (%v)", server, lanServerIP, player, lanPlayerIP)
	l := foyertest.StartBinary(t, foyertest.Binary(bin), foyertest.Wrap("ip", "netns", "exec", server),
		foyertest.Listen(netip.AddrPortFrom(netip.IPv4Unspecified(), lanPort)))
	inPlayer := []string{"ip", "netns", "exec", player}
	lobby := netip.AddrPortFrom(lanServerIP, lanPort).String()

	// A player on the LAN creates a room by address, then another finds
	// the lobby, and the room, by broadcast.
	r := cliRun(t, inPlayer, "create", "--json", lobby)
	if r.code != 0 {
		t.Fatalf("create in the player's namespace: exit %d\n%s%s\nserver log:\n%s", r.code, r.stdout, r.stderr, l.Log())
	}
	var seat cliSeatJSON
	cliDecode(t, r.stdout, &seat)
	r = cliRun(t, inPlayer, "rooms", "--lan", "--json", "--wait", lanWait)
	lanCheck(t, r, lobby, seat)

	// On the lobby's own host, a room alone is joined at the default
	// address, 127.0.0.1:7777.
	r = cliRun(t, []string{"ip", "netns", "exec", server}, "join", "--json", fmt.Sprint(seat.Room))
	var joined cliSeatJSON
	if r.code != 0 {
		t.Fatalf("join %d at the default address: exit %d\n%s%s", seat.Room, r.code, r.stdout, r.stderr)
	}
	if cliDecode(t, r.stdout, &joined); joined.Lobby != "127.0.0.1:7777" || joined.Room != seat.Room || joined.Port != seat.Port {
		t.Errorf("join %d at the default address: %+v", seat.Room, joined)
	}
}

// TestLANRoomsOnLoopback is the LAN path where there is no LAN: the
// lobby on 127.0.0.1, found by a query sent to that address.
func TestLANRoomsOnLoopback(t *testing.T) {
	l := cliLobby(t)
	lobby := l.Addr().String()
	var seat cliSeatJSON
	cliDecode(t, cliOK(t, "create", "--json", lobby), &seat)
	r := cliRun(t, nil, "rooms", "--lan", "--json", "--wait", lanWait,
		"--broadcast", l.Addr().Addr().String(), "--port", fmt.Sprint(l.Addr().Port()))
	lanCheck(t, r, lobby, seat)
}

// lanCheck checks that `rooms --lan --json` found exactly the lobby at
// lobby, with the room of seat.
func lanCheck(t *testing.T, r cliResult, lobby string, seat cliSeatJSON) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("rooms --lan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var found []cliRoomsJSON
	cliDecode(t, r.stdout, &found)
	if len(found) != 1 || found[0].Lobby != lobby || len(found[0].Rooms) != 1 ||
		found[0].Rooms[0].ID != seat.Room || found[0].Rooms[0].Port != seat.Port {
		t.Fatalf("rooms --lan found %+v; want the lobby %s with room %d on port %d", found, lobby, seat.Room, seat.Port)
	}
}

// TestLANRoomsNoNetwork is `foyer rooms --lan` on a host with no network
// but loopback (a namespace of its own): the query has no route, and the
// CLI says so in a sentence that names --broadcast, rather than an errno.
func TestLANRoomsNoNetwork(t *testing.T) {
	requiretest.Netns(t)
	ns := fmt.Sprintf("fy%d%04xn", os.Getpid()%100000, rand.IntN(1<<16))
	lanRun(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	lanRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
	r := cliRun(t, []string{"ip", "netns", "exec", ns}, "rooms", "--lan", "--wait", "1s")
	if r.code == 0 || !strings.Contains(r.stderr, "no network to broadcast on") || !strings.Contains(r.stderr, "--broadcast") ||
		strings.Contains(r.stderr, "network is unreachable") {
		t.Fatalf("rooms --lan with no route: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

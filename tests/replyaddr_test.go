package tests

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/packet/gunz"
)

// replyGunzPort is the GunZ locator's port in the server's namespace.
const replyGunzPort = 8900

// TestRepliesLeaveFromTheAddressAsked is a host with two addresses of
// each family on its one interface and a lobby bound to every address, for
// each family (`foyer serve` on 0.0.0.0 and on [::] in the server's
// network namespace, its rooms on every address too): a player in the
// other namespace creates a room and lists the rooms at each address,
// plays in a room it creates there (`foyer play`: its seat token, its
// hello and the room's answers), and, over IPv4, asks the GunZ locator
// on 0.0.0.0 at each address; every answer comes. The player's sockets
// are connected to the address they asked, so an answer that left from
// the interface's first address would never reach them.
func TestRepliesLeaveFromTheAddressAsked(t *testing.T) {
	server, player, serverDev, playerDev := lanNamespaces(t)
	secondary := netip.MustParseAddr("10.213.0.3")
	lanRun(t, "ip", "-n", server, "addr", "add", netip.PrefixFrom(secondary, lanPrefixBits).String(), "dev", serverDev)
	// IPv6 without duplicate address detection, which would hold each
	// address back for a while.
	v6 := []netip.Addr{netip.MustParseAddr("fd00:213::1"), netip.MustParseAddr("fd00:213::3")}
	for _, a := range v6 {
		lanRun(t, "ip", "-n", server, "addr", "add", netip.PrefixFrom(a, 64).String(), "dev", serverDev, "nodad")
	}
	lanRun(t, "ip", "-n", player, "addr", "add", "fd00:213::2/64", "dev", playerDev, "nodad")

	inServer := foyertest.Wrap("ip", "netns", "exec", server)
	inPlayer := []string{"ip", "netns", "exec", player}
	for _, family := range []struct {
		any   netip.Addr
		asked []netip.Addr
	}{
		{netip.IPv4Unspecified(), []netip.Addr{lanServerIP, secondary}},
		{netip.IPv6Unspecified(), v6},
	} {
		opts := []foyertest.Option{foyertest.Binary(bin), inServer, foyertest.Listen(netip.AddrPortFrom(family.any, lanPort))}
		if family.any.Is4() {
			opts = append(opts, foyertest.Config(fmt.Sprintf("[gunz]\nenabled = true\nlisten = \"0.0.0.0:%d\"\n", replyGunzPort)))
		}
		l := foyertest.StartBinary(t, opts...)
		for _, a := range family.asked {
			lobby := netip.AddrPortFrom(a, lanPort).String()
			r := cliRun(t, inPlayer, "create", "--json", lobby)
			if r.code != 0 {
				t.Fatalf("create at %s: exit %d\n%s%s\nserver log:\n%s", lobby, r.code, r.stdout, r.stderr, l.Log())
			}
			var seat cliSeatJSON
			cliDecode(t, r.stdout, &seat)
			r = cliRun(t, inPlayer, "rooms", "--json", lobby)
			if r.code != 0 {
				t.Fatalf("rooms at %s: exit %d\n%s%s", lobby, r.code, r.stdout, r.stderr)
			}
			var listed cliRoomsJSON
			cliDecode(t, r.stdout, &listed)
			found := false
			for _, rm := range listed.Rooms {
				found = found || rm.ID == seat.Room
			}
			if listed.Lobby != lobby || !found {
				t.Errorf("rooms at %s: %+v; want room %d among them", lobby, listed, seat.Room)
			}

			p := cliStartPlayerIn(t, inPlayer, "--ready", "--timeout", "1s", lobby)
			p.line(t, regexp.MustCompile(`^in room \d+: slot 1 of`))
			p.cmd.Process.Kill()

			if a.Is4() {
				replyGunz(t, player, a)
			}
		}
	}
}

// replyGunz asks the GunZ locator at ip from a socket in namespace ns
// connected to it, and wants an answer that lists ip.
func replyGunz(t *testing.T, ns string, ip netip.Addr) {
	t.Helper()
	var c *net.UDPConn
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, replyGunzPort))
	if err := inNetns(ns, func() (err error) { c, err = net.DialUDP("udp4", nil, to); return err }); err != nil {
		t.Fatalf("udp socket in %s: %v", ns, err)
	}
	defer c.Close()
	if _, err := c.Write(gunzHex(t, gunzSeedRequest)); err != nil {
		t.Fatal(err)
	}
	b := gunzRecv(t, c, 10*time.Second) // liveness bound, never a speed check
	if b == nil {
		t.Fatalf("GunZ locator at %v: no answer", to)
	}
	r, err := gunz.ParseResponse(b)
	if err != nil || len(r.Servers) == 0 || r.Servers[0].Addr != ip {
		t.Errorf("GunZ locator at %v: %+v, %v; want its rooms at %v", to, r, err, ip)
	}
}

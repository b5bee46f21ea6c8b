package tests

import (
	"net/netip"
	"testing"

	"github.com/foyerlobby/foyer/foyertest"
)

// TestRepliesLeaveFromTheAddressAsked is a host with two addresses of
// each family on its one interface and a lobby bound to every address, for
// each family (`foyer serve` on 0.0.0.0 and on [::] in the server's
// network namespace): a player in the other namespace creates a room and
// lists the rooms at each address, and hears every answer. The CLI's
// socket is connected to the address it asked, so an answer that left
// from the interface's first address would never reach it.
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
		l := foyertest.StartBinary(t, foyertest.Binary(bin), inServer, foyertest.Listen(netip.AddrPortFrom(family.any, lanPort)))
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
		}
	}
}

//go:build linux

package lobby

import (
	"net"
	"net/netip"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// A lobby bound to every address answers from the address a request was
// sent to, on its read loop (LIST, JOIN) and from the goroutine of a
// CREATE alike: a client whose socket is connected to 127.0.0.2 hears
// every answer, though a reply to 127.0.0.1 would leave from 127.0.0.1 by
// the routes.
func TestRepliesLeaveFromTheAddressAsked(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 7, Port: 30007, MaxPlayers: 4, State: packet.Waiting})
	cfg := testConfig()
	cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:0")}
	_, addr := start(t, cfg, rooms)
	asked := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), addr.Port())
	conn, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, net.UDPAddrFromAddrPort(asked))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &client{t: t, conn: conn, to: asked}
	if m := c.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0); m.Type != packet.RoomList || len(m.Rooms) != 1 {
		t.Errorf("LIST: %+v", m)
	}
	if m := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 2), 7); m.Type != packet.JoinSuccess {
		t.Errorf("JOIN: %+v", m)
	}
	if m := c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 3), 0); m.Type != packet.RoomCreated {
		t.Errorf("CREATE: %+v", m)
	}
}

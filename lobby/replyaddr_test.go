//go:build linux

package lobby

import (
	"net"
	"net/netip"
	"testing"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// A lobby bound to every address answers from the address a request was
// sent to, on its read loop (LIST, JOIN) and from the goroutine of a
// CREATE alike: a client whose socket is connected to 127.0.0.2 hears
// every answer, though a reply to 127.0.0.1 would leave from 127.0.0.1 by
// the routes.
func TestRepliesLeaveFromTheAddressAsked(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 7, Port: 30007, MaxPlayers: 4, State: packet.Waiting})
	c := dialSecondAddress(t, rooms)
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

// The extension's answers leave from the address asked too: EXT_RETRY
// and EXT_ROOMS from the read loop, EXT_SEAT from a CREATE's goroutine.
func TestExtRepliesLeaveFromTheAddressAsked(t *testing.T) {
	c := &extClient{client: dialSecondAddress(t, roomtabletest.New(t, roomtable.Config{}))}
	if m := c.ask(ext.Message{Header: packet.Header{Type: ext.List}}); m.Type != ext.Rooms || c.token == nil {
		t.Errorf("EXT_LIST: %+v, token %x", m, c.token)
	}
	if m := c.ask(ext.Message{Header: packet.Header{Type: ext.Create}}); m.Type != ext.Seat {
		t.Errorf("EXT_CREATE: %+v", m)
	}
}

// dialSecondAddress starts a lobby on 0.0.0.0 in front of rooms and
// returns a client connected to it at 127.0.0.2 from 127.0.0.1.
func dialSecondAddress(t *testing.T, rooms room.Table) *client {
	cfg := testConfig()
	cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:0")}
	_, addr := start(t, cfg, rooms)
	asked := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), addr.Port())
	conn, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, net.UDPAddrFromAddrPort(asked))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &client{t: t, conn: conn, to: asked}
}

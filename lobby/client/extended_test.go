package client_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/lobby/client/clienttest"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// realLobby serves the real lobby in front of a table without processes.
func realLobby(t *testing.T) (netip.AddrPort, *roomtabletest.Rooms) {
	t.Helper()
	rooms := roomtabletest.New(t, roomtable.Config{SeatsPerAddress: 100, RoomsPerNetwork: 100})
	cfg := lobby.DefaultConfig()
	cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	l, err := lobby.New(cfg, rooms, limit.NewGuard(edgetest.Limits(1000, 1000)), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Serve(t, l.Serve)
	return l.Addrs()[0], rooms
}

func dialAt(t *testing.T, addr netip.AddrPort, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(addr.String(), append([]client.Option{client.WithTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestExtendedClient: against the real lobby the client creates a named
// private room with a password, joins it by code (in any case) with the
// password and not without, lists named rooms by filter, quick-joins the
// fullest, and says why the lobby refused.
func TestExtendedClient(t *testing.T) {
	addr, rooms := realLobby(t)
	ctx := context.Background()
	owner := dialAt(t, addr)
	priv, err := owner.CreateRoom(ctx, client.CreateOptions{Meta: ext.Meta{Name: "Ann's", Mode: "ctf"}, Private: true, Password: "pw"})
	if err != nil || priv.Code == "" || len(priv.Token) != ext.TokenLen || priv.Addr != netip.AddrPortFrom(addr.Addr(), priv.Port) {
		t.Fatalf("create: %+v, %v", priv, err)
	}
	guest := dialAt(t, addr, client.WithFraming(packet.Legacy))
	_, err = guest.JoinCode(ctx, priv.Code, "")
	var refused *client.RefusedError
	if !errors.As(err, &refused) || refused.Reason != room.CodeWrongPassword || !errors.Is(err, client.ErrJoinFailed) {
		t.Fatalf("join without the password: %v", err)
	}
	lower := []byte(priv.Code)
	for i := range lower {
		lower[i] += 'a' - 'A'
	}
	if s, err := guest.JoinCode(ctx, string(lower), "pw"); err != nil || s.Room != priv.Room {
		t.Fatalf("join by code: %+v, %v", s, err)
	}
	if _, err := guest.JoinRoom(ctx, priv.Room, "pw"); !errors.As(err, &refused) || refused.Reason != room.CodeNotFound {
		t.Fatalf("a private room by id: %v", err)
	}
	pub, err := owner.CreateRoom(ctx, client.CreateOptions{Meta: ext.Meta{Name: "Bob's", Mode: "ctf", Tags: []ext.Tag{{Key: "region", Value: "eu"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.CreateRoom(ctx, client.CreateOptions{Meta: ext.Meta{Name: "other", Mode: "dm"}}); err != nil {
		t.Fatal(err)
	}
	listed, err := guest.Rooms(ctx, ext.Filter{Mode: "ctf"})
	if err != nil || len(listed) != 1 || listed[0].ID != pub.Room || listed[0].Name != "Bob's" || listed[0].Code != pub.Code {
		t.Fatalf("rooms of mode ctf: %+v, %v", listed, err)
	}
	q, err := guest.Quick(ctx, ext.Filter{Tags: []ext.Tag{{Key: "region", Value: "eu"}}})
	if err != nil || q.Room != pub.Room || q.Token == "" {
		t.Fatalf("quick: %+v, %v", q, err)
	}
	if r, _ := rooms.Room(pub.Room); r.Occupied() != 2 {
		t.Fatalf("after the quick join: %+v", r)
	}
}

// TestFallsBackToSeed: against a lobby that speaks only the seed
// messages, the client creates, joins, lists and quick-joins the seed
// way, and says what needs the extension.
func TestFallsBackToSeed(t *testing.T) {
	l := clienttest.Start(t)
	c := dialAt(t, l.Addr, client.WithTimeout(300*time.Millisecond))
	ctx := context.Background()
	s, err := c.CreateRoom(ctx, client.CreateOptions{Meta: ext.Meta{Name: "x"}})
	if err != nil || s.Room != 1 || s.Code != "" {
		t.Fatalf("create: %+v, %v", s, err)
	}
	if _, err := c.CreateRoom(ctx, client.CreateOptions{Private: true}); !errors.Is(err, client.ErrNoExtension) {
		t.Fatalf("a private room from a seed lobby: %v", err)
	}
	if _, err := c.JoinCode(ctx, "ABCDEF", ""); !errors.Is(err, client.ErrNoExtension) {
		t.Fatalf("a code from a seed lobby: %v", err)
	}
	if rs, err := c.Rooms(ctx, ext.Filter{}); err != nil || len(rs) != 1 || rs[0].ID != 1 {
		t.Fatalf("rooms: %+v, %v", rs, err)
	}
	if q, err := c.Quick(ctx, ext.Filter{}); err != nil || q.Room != 1 {
		t.Fatalf("quick: %+v, %v", q, err)
	}
}

// TestPresent: Present sends the seat's token until the room answers
// EXT_ADMITTED for its room, and ignores what else comes.
func TestPresent(t *testing.T) {
	room := listenLoopback(t)
	seat := client.Seat{Room: 7, Addr: room.LocalAddr().(*net.UDPAddr).AddrPort(), Token: string(make([]byte, ext.TokenLen))}
	go func() {
		buf := make([]byte, 2048)
		for i := 0; ; i++ {
			n, from, err := room.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if m, err := ext.Parse(buf[:n]); err != nil || m.Type != ext.Present || i == 0 {
				continue // the first is lost
			}
			for _, id := range []uint32{8, 7} { // another room's answer first
				b, _ := (&ext.Message{Header: packet.Header{Type: ext.Admitted}, RoomID: id}).Append(nil)
				room.WriteToUDPAddrPort(b, from)
			}
		}
	}()
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(seat.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := client.Present(context.Background(), conn, seat, 200*time.Millisecond, 3); err != nil {
		t.Fatal(err)
	}

	// From an unconnected socket, as a game's for many peers is: Present
	// sends to the seat's address, and leaves the socket unconnected.
	game := listenLoopback(t)
	if err := client.Present(context.Background(), game, seat, 200*time.Millisecond, 3); err != nil {
		t.Fatal(err)
	}
	if game.RemoteAddr() != nil {
		t.Fatalf("Present connected the socket to %v", game.RemoteAddr())
	}
	// And it takes EXT_ADMITTED from the seat's address only: another
	// sender's, for the right room, while the room says nothing, is not it.
	mute, forger := listenLoopback(t), listenLoopback(t)
	admitted, _ := (&ext.Message{Header: packet.Header{Type: ext.Admitted}, RoomID: seat.Room}).Append(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			forger.WriteTo(admitted, game.LocalAddr())
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	silent := seat
	silent.Addr = mute.LocalAddr().(*net.UDPAddr).AddrPort()
	if err := client.Present(context.Background(), game, silent, 100*time.Millisecond, 2); !errors.Is(err, client.ErrTimeout) {
		t.Fatalf("with the room silent and another sender answering for it: %v, want a timeout", err)
	}
}

// listenLoopback is an unconnected UDP socket on 127.0.0.1, closed with t.
func listenLoopback(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

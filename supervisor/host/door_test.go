package host_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// peer is a socket a test talks to a room from, bound on one loopback IP.
type peer struct {
	t    *testing.T
	conn *net.UDPConn
	to   *net.UDPAddr
}

func newPeer(t *testing.T, ip string, port uint16) *peer {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &peer{t: t, conn: c, to: net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, port))}
}

func (p *peer) send(msg string) {
	p.t.Helper()
	if _, err := p.conn.WriteToUDP([]byte(msg), p.to); err != nil {
		p.t.Fatal(err)
	}
}

// echo reports whether the game echoed msg to p within wait.
func (p *peer) echo(msg string, wait time.Duration) bool {
	p.t.Helper()
	buf := make([]byte, 64)
	p.conn.SetReadDeadline(time.Now().Add(wait))
	for {
		n, err := p.conn.Read(buf)
		if err != nil {
			return false
		}
		if string(buf[:n]) == msg {
			return true
		}
	}
}

// keep holds one seat in p's room for each address, expiring at exp.
func keep(t *testing.T, p *host.Process, exp time.Time, players ...string) {
	t.Helper()
	var seats []room.Seat
	for _, a := range players {
		seats = append(seats, room.Seat{Player: netip.MustParseAddrPort(a), Expires: exp})
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := p.Keep(ctx, host.Kept{Listed: true, Seats: seats}); err != nil {
		t.Fatal(err)
	}
}

// refusedWait is how long a test waits to see that nothing came back: an
// echo arrives in microseconds on loopback, so a door that let a datagram
// through is seen well within it.
const refusedWait = 300 * time.Millisecond

// The door of every game built on the SDK: a datagram reaches the game only
// from an address the door admitted, or from an IP that holds an unexpired
// seat, which admitting takes up; a datagram that came just before its
// sender's seat reaches the game when the seat does.
func TestDoorAdmitsOnlySeatHolders(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := p.Start(ctx, instance.Assignment{RoomID: 8, Port: port, MaxPlayers: 4, Bind: loopback}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)

	stranger := newPeer(t, "127.0.0.1", port)
	stranger.send("no seat")
	if stranger.echo("no seat", refusedWait) {
		t.Fatal("a datagram from an address without a seat reached the game")
	}

	keep(t, p, later, "127.0.0.2:4000", "127.0.0.5:4000")
	seated := newPeer(t, "127.0.0.2", port)
	seated.send("first")
	if !seated.echo("first", patience) {
		t.Fatal("the seated player's first datagram did not reach the game")
	}
	seated.send("again")
	if !seated.echo("again", patience) {
		t.Fatal("an admitted player's later datagram did not reach the game")
	}
	second := newPeer(t, "127.0.0.2", port) // the same IP's only seat is taken
	second.send("second socket")
	if second.echo("second socket", refusedWait) {
		t.Fatal("one seat admitted two addresses")
	}
	stranger.send("still no seat")
	if stranger.echo("still no seat", refusedWait) {
		t.Fatal("a seat for another IP admitted a stranger")
	}

	// A knock before the seat: taken by the game once the seat comes,
	// without being sent again.
	early := newPeer(t, "127.0.0.3", port)
	early.send("knock")
	if early.echo("knock", refusedWait) {
		t.Fatal("the knock reached the game before its seat")
	}
	keep(t, p, later, "127.0.0.3:4000", "127.0.0.5:4000")
	if !early.echo("knock", patience) {
		t.Fatal("the knock did not reach the game when its sender's seat came")
	}

	// An expired seat admits no one.
	keep(t, p, time.Now().Add(-time.Second), "127.0.0.4:4000")
	late := newPeer(t, "127.0.0.4", port)
	late.send("expired")
	if late.echo("expired", refusedWait) {
		t.Fatal("an expired seat admitted its player")
	}
}

package instance

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udpsock"
	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// A knock reaches a game blocked in its read as soon as its sender's seat
// comes, time after time, whether the game reads with a deadline or not:
// the wake-up is never lost between the read timing out and the flag that
// says why.
func TestKnockWakesABlockedRead(t *testing.T) {
	sock, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	d := newDoor()
	c := &roomConn{PacketConn: sock, udp: sock, door: d}

	type read struct {
		msg string
		err error
	}
	reads := make(chan read)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := c.ReadFrom(buf)
			reads <- read{string(buf[:n]), err}
			if err != nil && !isTimeout(err) {
				return
			}
		}
	}()

	for i := range 200 {
		if i%2 == 1 {
			c.SetReadDeadline(time.Now().Add(time.Hour))
		} else {
			c.SetReadDeadline(time.Time{})
		}
		from, err := net.DialUDP("udp4", nil, sock.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer from.Close() // open to the end: a new sender never reuses an admitted port
		msg := fmt.Sprintf("knock %d", i)
		refused := d.refusedCount()
		if _, err := from.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		for give := time.Now().Add(10 * time.Second); d.refusedCount() == refused; time.Sleep(time.Millisecond) {
			if time.Now().After(give) {
				t.Fatalf("round %d: the knock was never refused", i)
			}
		}
		now := time.Now()
		if !d.seat(seatsFor(now.Add(time.Minute), from.LocalAddr().String()), now) {
			t.Fatalf("round %d: the door does not say the knock's seat came", i)
		}
		c.wake()
		select {
		case r := <-reads:
			if r.err != nil || r.msg != msg {
				t.Fatalf("round %d: read %q, %v; want %q", i, r.msg, r.err, msg)
			}
		case <-time.After(10 * time.Second): // liveness bound, never a speed check
			t.Fatalf("round %d: the knock did not wake the read", i)
		}
	}
	sock.Close()
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// On a socket bound to every address (the SDK's default, dual-stack, or
// 0.0.0.0), what the room sends a player leaves from the address the
// player sent to: the info answers, and the game's replies (WriteTo) to a
// player admitted at once or let in from a knock. Each player's socket is
// connected to the address it asks, 127.0.0.2 or 127.0.0.3, and takes
// nothing from 127.0.0.1, which the routes pick for a reply to 127.0.0.1.
func TestRepliesLeaveFromTheAddressSentTo(t *testing.T) {
	for _, bind := range []netip.Addr{{}, netip.IPv4Unspecified()} {
		sock, err := udpsock.Listen(bind, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := newDoor()
		c, err := newRoomConn(sock, bind, newInfoAnswerer(Assignment{RoomID: 3, MaxPlayers: 4}, newReporter(nil), nil), d)
		if err != nil {
			t.Fatal(err)
		}
		echoed := make(chan struct{})
		go func() { // the game: it echoes what it reads
			defer close(echoed)
			buf := make([]byte, 64)
			for {
				n, from, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				c.WriteTo(buf[:n], from)
			}
		}()
		port := sock.LocalAddr().(*net.UDPAddr).Port
		for i, asked := range []string{"127.0.0.2", "127.0.0.3"} {
			p, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(asked), Port: port})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			recv := func(what string) []byte {
				t.Helper()
				buf := make([]byte, teeinfo.MaxDatagram)
				p.SetReadDeadline(time.Now().Add(10 * time.Second)) // liveness bound, never a speed check
				n, err := p.Read(buf)
				if err != nil {
					t.Fatalf("bind %v, asked %s: no %s: %v", bind, asked, what, err)
				}
				return buf[:n]
			}
			if _, err := p.Write(teeinfo.Request{Token: 1}.Append(nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := teeinfo.ParseReply(recv("info answer")); err != nil {
				t.Errorf("bind %v, asked %s: info answer: %v", bind, asked, err)
			}
			msg := fmt.Sprintf("hello %d", i)
			knock := i == 1 // sent before the seat comes
			refused := d.refusedCount()
			if knock {
				if _, err := p.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				for give := time.Now().Add(10 * time.Second); d.refusedCount() == refused; time.Sleep(time.Millisecond) {
					if time.Now().After(give) {
						t.Fatalf("bind %v: the knock was never refused", bind)
					}
				}
			}
			now := time.Now()
			d.seat(seatsFor(now.Add(time.Minute), p.LocalAddr().String()), now)
			if knock {
				c.wake()
			} else if _, err := p.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			if got := string(recv("echo")); got != msg {
				t.Errorf("bind %v, asked %s: echo %q, want %q", bind, asked, got, msg)
			}
		}
		sock.Close()
		<-echoed
	}
}

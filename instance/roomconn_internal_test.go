package instance

import (
	"fmt"
	"net"
	"testing"
	"time"
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

package udptest

import (
	"net"
	"testing"
	"time"
)

// Read returns the peer's datagram, not one that another address sent
// before it; and nothing when only others send.
func TestReadTakesOnlyItsPeer(t *testing.T) {
	c := Listen(t, "127.0.0.1")
	to := c.LocalAddr().(*net.UDPAddr).AddrPort()
	peer, stranger := Listen(t, "127.0.0.1"), Listen(t, "127.0.0.2")
	from := peer.LocalAddr().(*net.UDPAddr).AddrPort()

	Send(t, stranger, to, []byte("late reply"))
	Send(t, peer, to, []byte("answer"))
	if b, err := Read(c, from, 5*time.Second); err != nil || string(b) != "answer" {
		t.Errorf("Read = %q, %v; want the peer's answer", b, err)
	}

	Send(t, stranger, to, []byte("late reply"))
	if b, err := Read(c, from, 200*time.Millisecond); err != nil || b != nil {
		t.Errorf("with only a stranger sending: Read = %q, %v; want nothing", b, err)
	}
}

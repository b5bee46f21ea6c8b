package instance

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// roomConn is the socket a game gets. Before the game sees a datagram it
// answers server-browser requests (connless datagrams, see infoAnswerer)
// and keeps out whoever its door does not admit; every other datagram
// reaches the game unchanged.
type roomConn struct {
	net.PacketConn // the socket, as the game may use it
	udp            *net.UDPConn
	info           *infoAnswerer
	door           *door
	// reconnected is the game's Reconnecter; nil when it is none.
	reconnected Reconnecter

	mu       sync.Mutex
	deadline time.Time // the game's read deadline
	// woken is set when a knock's sender got a seat: the next read takes
	// the knock first, and a read the wake-up cut short reads on.
	woken bool
}

// ReadFrom reads the next datagram for the game: one from an address the
// door admits, or a knock whose sender has been seated since. Connless
// datagrams are answered when they are well-formed requests within the
// rate limits and dropped otherwise; the game's read deadline applies to
// the whole call.
func (c *roomConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		if c.takeWake() {
			if n, from, ok := c.door.knocked(p, time.Now()); ok {
				return n, net.UDPAddrFromAddrPort(from), nil
			}
		}
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !c.deadlinePassed() {
				continue // a wake-up, not the game's deadline
			}
			return n, addr, err
		}
		if isConnless(p[:n]) {
			c.info.answer(c.udp, p[:n], addr, time.Now())
			continue
		}
		if packet.TypeOf(p[:n]) == ext.Present {
			c.presented(p[:n], addr)
			continue
		}
		if u, ok := addr.(*net.UDPAddr); ok && c.door.admit(u.AddrPort(), p[:n], time.Now()) {
			return n, addr, nil
		}
	}
}

// presented seats the sender of a seat token, answers EXT_ADMITTED and,
// when the token's holder moved, tells the game (on the goroutine that
// reads, before any datagram from the new address reaches it). An
// EXT_PRESENT the door refuses gets nothing.
func (c *roomConn) presented(b []byte, addr net.Addr) {
	u, ok := addr.(*net.UDPAddr)
	if !ok {
		return
	}
	a, ok := c.door.present(u.AddrPort(), b, time.Now())
	if !ok {
		return
	}
	req, _ := ext.ParseRequest(b) // the door parsed it already
	ack := ext.Message{Header: packet.Header{Framing: req.Framing, Type: ext.Admitted, Seq: req.Seq, Tick: req.Tick}, RoomID: a.room}
	if out, err := ack.Append(nil); err == nil {
		_, _ = c.udp.WriteToUDPAddrPort(out, u.AddrPort())
	}
	if a.From.IsValid() && c.reconnected != nil {
		c.reconnected.PlayerReconnected(a.From, a.To)
	}
}

// SetReadDeadline sets the game's read deadline. A wake-up not taken yet
// keeps the socket's deadline in the past, so that the read it cuts short
// is not put back to sleep.
func (c *roomConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	if c.woken {
		return c.PacketConn.SetReadDeadline(time.Unix(1, 0))
	}
	return c.PacketConn.SetReadDeadline(t)
}

// SetDeadline sets the game's read and write deadlines.
func (c *roomConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.PacketConn.SetWriteDeadline(t)
}

// wake cuts a blocked read short so that it takes a knock. The flag and
// the socket's deadline change together under c.mu, so a read cut short
// always finds the flag when it loops. (Moved apart, a read could time out,
// put the game's deadline back and block again before the flag was set:
// the knock would wait for the next datagram, past its time.)
func (c *roomConn) wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.woken = true
	_ = c.PacketConn.SetReadDeadline(time.Unix(1, 0))
}

// takeWake reports whether a wake-up came since the last read took one,
// and if so puts the game's read deadline back on the socket.
func (c *roomConn) takeWake() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.woken {
		return false
	}
	c.woken = false
	_ = c.PacketConn.SetReadDeadline(c.deadline)
	return true
}

// deadlinePassed reports whether the game's read deadline has passed; if
// not, it puts it back on the socket, which a wake-up moved.
func (c *roomConn) deadlinePassed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		return true
	}
	_ = c.PacketConn.SetReadDeadline(c.deadline)
	return false
}

package instance

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/internal/replyaddr"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// roomConn is the socket a game gets. Before the game sees a datagram it
// answers server-browser requests (connless datagrams, see infoAnswerer)
// and keeps out whoever its door does not admit; every other datagram
// reaches the game unchanged.
//
// On a socket bound to every address, each datagram comes with the room's
// address it was sent to, and what the room sends back leaves from there:
// the door remembers it for each guest, for the game's replies, so that a
// player that asked one of the host's addresses hears from that one.
type roomConn struct {
	net.PacketConn // the socket, as the game may use it
	udp            *net.UDPConn
	info           *infoAnswerer
	door           *door
	// wildcard is set when udp is bound to every address and tells each
	// datagram's destination (replyaddr.Enable).
	wildcard bool
	// reconnected is the game's Reconnecter; nil when it is none.
	reconnected Reconnecter

	mu       sync.Mutex
	deadline time.Time // the game's read deadline
	// woken is set when a knock's sender got a seat: the next read takes
	// the knock first, and a read the wake-up cut short reads on.
	woken bool
}

// newRoomConn makes the game's socket of conn, bound to bind (invalid or
// unspecified: every address), whose connless datagrams info answers and
// whose other senders d lets in.
func newRoomConn(conn *net.UDPConn, bind netip.Addr, info *infoAnswerer, d *door) (*roomConn, error) {
	c := &roomConn{PacketConn: conn, udp: conn, info: info, door: d}
	if !bind.IsValid() || bind.IsUnspecified() {
		// Bound to every address: replies leave from the one asked.
		v6 := conn.LocalAddr().(*net.UDPAddr).IP.To4() == nil
		if err := replyaddr.Enable(conn, v6); err != nil {
			return nil, fmt.Errorf("ask for destination addresses: %w", err)
		}
		c.wildcard = true
	}
	return c, nil
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
		n, addr, local, err := c.read(p)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !c.deadlinePassed() {
				continue // a wake-up, not the game's deadline
			}
			return n, addr, err
		}
		if isConnless(p[:n]) {
			c.info.answer(c, p[:n], addr, local, time.Now())
			continue
		}
		if packet.TypeOf(p[:n]) == ext.Present {
			c.presented(p[:n], addr, local)
			continue
		}
		if u, ok := addr.(*net.UDPAddr); ok && c.door.admit(u.AddrPort(), local, p[:n], time.Now()) {
			return n, addr, nil
		}
	}
}

// controls are buffers for one datagram's control messages.
var controls = sync.Pool{New: func() any { b := make([]byte, replyaddr.Space); return &b }}

// read reads one datagram from the socket: its length, its sender and,
// on a wildcard socket, the room's address it was sent to (invalid
// otherwise, or when the socket did not tell).
func (c *roomConn) read(p []byte) (int, net.Addr, netip.Addr, error) {
	if !c.wildcard {
		n, addr, err := c.PacketConn.ReadFrom(p)
		return n, addr, netip.Addr{}, err
	}
	oob := controls.Get().(*[]byte)
	defer controls.Put(oob)
	n, oobn, _, from, err := c.udp.ReadMsgUDPAddrPort(p, *oob)
	if err != nil {
		return n, nil, netip.Addr{}, err
	}
	_, local := replyaddr.Find((*oob)[:oobn])
	return n, net.UDPAddrFromAddrPort(from), local, nil
}

// WriteTo sends p to addr; on a wildcard socket, from the room's address
// addr last sent to when the door admitted it.
func (c *roomConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	u, ok := addr.(*net.UDPAddr)
	if !c.wildcard || !ok {
		return c.PacketConn.WriteTo(p, addr)
	}
	to := u.AddrPort()
	return c.writeFrom(p, to, c.door.replyFrom(to))
}

// writeFrom sends p to to from the room's address local; an invalid local
// leaves the source to the routes.
func (c *roomConn) writeFrom(p []byte, to netip.AddrPort, local netip.Addr) (int, error) {
	if !local.IsValid() {
		return c.udp.WriteToUDPAddrPort(p, to)
	}
	oob := controls.Get().(*[]byte)
	defer controls.Put(oob)
	n, _, err := c.udp.WriteMsgUDPAddrPort(p, replyaddr.Append((*oob)[:0], local), to)
	return n, err
}

// presented seats the sender of a seat token, who sent it to the room's
// address local, answers EXT_ADMITTED from there and, when the token's
// holder moved, tells the game (on the goroutine that reads, before any
// datagram from the new address reaches it). An EXT_PRESENT the door
// refuses gets nothing.
func (c *roomConn) presented(b []byte, addr net.Addr, local netip.Addr) {
	u, ok := addr.(*net.UDPAddr)
	if !ok {
		return
	}
	a, ok := c.door.present(u.AddrPort(), local, b, time.Now())
	if !ok {
		return
	}
	req, _ := ext.ParseRequest(b) // the door parsed it already
	ack := ext.Message{Header: packet.Header{Framing: req.Framing, Type: ext.Admitted, Seq: req.Seq, Tick: req.Tick}, RoomID: a.room}
	if out, err := ack.Append(nil); err == nil {
		_, _ = c.writeFrom(out, u.AddrPort(), local)
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

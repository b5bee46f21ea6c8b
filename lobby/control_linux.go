package lobby

import (
	"encoding/binary"
	"net"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/replyaddr"
)

// controlSpace is the room a datagram's control messages need: the socket's
// drop counter and, on a wildcard socket, the address it arrived on.
var controlSpace = unix.CmsgSpace(4) + replyaddr.Space

// enableControl asks the kernel to attach to every datagram read from c
// the socket's count of datagrams dropped for want of buffer space
// (SO_RXQ_OVFL), the lobby's sign of a flood, and, when c listens on every
// address, the address the datagram was sent to (IP_PKTINFO or
// IPV6_RECVPKTINFO), which decides what the lobby may offer its sender
// and where its replies leave from.
func enableControl(c *net.UDPConn, wildcard, v6 bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	}); err != nil {
		return err
	}
	if serr != nil || !wildcard {
		return serr
	}
	return replyaddr.Enable(c, v6)
}

// parseControl reads the control messages of one datagram: where it
// arrived (invalid if not attached) and the socket's drop counter (ok
// false if not attached). It allocates nothing.
func parseControl(oob []byte) (at arrival, drops uint32, ok bool) {
	replyaddr.Walk(oob, func(level, typ int32, data []byte) {
		if level == unix.SOL_SOCKET && typ == unix.SO_RXQ_OVFL && len(data) >= 4 {
			drops, ok = binary.NativeEndian.Uint32(data), true
		} else if to, from, found := replyaddr.Read(level, typ, data); found {
			at = arrival{to: to, replyFrom: from}
		}
	})
	return at, drops, ok
}

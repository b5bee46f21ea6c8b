package lobby

import (
	"net"

	"github.com/foyerlobby/foyer/internal/replyaddr"
)

// controlSpace is the room a datagram's control messages need: on a
// wildcard socket, the address it arrived on.
var controlSpace = replyaddr.Space

// enableControl asks the kernel to attach to every datagram read from c,
// when c listens on every address, the address the datagram was sent to
// (IP_PKTINFO or IPV6_RECVPKTINFO), which decides what the lobby may
// offer its sender and where its replies leave from. The socket's drop
// count is not attached (SO_RXQ_OVFL): the kernel would write a control
// message for every datagram, where a read loop asks for the count at
// most once per dropCheck.
func enableControl(c *net.UDPConn, wildcard, v6 bool) error {
	if !wildcard {
		return nil
	}
	return replyaddr.Enable(c, v6)
}

// parseControl reads the control messages of one datagram: where it
// arrived (invalid if not attached). It allocates nothing.
func parseControl(oob []byte) (at arrival) {
	replyaddr.Walk(oob, func(level, typ int32, data []byte) {
		if to, from, found := replyaddr.Read(level, typ, data); found {
			at = arrival{to: to, replyFrom: from}
		}
	})
	return at
}

//go:build !linux

package lobby

import (
	"net"
)

// controlSpace is 0: other systems read one datagram per call through the
// standard library, which attaches no control messages (see stdConn).
const controlSpace = 0

// enableControl does nothing: without destination addresses a wildcard
// socket offers only the host's own rooms.
func enableControl(*net.UDPConn, bool, bool) error { return nil }

func parseControl([]byte) arrival { return arrival{} }

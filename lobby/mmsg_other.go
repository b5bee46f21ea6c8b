//go:build !linux

package lobby

import "net"

// newMmsgIO is the standard library's I/O: batches are Linux's.
func newMmsgIO(c *net.UDPConn, _ []slot, _, _ int) socketIO { return stdIO{c} }

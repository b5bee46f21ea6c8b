//go:build !linux

package lobby

import "net"

// newMmsgIO is the standard library's I/O: batches are Linux's.
func newMmsgIO(c *net.UDPConn, _ []slot, _ int, _ bool) socketIO { return stdIO{c} }

// rawCalls is false: there are no batch calls to make raw.
func (l *Lobby) rawCalls() bool { return false }

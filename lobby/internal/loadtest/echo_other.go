//go:build !linux

package loadtest

import "net"

// EchoBatched is Echo where the lobby does not batch its system calls
// (recvmmsg and sendmmsg are Linux's), as the lobby reads and writes
// there.
func EchoBatched(c *net.UDPConn, size func(req []byte) int) { Echo(c, size) }

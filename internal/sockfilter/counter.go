package sockfilter

import (
	"net"
	"sync"
)

// Counter sums the drops of a set of sockets into 64 bits, across the
// kernel's 32-bit counters wrapping. A socket's drops before its first
// reading (a socket a predecessor passed on) count too.
type Counter struct {
	mu    sync.Mutex
	last  map[*net.UDPConn]uint32
	total uint64
}

// Read adds what each of conns dropped since the last Read and returns
// the total. A socket that is nil or cannot be read (closed) adds
// nothing.
func (c *Counter) Read(conns []*net.UDPConn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = make(map[*net.UDPConn]uint32, len(conns))
	}
	for _, conn := range conns {
		if conn == nil {
			continue
		}
		n, err := Drops(conn)
		if err != nil {
			continue
		}
		c.total += uint64(n - c.last[conn]) // wraps as the kernel's does
		c.last[conn] = n
	}
	return c.total
}

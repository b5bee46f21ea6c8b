package loadtest

import (
	"errors"
	"net"
	"net/netip"

	"github.com/foyerlobby/foyer/internal/mmsg"
)

// echoBatch is how many datagrams EchoBatched takes per system call, as
// the lobby's read loops do.
const echoBatch = 16

// EchoBatched is Echo with the lobby's I/O, its very code (package
// mmsg): it reads a batch of datagrams per system call (recvmmsg) and
// sends their echoes in one (sendmmsg), its calls raw, yielding by the
// lobby's rule (mmsg.Yields, for its one loop). It is the limit of what
// a server reading and writing as the lobby does can do, whatever its
// work per datagram.
func EchoBatched(c *net.UDPConn, size func(req []byte) int) {
	r, err := mmsg.New(c, echoBatch, 1)
	if err != nil {
		Echo(c, size)
		return
	}
	w, _ := mmsg.New(c, echoBatch, 1) // as r, it cannot fail now
	bufs := make([][]byte, echoBatch)
	out := make([]struct {
		p  []byte
		to netip.AddrPort
	}, echoBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 1<<16)
		r.SetBuffer(i, bufs[i], nil)
	}
	for {
		n, err := r.Recv(echoBatch)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		for i := range n {
			k, _, from := r.Received(i)
			out[i].p, out[i].to = pad(bufs[i], k, size), from
		}
		for rest := out[:n]; len(rest) > 0; {
			for i, o := range rest {
				w.SetDatagram(i, o.p, nil, o.to)
			}
			k, err := w.Send(len(rest))
			if err != nil {
				break
			}
			rest = rest[k:]
		}
	}
}

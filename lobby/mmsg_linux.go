package lobby

import (
	"net"

	"github.com/foyerlobby/foyer/internal/mmsg"
)

// mmsgIO is recvmmsg and sendmmsg on a socket (see package mmsg): a
// batch for the slots read into, one for the replies sent.
type mmsgIO struct{ r, w *mmsg.Batch }

func newMmsgIO(c *net.UDPConn, in []slot, out, callers int) socketIO {
	r, err := mmsg.New(c, len(in), callers)
	if err != nil {
		return stdIO{c}
	}
	w, err := mmsg.New(c, out, callers)
	if err != nil {
		return stdIO{c}
	}
	for i := range in {
		r.SetBuffer(i, in[i].buf, in[i].oob)
	}
	return &mmsgIO{r: r, w: w}
}

func (m *mmsgIO) read(in []slot) (int, error) {
	n, err := m.r.Recv(len(in))
	for i := range n {
		in[i].n, in[i].oobn, in[i].from = m.r.Received(i)
	}
	return n, err
}

func (m *mmsgIO) write(out []reply) (int, error) {
	k := min(len(out), m.w.Len())
	for i := range k {
		m.w.SetDatagram(i, out[i].b, out[i].oob, out[i].to)
	}
	return m.w.Send(k)
}

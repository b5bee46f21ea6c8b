package connlimit

import (
	"net"
	"net/http"
	"net/netip"
)

// Gate bounds the connections an HTTP listener serves (see Limiter):
// a connection is busy from its request's headers to its answer, and one
// that waits between requests may be cut for a newcomer. It also refuses,
// unread, request bodies longer than BodyLimit, which a slow client could
// otherwise trickle to hold a place, and with MinReadRate cuts a client
// that reads its answers slower than that (see MinRate).
type Gate struct {
	conns *Limiter
	// MinReadRate, when positive, is the bytes a second every client
	// must read its answers at at least.
	MinReadRate int
	// BodyLimit is the longest request body let through, by its declared
	// length; a longer one, or one of unknown length (chunked), is
	// answered 413 and its connection closed. Zero refuses every body.
	BodyLimit int64
	// Admit, when set, is asked first for every connection: it returns
	// the reason the source is refused, or "" to go on.
	Admit func(ip netip.Addr) string
	// Drop, when set, counts a connection or request refused, by reason:
	// the Admit reason, "source_conn_limit", "network_conn_limit",
	// "conn_limit", "idle_cut" (a waiting connection cut for a newcomer),
	// "busy_cut" (a slow one cut for a newcomer), "slow_reader" (cut for
	// reading slower than MinReadRate) or "request_body".
	Drop func(reason string)
}

// NewGate bounds connections by c.
func NewGate(c Config) *Gate {
	return &Gate{conns: New(c)}
}

// Wrap sets srv's ConnState to g's and wraps its handler in g's bounds on
// bodies, and returns ln wrapped in g's bounds on connections: serve srv
// on that.
func (g *Gate) Wrap(srv *http.Server, ln net.Listener) net.Listener {
	srv.ConnState = g.connState
	srv.Handler = g.bodies(srv.Handler)
	return gatedListener{ln, g}
}

func (g *Gate) drop(reason string) {
	if g.Drop != nil {
		g.Drop(reason)
	}
}

// gatedListener admits connections within the gate's bounds; the others
// are closed at once and counted.
type gatedListener struct {
	net.Listener
	g *Gate
}

// gatedConn is an admitted connection and its place; rate is the
// connection itself when it has a minimum rate.
type gatedConn struct {
	net.Conn
	place *Conn
	rate  *RateConn
}

func (l gatedListener) Accept() (net.Conn, error) {
	g := l.g
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		if g.Admit != nil {
			if why := g.Admit(ip); why != "" {
				g.drop(why)
				c.Close()
				continue
			}
		}
		place, v := g.conns.Admit(c, ip)
		if why := Reason(v); why != "" {
			g.drop(why)
		}
		if !v.Admitted() {
			c.Close()
			continue
		}
		gc := &gatedConn{Conn: c, place: place}
		if g.MinReadRate > 0 {
			gc.rate = MinRate(c, g.MinReadRate)
			gc.Conn = gc.rate
		}
		return gc, nil
	}
}

// connState keeps a connection's place in step with the HTTP server: a
// connection between requests may be cut for a newcomer, one being served
// is not.
func (g *Gate) connState(c net.Conn, state http.ConnState) {
	gc, ok := c.(*gatedConn)
	if !ok {
		return
	}
	switch state {
	case http.StateActive:
		gc.place.Busy()
	case http.StateIdle:
		gc.place.Idle()
	case http.StateClosed, http.StateHijacked:
		if gc.rate != nil && gc.rate.Slow() {
			g.drop("slow_reader")
		}
		gc.place.Release()
	}
}

// refusedBody is the whole answer to a request with a body: the
// connection is closed after it, the body never read.
const refusedBody = "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

// bodies answers a request whose body is longer than BodyLimit with 413
// and closes its connection without reading the body. The server would
// otherwise read up to 256 KiB of it after the answer, at the client's
// pace, holding the connection's place meanwhile.
func (g *Gate) bodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength >= 0 && r.ContentLength <= g.BodyLimit && len(r.TransferEncoding) == 0 {
			h.ServeHTTP(w, r)
			return
		}
		g.drop("request_body")
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Write([]byte(refusedBody))
				c.Close()
				return
			}
		}
		w.Header().Set("Connection", "close")
		http.Error(w, "request bodies are not accepted", http.StatusRequestEntityTooLarge)
	})
}

// Len is how many connections hold a place.
func (g *Gate) Len() int { return g.conns.Len() }

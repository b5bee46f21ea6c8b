package gg2server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/internal/connlimit"
	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// acceptLoop hands p's query connections to their own goroutines, within
// the per-source rate limit and p's connection limits; others are closed
// at once. It ends when the listener is closed. Accept errors (out of file
// descriptors) are waited out with a growing pause rather than spun on.
// A connection accepted has shown that its source receives: the guard
// hears of it.
func (s *Server) acceptLoop(ctx context.Context, p *port) {
	pause := time.Duration(0)
	for {
		c, err := p.tcp.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.drops.Add(p.prefix + "accept_error")
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		ip := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		now := time.Now()
		if !s.allow(ip, now) {
			c.Close()
			continue
		}
		s.guard.Received(ip, now)
		place, v := p.conns.Admit(c, ip)
		if why := connlimit.Reason(v); why != "" {
			s.drops.Add(p.prefix + why)
		}
		if !v.Admitted() {
			c.Close()
			continue
		}
		s.work.Go(func() { s.serveConn(ctx, p, c, place) })
	}
}

// serveConn reads one query within ListTimeout and writes the reply to a
// peer that must read it at MinReadRate; shutdown cuts it short.
func (s *Server) serveConn(ctx context.Context, p *port, c *net.TCPConn, place *connlimit.Conn) {
	defer place.Release()
	defer c.Close()
	rc := connlimit.MinRate(c, s.cfg.MinReadRate)
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.ListTimeout))
	stop := context.AfterFunc(ctx, func() { _ = rc.SetDeadline(time.Now()) })
	defer stop()
	reply, ok := p.query(c, place)
	if !ok {
		return
	}
	if _, err := rc.Write(reply); err != nil {
		if errors.Is(err, connlimit.ErrSlowReader) {
			s.drops.Add(p.prefix + "slow_reader")
			return
		}
		s.drops.Add(p.prefix + "write_error")
	}
}

// readQuery reads len(b) bytes of a query from c; it counts why not.
func (s *Server) readQuery(p *port, c *net.TCPConn, b []byte) bool {
	_, err := io.ReadFull(c, b)
	switch {
	case err == nil:
		return true
	case errors.Is(err, net.ErrClosed): // cut for a newcomer: counted then
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.drops.Add(p.prefix + "timeout")
	default:
		s.drops.Add(p.prefix + "short_query")
	}
	return false
}

// listQuery answers a new-style list query.
func (s *Server) listQuery(c *net.TCPConn, place *connlimit.Conn) ([]byte, bool) {
	p := s.ports[0]
	var q [gg2.ListQueryLen]byte
	if !s.readQuery(p, c, q[:]) {
		return nil, false
	}
	place.Busy()
	query, err := gg2.ParseListQuery(q[:])
	return s.respond(p, err, func() ([]byte, error) { return s.listReply(query.Lobby, s.host(c)) })
}

// respond answers a query read off p, which parsed unless err says not,
// with the reply build makes, and counts it; the failures are counted
// with p's prefix.
func (s *Server) respond(p *port, err error, build func() ([]byte, error)) ([]byte, bool) {
	if err != nil {
		s.drops.Add(p.prefix + "bad_query")
		return nil, false
	}
	s.requests.Add(p.prefix + "list")
	reply, err := build()
	if err != nil {
		s.drops.Add(p.prefix + "encode_error")
		s.log.Error().Err(err).Str("query", p.prefix+"list").Msg("list reply not encoded")
		return nil, false
	}
	return reply, true
}

// host is the address listed for Foyer's own rooms in answer to a query
// on c.
func (s *Server) host(c *net.TCPConn) netip.Addr {
	if s.cfg.PublicAddr.IsValid() {
		return s.cfg.PublicAddr
	}
	return c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
}

// emptyList is the reply to a query for a lobby with no servers.
var emptyList = []byte{0, 0, 0, 0}

// replyKey names one cached reply: a new-style list of a lobby, or a
// legacy list of a protocol id, with own rooms at host.
type replyKey struct {
	legacy bool
	id     gg2.UUID
	host   netip.Addr
}

// replyCache keeps the last encoded replies: browsers ask far more often
// than the table changes. A reply stays valid while the room table's
// version and the front-end table's generation are those it was built
// from. It keeps a few replies, replaced in turn, so that queries for
// several lobbies or versions do not evict each other's reply on every
// query; replies without servers are not kept, so that queries naming
// random ids evict nothing.
type replyCache struct {
	mu      sync.Mutex
	entries [8]cachedReply
	next    int
}

type cachedReply struct {
	key          replyKey
	version, gen uint64
	b            []byte
}

// reply returns the reply for k, built by build (under the table's lock)
// unless the cached one is fresh. The bytes are shared and must not be
// modified.
func (s *Server) reply(k replyKey, build func(snap room.Snapshot, byRoom map[uint32]*entry) ([]byte, int, error)) ([]byte, error) {
	snap := s.rooms.List()
	c := &s.lists
	c.mu.Lock()
	defer c.mu.Unlock()
	var (
		b    []byte
		n    int
		gen  uint64
		hit  = -1
		err  error
		took time.Duration
	)
	s.table.view(func(byRoom map[uint32]*entry, g uint64) {
		gen = g
		for i := range c.entries {
			if e := &c.entries[i]; e.b != nil && e.key == k && e.version == snap.Version && e.gen == g {
				hit = i
				return
			}
		}
		start := time.Now()
		b, n, err = build(snap, byRoom)
		took = time.Since(start)
	})
	if hit >= 0 {
		return c.entries[hit].b, nil
	}
	if err != nil || n == 0 {
		return b, err
	}
	// One line per rebuild, which happens at most once per change of the
	// tables: at debug, the cache's work can be watched.
	s.log.Debug().Bool("legacy", k.legacy).Stringer("id", k.id).Int("servers", n).Int("bytes", len(b)).
		Dur("took", took).Msg("list encoded")
	for i := range c.entries { // a stale reply of the same key goes first
		if c.entries[i].key == k {
			c.next = i
			break
		}
	}
	c.entries[c.next] = cachedReply{key: k, version: snap.Version, gen: gen, b: b}
	c.next = (c.next + 1) % len(c.entries)
	return b, nil
}

// listed is a room a list reply may carry, with its registration when
// this front-end registered it.
type listed struct {
	r room.Room
	e *entry
}

// inTurn orders what a reply carries: Foyer's own rooms first, then the
// registered servers, their networks taking turns (frontend.Interleave),
// so that a reply cut to MaxListBytes carries every network's first
// servers.
func inTurn(own, registered []listed) []listed {
	return append(own, frontend.Interleave(registered, func(l listed) netip.Prefix { return l.e.net })...)
}

// listReply returns the encoded list of lobby's servers, with Foyer's own
// rooms at host when lobby is Config.Lobby, at most MaxListBytes of it.
func (s *Server) listReply(lobby gg2.UUID, host netip.Addr) ([]byte, error) {
	return s.reply(replyKey{id: lobby, host: host}, func(snap room.Snapshot, byRoom map[uint32]*entry) ([]byte, int, error) {
		var own, registered []listed
		ownLobby := lobby == s.cfg.Lobby
		for _, r := range snap.Rooms {
			switch e := byRoom[r.ID]; {
			case e != nil && e.lobby == lobby:
				registered = append(registered, listed{r, e})
			case e == nil && ownLobby && r.Source.Own() && r.Public():
				own = append(own, listed{r, nil})
			}
		}
		var reply gg2.ListReply
		budget, cut := s.cfg.MaxListBytes-4, 0
		for _, l := range inTurn(own, registered) {
			ls := s.listServer(l.r, l.e, host)
			if n := ls.WireLen(); n <= budget {
				budget -= n
				reply.Servers = append(reply.Servers, ls)
			} else {
				cut++
			}
		}
		if cut > 0 {
			s.drops.Counter("list_cut").Add(uint64(cut))
		}
		if len(reply.Servers) == 0 {
			return emptyList, 0, nil
		}
		b, err := reply.Append(nil)
		return b, len(reply.Servers), err
	})
}

// listServer describes room r: e is its registration when this front-end
// registered it (its own table, transport and bots are listed as sent);
// rooms on the lobby's own host are listed at host.
func (s *Server) listServer(r room.Room, e *entry, host netip.Addr) gg2.ListServer {
	ls := gg2.ListServer{
		Transport: gg2.UDP,
		Slots:     frontend.Clamp16(r.MaxPlayers),
		Players:   frontend.Clamp16(r.Occupied()),
	}
	if r.Password {
		ls.Flags = gg2.FlagPassword
	}
	if r.Host.IsValid() {
		host = r.Host.Unmap()
	}
	if ap := netip.AddrPortFrom(host, r.Port); host.Is4() {
		ls.V4 = ap
	} else {
		ls.V6 = ap
	}
	if e != nil {
		ls.Transport, ls.Bots, ls.Flags, ls.KeyValues = e.transport, e.bots, e.flags, e.kv
		return ls
	}
	ls.KeyValues = frontend.RoomKeys(r, s.cfg.Game)
	if s.cfg.ProtocolID != (gg2.UUID{}) {
		ls.KeyValues = append(ls.KeyValues, gg2.KeyValue{Key: "protocol_id", Value: s.cfg.ProtocolID[:]})
	}
	return ls
}

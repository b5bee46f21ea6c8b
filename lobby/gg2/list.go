package gg2

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// acceptLoop hands list connections to their own goroutines, within the
// per-source limit and MaxListConns; others are closed at once. It ends
// when the listener is closed. Accept errors (out of file descriptors)
// are waited out with a growing pause rather than spun on.
func (s *Server) acceptLoop(ctx context.Context) {
	pause := time.Duration(0)
	for {
		c, err := s.tcp.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.drops.Add("accept_error")
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
		if !s.allow(ip, time.Now()) {
			c.Close()
			continue
		}
		if s.listConns.Add(1) > int64(s.cfg.MaxListConns) {
			s.listConns.Add(-1)
			s.drops.Add("conn_limit")
			c.Close()
			continue
		}
		s.work.Go(func() {
			defer s.listConns.Add(-1)
			s.serveList(ctx, c)
		})
	}
}

// serveList reads one query and writes the reply, all within ListTimeout;
// shutdown cuts it short.
func (s *Server) serveList(ctx context.Context, c *net.TCPConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(s.cfg.ListTimeout))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	var q [gg2wire.ListQueryLen]byte
	if _, err := io.ReadFull(c, q[:]); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.drops.Add("timeout")
		} else {
			s.drops.Add("short_query")
		}
		return
	}
	query, err := gg2wire.ParseListQuery(q[:])
	if err != nil {
		s.drops.Add("bad_query")
		return
	}
	s.requests.Add("list")
	reply := emptyList
	if query.Lobby == s.cfg.Lobby {
		host := s.cfg.PublicAddr
		if !host.IsValid() {
			host = c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		}
		if reply, err = s.listReply(host); err != nil {
			s.drops.Add("encode_error")
			s.log.Error().Err(err).Msg("list reply not encoded")
			return
		}
	}
	if _, err := c.Write(reply); err != nil {
		s.drops.Add("write_error")
	}
}

// emptyList is the reply to a query for another lobby: zero servers.
var emptyList = []byte{0, 0, 0, 0}

// listCache keeps the last encoded reply: browsers ask far more often than
// the table changes.
type listCache struct {
	mu      sync.Mutex
	version uint64
	gen     uint64
	host    netip.Addr
	b       []byte
}

// fresh reports whether the cached reply lists this table for host;
// lc.mu is held.
func (lc *listCache) fresh(version, gen uint64, host netip.Addr) bool {
	return lc.b != nil && lc.version == version && lc.gen == gen && lc.host == host
}

// listReply returns the encoded list of every room, Foyer's own at host.
// The bytes are shared and must not be modified.
func (s *Server) listReply(host netip.Addr) ([]byte, error) {
	snap := s.rooms.List()
	lc := &s.lists
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var (
		reply gg2wire.ListReply
		gen   uint64
	)
	s.table.view(func(byRoom map[uint32]*entry, g uint64) {
		gen = g
		if lc.fresh(snap.Version, g, host) {
			return
		}
		reply.Servers = make([]gg2wire.ListServer, 0, len(snap.Rooms))
		for _, r := range snap.Rooms {
			reply.Servers = append(reply.Servers, s.listServer(r, byRoom[r.ID], host))
		}
	})
	if lc.fresh(snap.Version, gen, host) {
		return lc.b, nil
	}
	b, err := reply.Append(nil)
	if err != nil {
		return nil, err
	}
	lc.version, lc.gen, lc.host, lc.b = snap.Version, gen, host, b
	return b, nil
}

// listServer describes room r: e is its registration when this front-end
// registered it (its own table, transport and bots are listed as sent);
// rooms on the lobby's own host are listed at host.
func (s *Server) listServer(r room.Room, e *entry, host netip.Addr) gg2wire.ListServer {
	ls := gg2wire.ListServer{
		Transport: gg2wire.UDP,
		Slots:     frontend.Clamp16(r.MaxPlayers),
		Players:   frontend.Clamp16(r.Occupied()),
	}
	if r.Password {
		ls.Flags = gg2wire.FlagPassword
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
	return ls
}

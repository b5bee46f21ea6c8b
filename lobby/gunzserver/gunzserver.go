// Package gunzserver is Foyer's GunZ locator front-end: a GunZ client's locator
// request (command 40001) is answered with a response (40002) listing the
// room table, so Foyer's rooms show in its server list.
//
// A datagram goes through, in order:
//
//	gunz.ParseRequest   anything else, or a bad checksum: dropped, counted
//	limit.Sources           per source IP, shared with the other edges
//	limit.Budget            reply bytes per /24 per second, shared too
//
// The byte budget matters because an 11-byte request can draw a reply of
// up to 64 KiB and UDP source addresses can be forged: without it the
// locator would amplify floods aimed at a victim's network.
//
// The reply goes to the request's source address, which a datagram may
// forge: so what others registered never grows a reply to a source that
// has not shown it receives (limit.Guard.Receives: a TCP handshake with
// one of Foyer's listeners, a JOIN with a masked room id). Such a source
// is told of Foyer's own rooms only, what the host itself runs; a source
// that has shown it receives gets every room, registered ones included,
// but none that is Unchecked (nothing proved its address).
//
// Each room becomes one entry: the room's address (PublicAddr, or the local
// address the request arrived on, for Foyer's own rooms; a registered
// room's own host when it is IPv4, rooms on IPv6 hosts are left out), its
// port, max and current players, type 2 (match) and status 1 (online) when
// it is joinable: Waiting or Countdown with a seat free. The u8 server ID
// is the entry's position in the response, from 1, wrapping after 255: it
// tells entries of one response apart, which is all a client uses it for,
// and the u32 room ids do not fit. A response carries at most
// gunz.MaxServers rooms; when the table holds more, joinable rooms go
// first.
package gunzserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/replyaddr"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	"github.com/foyerlobby/foyer/lobby/internal/tally"
	"github.com/foyerlobby/foyer/packet/gunz"
	"github.com/foyerlobby/foyer/room"
)

// Config is the [gunz] section of config.toml.
type Config struct {
	// Listen is the UDP address served. It must be IPv4: the protocol
	// carries IPv4 addresses only. Port 0 picks a free port (see Addrs).
	Listen netip.AddrPort
	// PublicAddr is the IPv4 address listed for Foyer's own rooms; when
	// invalid, the local address each request arrived on.
	PublicAddr netip.Addr
	// ReportInterval is how often non-zero drop counts are logged.
	ReportInterval time.Duration
	// Filter sets a kernel socket filter that drops a datagram that
	// cannot be a locator request before it is read.
	Filter bool
}

// DefaultConfig returns the defaults documented in config.toml.
func DefaultConfig() Config {
	return Config{
		Listen:         netip.MustParseAddrPort("0.0.0.0:8900"),
		ReportInterval: 10 * time.Second,
		Filter:         sockfilter.Supported,
	}
}

func (c Config) check() error {
	switch {
	case !c.Listen.Addr().Is4():
		return errors.New("gunz: listen address must be IPv4")
	case c.PublicAddr.IsValid() && !c.PublicAddr.Is4():
		return errors.New("gunz: public address must be IPv4")
	case c.ReportInterval <= 0:
		return errors.New("gunz: report interval must be positive")
	case c.Filter && !sockfilter.Supported:
		return errors.New("gunz: socket filters need Linux")
	}
	return nil
}

// Stats is a snapshot of the locator's counters.
type Stats struct {
	// Requests counts well-formed locator requests ("locator");
	// Replies the responses sent ("locator").
	Requests, Replies map[string]uint64
	// Drops counts datagrams dropped unanswered, by reason: the codec's
	// ("truncated", "msg_id", "size", "checksum", "command"),
	// "rate_limited", "reflection", "no_address", "encode_error",
	// "send_error", "read_error".
	Drops map[string]uint64
	// KernelDrops counts the datagrams the kernel dropped at the socket
	// before any read: refused by the socket filter (Config.Filter), or
	// with no room left in its receive buffer.
	KernelDrops uint64
}

// Locator is the GunZ locator front-end.
type Locator struct {
	cfg   Config
	rooms room.Table
	log   zerolog.Logger
	conn  *net.UDPConn
	guard *limit.Guard
	// wantDst: the socket is bound to 0.0.0.0, so the address a request
	// arrived on comes from its control message (replyaddr), and the
	// reply is sent from it (a client on a host with several addresses
	// expects the answer from the address it asked).
	wantDst bool

	requests, replies, drops tally.Set
	kernelDrops              sockfilter.Counter
}

// New binds cfg.Listen; Serve answers on it. Requests draw from guard's
// per-source buckets and responses from its per-network byte budget, both
// shared with the other edges; a nil guard is one of the locator's own
// with limit.DefaultConfig.
func New(cfg Config, rooms room.Table, guard *limit.Guard, log zerolog.Logger) (*Locator, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if guard == nil {
		guard = limit.NewGuard(limit.DefaultConfig())
	}
	l := &Locator{cfg: cfg, rooms: rooms, log: log.With().Str("component", "gunz").Logger(),
		guard: guard}
	c, err := sockets.ListenUDP("udp4", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("gunz: listen %v: %w", cfg.Listen, err)
	}
	l.conn = c
	var shapes []sockfilter.Shape
	if cfg.Filter {
		shapes = []sockfilter.Shape{gunz.RequestShape()}
	}
	if err := sockfilter.Set(c, shapes); err != nil {
		c.Close()
		return nil, fmt.Errorf("gunz: socket filter: %w", err)
	}
	if cfg.Listen.Addr().IsUnspecified() {
		if err := replyaddr.Enable(c, false); err != nil {
			c.Close()
			return nil, fmt.Errorf("gunz: ask for destination addresses: %w", err)
		}
		l.wantDst = true
	}
	// Logged once bound, so that every listener's line precedes the
	// server's "ready".
	l.log.Info().Stringer("listen", l.Addrs()[0]).Msg("gunz locator serving")
	return l, nil
}

// Addrs returns the bound address.
func (l *Locator) Addrs() []netip.AddrPort {
	return []netip.AddrPort{l.conn.LocalAddr().(*net.UDPAddr).AddrPort()}
}

// Close releases the socket of a Locator that will not Serve (Serve
// closes it itself when it ends).
func (l *Locator) Close() error { return l.conn.Close() }

// Stats returns the locator's counters.
func (l *Locator) Stats() Stats {
	return Stats{Requests: l.requests.Snapshot(), Replies: l.replies.Snapshot(), Drops: l.drops.Snapshot(),
		KernelDrops: l.kernelDrops.Read([]*net.UDPConn{l.conn})}
}

// Serve answers until ctx is done or the socket keeps failing, then closes
// it and returns the socket's error, if any. Serve runs once per Locator.
func (l *Locator) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.conn.Close() })
	defer stop()
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		tally.Report(ctx, l.log, l.cfg.ReportInterval, "drops", tally.Names("dropped", &l.drops))
	}()
	err := l.readLoop()
	cancel()
	l.conn.Close()
	<-reported
	l.log.Info().Msg("gunz locator stopped")
	return err
}

func (l *Locator) readLoop() error {
	buf := make([]byte, 1<<16)
	oob := make([]byte, replyaddr.Space)
	r := responder{l: l, control: make([]byte, 0, replyaddr.Space)}
	return tally.ReadLoop(l.drops.Counter("read_error"), func() error {
		n, oobn, _, from, err := l.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			return err
		}
		at := l.cfg.Listen.Addr()
		if l.wantDst {
			// The address a reply leaves from: the one asked, or for a
			// broadcast the interface's own, which is also the address
			// a client there reaches Foyer's rooms at.
			_, at = replyaddr.Find(oob[:oobn])
		}
		r.handle(buf[:n], from, at)
		return nil
	})
}

// responder answers requests; it owns the buffers one loop reuses.
type responder struct {
	l       *Locator
	servers []gunz.Server
	rooms   []room.Room
	out     []byte
	control []byte // a reply's control message: the address it leaves from
}

var reasons = []struct {
	err  error
	name string
}{
	{gunz.ErrTruncated, "truncated"}, {gunz.ErrMsgID, "msg_id"}, {gunz.ErrSize, "size"},
	{gunz.ErrChecksum, "checksum"}, {gunz.ErrCommand, "command"},
}

func reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "malformed"
}

// handle answers one datagram that came from from to the local address
// arrived (invalid when a wildcard socket could not tell), which is where
// the reply leaves from.
func (r *responder) handle(b []byte, from netip.AddrPort, arrived netip.Addr) {
	l := r.l
	if l.guard.Denied(from.Addr()) {
		l.drops.Add("denied")
		return
	}
	req, err := gunz.ParseRequest(b)
	if err != nil {
		l.drops.Add(reason(err))
		return
	}
	now := time.Now()
	v := l.guard.Admit(from.Addr(), now)
	if !v.OK() {
		l.drops.Add(v.Reason())
		return
	}
	l.requests.Add("locator")
	host := l.cfg.PublicAddr
	if !host.IsValid() {
		host = arrived
	}
	if !host.Is4() {
		l.drops.Add("no_address")
		return
	}
	resp := gunz.Response{Serial: req.Serial, Servers: r.list(host, l.guard.Receives(from.Addr(), now))}
	if r.out, err = resp.Append(r.out[:0]); err != nil {
		l.drops.Add("encode_error")
		l.log.Error().Err(err).Msg("locator response not encoded")
		return
	}
	if !l.guard.AllowReply(from.Addr(), len(r.out), v, now) {
		l.drops.Add("reflection")
		return
	}
	r.control = r.control[:0]
	if l.wantDst {
		r.control = replyaddr.Append(r.control, arrived)
	}
	if _, _, err := l.conn.WriteMsgUDPAddrPort(r.out, r.control, from); err != nil {
		l.drops.Add("send_error")
		return
	}
	l.replies.Add("locator")
}

// list turns the room table into response entries, Foyer's own rooms at
// host: only those unless all, and never an Unchecked room nor a private
// one.
func (r *responder) list(host netip.Addr, all bool) []gunz.Server {
	rooms := r.l.rooms.List().Rooms
	if !all || slices.ContainsFunc(rooms, func(rm room.Room) bool { return rm.Unchecked || rm.Private }) {
		r.rooms = r.rooms[:0]
		for _, rm := range rooms {
			if (all || rm.Source.Own()) && !rm.Unchecked && rm.Public() {
				r.rooms = append(r.rooms, rm)
			}
		}
		rooms = r.rooms
	}
	if len(rooms) > gunz.MaxServers {
		// Joinable first; the snapshot is shared, so sort a copy.
		if len(r.rooms) == 0 || &rooms[0] != &r.rooms[0] {
			r.rooms = append(r.rooms[:0], rooms...)
		}
		slices.SortStableFunc(r.rooms, func(a, b room.Room) int {
			switch ja, jb := a.Joinable(), b.Joinable(); {
			case ja == jb:
				return 0
			case ja:
				return -1
			}
			return 1
		})
		rooms = r.rooms
	}
	r.servers = r.servers[:0]
	for _, room := range rooms {
		if len(r.servers) == gunz.MaxServers {
			break
		}
		addr := host
		if room.Host.IsValid() {
			if addr = room.Host.Unmap(); !addr.Is4() {
				continue
			}
		}
		s := gunz.Server{
			Addr:       addr,
			Port:       uint32(room.Port),
			ID:         uint8(len(r.servers)%255 + 1),
			MaxPlayers: frontend.Clamp16(room.MaxPlayers),
			Players:    frontend.Clamp16(room.Occupied()),
			Type:       gunz.Match,
			Status:     gunz.Offline,
		}
		if room.Joinable() {
			s.Status = gunz.Online
		}
		r.servers = append(r.servers, s)
	}
	return r.servers
}

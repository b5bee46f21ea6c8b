// Package lobby is Foyer's native UDP edge: it answers LIST_ROOMS,
// CREATE_ROOM and JOIN_ROOM (messages 0x40-0x46, see package packet) in
// front of a room.Table.
//
// Each listen address has Readers sockets sharing its port
// (SO_REUSEPORT, see sockets.ListenUDPGroup), each read by a goroutine of
// its own, a batch of datagrams per system call into reused buffers (see
// batch); the replies a loop makes to a batch leave together. The kernel
// sends each sender's datagrams to one socket of the group, so the loops
// share the work without sharing a receive queue; everything a request
// draws on (the guard's budgets, the retry cache, the room table) is one
// for all of them. A datagram goes through, in order:
//
//	packet.Parse        malformed: dropped, counted by packet.Reason
//	request type?       replies and unknown types: dropped
//	per-IP buckets      general rate/burst, CREATE create_rate/create_burst
//	retry cache         (CREATE, JOIN) a repeat gets the first reply again;
//	                    LIST changes nothing, so a repeat gets the table now
//	the request         LIST inline from a cached encoding; JOIN inline
//	                    when the Rooms never waits (room.JoinNeverWaiter), else
//	                    on a small worker pool; CREATE on its own
//	                    goroutine (bounded)
//	reflection guard    bytes per /24 or /56 per second, before every send
//
// The per-IP buckets and the reflection guard are a limit.Guard shared
// with the neighbour-protocol front-ends, so that a source's allowance and
// a network's reply budget span every edge of one Foyer.
//
// Nothing on that path waits for the supervisor: when the JOIN queue or
// the CREATE slots are full, the request is dropped and counted, and the
// client retries. Nothing is logged per datagram at info level; drops are
// summed into one line per report interval.
//
// A ROOM_LIST entry's player count is the room's connected players plus
// the seats held for players still connecting, so a client sees a room as
// full as soon as JOIN would refuse it.
package lobby

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/replyaddr"
	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/lobby/internal/tally"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// Config is the native edge's part of the [lobby] section of config.toml;
// the rate limits of that section are the Guard's, shared by every edge.
type Config struct {
	// Listen are the UDP addresses to serve; port 0 picks a free port
	// (see Lobby.Addrs).
	Listen []netip.AddrPort
	// Readers is how many sockets, each with a goroutine reading it,
	// serve each listen address.
	Readers int
	// RetryWindow is how long a CREATE or JOIN reply is replayed to a
	// retry; RetryCache bounds how many are kept.
	RetryWindow time.Duration
	RetryCache  int
	// MaxCreates bounds the CREATEs running at once; more are dropped.
	MaxCreates int
	// Filter sets a kernel socket filter on every socket that drops a
	// datagram that cannot be a request the lobby serves (see filter.go)
	// before it reaches a read loop.
	Filter bool
	// ReportInterval is how often non-zero drop and failure counts are
	// logged.
	ReportInterval time.Duration
}

// DefaultConfig returns the defaults documented in config.toml.
func DefaultConfig() Config {
	return Config{
		Listen:         []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:7777")},
		Readers:        runtime.GOMAXPROCS(0),
		RetryWindow:    10 * time.Second,
		RetryCache:     65536,
		MaxCreates:     64,
		Filter:         sockfilter.Supported,
		ReportInterval: 10 * time.Second,
	}
}

// JOIN runs off the read loop, unless the Rooms never waits, so that a
// supervisor slow to answer cannot stall LIST. The queue absorbs bursts;
// beyond it JOINs are dropped.
const (
	joinWorkers = 4
	joinQueue   = 1024
	readBuffer  = 4 << 20 // socket receive buffer asked for, per socket
	maxReaders  = 1024
)

// Lobby serves the native protocol on its sockets.
type Lobby struct {
	cfg     Config
	rooms   room.Table
	log     zerolog.Logger
	conns   []*net.UDPConn   // Readers per listen address
	addrs   []netip.AddrPort // one per listen address
	guard   *limit.Guard
	cookies *cookies
	retries *retries
	lists   lists
	stats   counters
	// kernelDrops sums what the kernel dropped at conns.
	kernelDrops sockfilter.Counter
	// ext serves the protocol's extension; nil for a table that does
	// not (its requests are dropped). extRetries are its answers kept
	// for retries, which are longer than the seed's.
	ext        *extension
	extRetries *retries

	jobs       chan request // nil when JOIN runs on the read loop
	inlineJoin bool
	joinAt     room.JoinerAt // rooms, if it takes the time a JOIN was read
	creating   atomic.Int64
	draining   atomic.Bool
	frozen     atomic.Bool    // handing over: LIST only
	ending     atomic.Bool    // Serve is ending: the read loops stop at their deadline
	work       sync.WaitGroup // join workers and CREATEs
	ctx        context.Context
	stop       context.CancelFunc
}

// sender is where replies go out: a socket (direct), or a read loop's
// batch, which queues them until the loop has answered the whole batch.
// src is the address a reply leaves from: invalid for the socket's own.
type sender interface {
	WriteFrom(b []byte, to netip.AddrPort, src netip.Addr) (int, error)
}

// direct sends straight to its socket.
type direct struct{ c *net.UDPConn }

func (d direct) WriteFrom(b []byte, to netip.AddrPort, src netip.Addr) (int, error) {
	if !src.IsValid() {
		return d.c.WriteToUDPAddrPort(b, to)
	}
	var space [64]byte
	n, _, err := d.c.WriteMsgUDPAddrPort(b, replyaddr.Append(space[:0], src), to)
	return n, err
}

// arrival is where a datagram arrived: the address it was sent to, which
// decides what a client there is offered, and the address its replies
// leave from, the same but for a broadcast (see replyaddr.Read). Both are
// invalid when a wildcard socket could not tell; replyFrom is invalid on
// a socket bound to one address, whose replies leave from it anyway.
type arrival struct{ to, replyFrom netip.Addr }

// request is one well-formed CREATE or JOIN on its way through the lobby.
type request struct {
	h       packet.Header
	from    netip.AddrPort
	src     netip.Addr    // where the answer leaves from (arrival.replyFrom)
	verdict limit.Verdict // the guard's, which the reply is charged by
	key     retryKey
	// JOIN only: the room id as sent (echoed in the answer), the room it
	// names and what the JOIN proved.
	asked uint32
	room  *room.Room // the lobby's list's own: never changed
	proof room.Proof
	conn  sender // where the answer goes
}

// New binds the listen addresses; Serve answers on them. Requests draw
// from guard's per-source buckets and replies from its per-network budget,
// which the other edges of the same Foyer share; a nil guard is one of the
// lobby's own with limit.DefaultConfig.
func New(cfg Config, rooms room.Table, guard *limit.Guard, log zerolog.Logger) (*Lobby, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := newLobby(cfg, rooms, guard, log)
	filter := l.filter()
	for _, ap := range cfg.Listen {
		// udp4 or udp6 as the address says: Go would make "0.0.0.0" a
		// dual-stack socket, answering IPv6 the operator did not ask for.
		network := "udp4"
		if ap.Addr().Is6() && !ap.Addr().Is4In6() {
			network = "udp6"
		}
		// Through sockets, so that an upgrade hands the very sockets on.
		group, err := sockets.ListenUDPGroup(network, net.UDPAddrFromAddrPort(ap), cfg.Readers)
		if err != nil {
			l.closeConns()
			l.stop()
			return nil, fmt.Errorf("lobby: listen %v: %w", ap, err)
		}
		l.conns = append(l.conns, group...)
		for _, c := range group {
			_ = c.SetReadBuffer(readBuffer) // best effort; the OS may cap it
			if err := sockfilter.Set(c, filter); err != nil {
				l.closeConns()
				l.stop()
				return nil, fmt.Errorf("lobby: socket filter on %v: %w", ap, err)
			}
			if err := enableControl(c, ap.Addr().IsUnspecified(), network == "udp6"); err != nil {
				// Without it the lobby sees no flood, and a wildcard
				// socket offers only the host's own rooms: degraded,
				// not broken.
				l.log.Warn().Err(err).Stringer("listen", ap).Msg("socket control messages unavailable")
			}
		}
		l.addrs = append(l.addrs, group[0].LocalAddr().(*net.UDPAddr).AddrPort())
	}
	return l, nil
}

// newLobby builds a lobby without sockets.
func newLobby(cfg Config, rooms room.Table, guard *limit.Guard, log zerolog.Logger) *Lobby {
	if guard == nil {
		guard = limit.NewGuard(limit.DefaultConfig())
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &Lobby{
		cfg:        cfg,
		rooms:      rooms,
		log:        log.With().Str("component", "lobby").Logger(),
		guard:      guard,
		cookies:    newCookies(),
		retries:    newRetries(cfg.RetryCache, maxAnswer, cfg.RetryWindow),
		extRetries: newRetries(max(cfg.RetryCache/8, 1), extAnswer, cfg.RetryWindow),
		lists:      lists{rooms: rooms},
		ext:        newExtension(rooms),
		ctx:        ctx,
		stop:       stop,
	}
	l.joinAt, _ = rooms.(room.JoinerAt)
	if w, ok := rooms.(room.JoinNeverWaiter); ok && w.JoinNeverWaits() {
		l.inlineJoin = true
	} else {
		l.jobs = make(chan request, joinQueue)
	}
	l.stats.init()
	return l
}

func (c Config) check() error {
	switch {
	case len(c.Listen) == 0:
		return errors.New("lobby: no listen address")
	case c.Readers < 1 || c.Readers > maxReaders:
		return fmt.Errorf("lobby: readers must be 1-%d", maxReaders)
	case c.RetryCache < 1 || c.MaxCreates < 1 || c.RetryWindow <= 0 || c.ReportInterval <= 0:
		return errors.New("lobby: retry cache, max creates, retry window and report interval must be positive")
	case c.Filter && !sockfilter.Supported:
		return errors.New("lobby: socket filters need Linux")
	}
	return nil
}

// Addrs returns the bound addresses, in the order of Config.Listen.
func (l *Lobby) Addrs() []netip.AddrPort { return slices.Clone(l.addrs) }

// readLoops is how many read loops Serve runs: one per socket, over every
// listen address.
func (l *Lobby) readLoops() int { return len(l.conns) }

// Drain stops answering CREATE (they are dropped and counted), ahead of a
// shutdown; LIST and JOIN are still answered.
func (l *Lobby) Drain() { l.draining.Store(true) }

// Freeze answers LIST only, from now on: CREATE and JOIN are dropped and
// counted ("handover"), for the client to retry. It is for the moment a
// lobby hands its sockets and rooms to the process that replaces it: the
// table no longer changes here, and every request that would change it is
// answered by the new process.
func (l *Lobby) Freeze() { l.frozen.Store(true) }

// Thaw undoes Freeze: the handover failed, and this lobby serves on.
func (l *Lobby) Thaw() { l.frozen.Store(false) }

// Stats returns the lobby's counters.
func (l *Lobby) Stats() Stats {
	s := l.stats.snapshot()
	s.Sources = l.guard.Sources.Len()
	s.Prefixes = l.guard.Replies.Len()
	s.CreatesInFlight = int(l.creating.Load())
	s.KernelDrops = l.kernelDrops.Read(l.conns)
	return s
}

// Serve answers requests until ctx is done or a socket fails, then
// closes the sockets and returns once every running JOIN and CREATE has
// finished (CREATEs see a cancelled context). It returns the socket's
// error, if one failed. Serve runs once per Lobby.
func (l *Lobby) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go l.lists.watch(l.rooms.Watch(ctx))
	if l.jobs != nil {
		for range joinWorkers {
			l.work.Go(l.joinWorker)
		}
	}
	if l.ext != nil {
		l.work.Go(l.passwordWorker)
	}
	var loops sync.WaitGroup
	failed := make(chan error, len(l.conns))
	for _, c := range l.conns {
		loops.Go(func() {
			if err := l.readLoop(c); err != nil {
				failed <- err
			}
		})
	}
	reportDone := make(chan struct{})
	go l.report(ctx, reportDone)
	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
		cancel()
	}
	// The loops stop at a read deadline, not by a close, so that every
	// datagram a loop has read is answered: after an upgrade the socket
	// lives on in the new process, and what this one has not read is the
	// new one's to answer.
	l.ending.Store(true)
	for _, c := range l.conns {
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
	loops.Wait()
	l.closeConns()
	if l.jobs != nil {
		close(l.jobs) // no loop sends any more
	}
	if l.ext != nil {
		close(l.ext.pw)
	}
	l.stop()
	l.work.Wait()
	<-reportDone
	return err
}

// Close releases the sockets of a lobby that will not be served, e.g.
// because something started next to it failed.
func (l *Lobby) Close() error {
	l.closeConns()
	return nil
}

func (l *Lobby) closeConns() {
	for _, c := range l.conns {
		c.Close()
	}
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readLoop reads c until it is closed (nil) or keeps failing (the error,
// see tally.ReadLoop), a batch of datagrams at a time; the replies to a
// batch leave together. A loop told to end stops at its read deadline,
// once every datagram it read is answered.
// A socket whose kernel dropped datagrams since its loop last looked
// (see batch.dropped), while the loop fell behind, is flooded: the guard
// hears of it (see flooded). The loop looks after any read, full or not,
// so that a full read is charged only with the drops since the look
// before, at most a dropCheck earlier, not with a filter's from long ago.
func (l *Lobby) readLoop(c *net.UDPConn) error {
	q := newBatch(c, batchIO, l.readLoops())
	var os offers
	var now time.Time // when the batch was read: one clock read for all
	handle := func(b []byte, from netip.AddrPort, at arrival, out []byte) []byte {
		return l.handle(q, direct{c}, &os, b, from, at, now, out)
	}
	err := tally.ReadLoop(l.stats.readErrors, func() error {
		n, err := q.read()
		if err != nil {
			if l.ending.Load() && isTimeout(err) {
				return net.ErrClosed // ends the loop cleanly
			}
			return err
		}
		now = time.Now()
		if q.dropped(now) && l.flooded(n) {
			l.guard.Pressure(now)
		}
		q.answer(n, handle)
		l.settle(q, now)
		l.flush(q)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lobby: reading %v: %w", c.LocalAddr(), err)
	}
	return nil
}

// handle answers one datagram that came from from and arrived at at,
// read at now: what it answers at once goes to c, what it answers later
// (CREATE, JOIN on a worker) to later, each from the address the datagram
// was sent to. os are the loop's lists. out is scratch space it returns
// for reuse.
func (l *Lobby) handle(c, later sender, os *offers, b []byte, from netip.AddrPort, at arrival, now time.Time, out []byte) []byte {
	if l.guard.Denied(from.Addr()) {
		l.stats.drop("denied")
		return out
	}
	if ext.Is(packet.TypeOf(b)) {
		return l.handleExt(c, later, os, b, from, at, now, out)
	}
	var m packet.Message
	if err := m.UnmarshalRequest(b); err != nil {
		l.stats.drop(packet.Reason(err))
		return out
	}
	if q, ok := c.(*batch); ok { // UnmarshalRequest decodes requests only
		q.counts.requests[requestIndex(m.Type)]++
	} else {
		l.stats.requests[requestIndex(m.Type)].Add(1)
	}
	if reason := l.turnedAway(m.Type); reason != "" {
		l.stats.drop(reason)
		return out
	}
	create := m.Type == packet.CreateRoom
	// Retries do not draw from the CREATE bucket (they run nothing), so
	// the general bucket is taken first and the CREATE one only for a
	// request that will run.
	v := l.admit(c, from.Addr(), create, now)
	if !v.OK() {
		l.refused(v)
		return out
	}
	rl := l.lists.get(now)
	if l.guard.UnderPressure(now) {
		l.cookies.trigger(now)
	}
	if m.Type == packet.ListRooms {
		var mask uint32
		if l.cookies.on(now) {
			mask = l.cookies.mask(from.Addr())
		}
		out = os.appendReply(out, os.get(rl, at.to), m.Header, mask)
		l.send(c, out, from, at.replyFrom, v, now)
		return out
	}
	req := request{h: m.Header, from: from, src: at.replyFrom, verdict: v, asked: m.RoomID, conn: later,
		key: newRetryKey(from, m.Header, m.RoomID)}
	if !create {
		r, proof, ok := l.cookies.resolve(rl, m.RoomID, from.Addr(), at.to)
		if !ok { // no such room, or not one this client can reach
			err := errNoRoomZero
			if m.RoomID != 0 {
				err = room.ErrNoRoom
			}
			l.failed("join", from, m.RoomID, err)
			out = l.appendAnswer(out, &req, 0, 0, err)
			l.send(c, out, from, at.replyFrom, v, now)
			return out
		}
		req.room, req.proof = r, proof
		if proof == room.SawListing {
			// Only a receiver of a list sent to its address knows the id
			// it named: the other edges may send it more.
			l.guard.Received(from.Addr(), now)
		}
	}
	if !create && l.inlineJoin {
		req.conn = c
		return l.joinInline(&req, now, out)
	}
	if out, found := l.retries.begin(req.key, now, out); found {
		return l.replay(c, out, from, at.replyFrom, v, now)
	}
	if create {
		l.startCreate(req, now)
		return out
	}
	select {
	case l.jobs <- req:
	default:
		l.retries.abandon(req.key)
		l.stats.drop("join_busy")
	}
	return out
}

var errNoRoomZero = errors.New("room 0 is never a room")

// turnedAway is why a request of type t is dropped before the guard is
// asked, or "": a CREATE while the lobby drains, and all but a LIST while
// it is frozen for a handover.
func (l *Lobby) turnedAway(t packet.Type) string {
	switch {
	case t == packet.CreateRoom && l.draining.Load():
		return "draining"
	case t != packet.ListRooms && l.frozen.Load():
		return "handover"
	}
	return ""
}

// admit is the guard's verdict on a request from ip read at now, a
// CREATE with create. In a read loop's batch (c) a source's LISTs and
// JOINs ask together, once (see batch.admitted): a batch is mostly the
// requests of a client or a few, and the guard's bookkeeping is then paid
// per source, not per request. A CREATE asks alone: its verdict depends
// on the requests its source sent before it.
func (l *Lobby) admit(c sender, ip netip.Addr, create bool, now time.Time) limit.Verdict {
	q, batched := c.(*batch)
	if !batched || create {
		return l.guard.Admit(ip, now)
	}
	return q.admitted(ip, func(b []byte) bool {
		// A LIST or JOIN that will ask the guard (see handle).
		t := packet.TypeOf(b)
		return (t == packet.ListRooms || t == packet.JoinRoom) && l.turnedAway(t) == "" && packet.Is(b)
	}, func(n int) (limit.Admission, bool) {
		return l.guard.AdmitN(ip, now, n)
	}, func() limit.Verdict {
		return l.guard.Admit(ip, now)
	})
}

// refused counts a request the guard refused.
func (l *Lobby) refused(v limit.Verdict) {
	l.stats.drop(v.Reason())
	if v == limit.NewlyLimited {
		l.stats.limited.Add(1)
	}
}

// createSlot takes one of the MaxCreates slots for a CREATE, which its
// goroutine gives back. With none free the CREATE is dropped as busy and
// abandon forgets it in its retry cache, so that its retry is handled anew.
func (l *Lobby) createSlot(abandon func()) bool {
	if l.creating.Add(1) > int64(l.cfg.MaxCreates) {
		l.creating.Add(-1)
		abandon()
		l.stats.drop("create_busy")
		return false
	}
	return true
}

func (l *Lobby) startCreate(req request, now time.Time) {
	if v := l.guard.AdmitCreate(req.from.Addr(), now); !v.OK() {
		l.retries.abandon(req.key)
		l.refused(v)
		return
	}
	if !l.createSlot(func() { l.retries.abandon(req.key) }) {
		return
	}
	l.work.Go(func() {
		defer l.creating.Add(-1)
		r, err := l.rooms.Create(l.ctx, req.from)
		if l.handedOver(l.retries, req.key, err) {
			return
		}
		if err == nil {
			l.stats.granted[0].Add(1)
			l.lists.changed()
			l.log.Info().Uint32("room", r.ID).Uint16("port", r.Port).Stringer("creator", req.from).Msg("create granted")
		} else {
			l.failed("create", req.from, 0, err)
		}
		l.answer(&req, r.ID, r.Port, err, time.Now(), make([]byte, 0, 32))
	})
}

func (l *Lobby) joinWorker() {
	buf := make([]byte, 0, 64)
	for req := range l.jobs {
		buf = l.join(&req, time.Now(), buf)
	}
}

// replay answers a retry from to with its reply as a retry cache kept it
// (out), sent through c from src and charged by v at now, or drops it
// while the request it repeats still runs.
func (l *Lobby) replay(c sender, out []byte, to netip.AddrPort, src netip.Addr, v limit.Verdict, now time.Time) []byte {
	if len(out) == 0 { // still running; its reply will come
		l.stats.drop("retry_pending")
		return out
	}
	l.stats.retries.Add(1)
	l.send(c, out, to, src, v, now)
	return out
}

// joinInline runs a JOIN on its read loop, asked at now (see runInline).
func (l *Lobby) joinInline(req *request, now time.Time, out []byte) []byte {
	var (
		h   room.Held
		err error
	)
	out, ran := l.runInline(l.retries, req.key, req.conn, req.from, req.src, req.verdict, now, out, func(b []byte) ([]byte, error) {
		h, err = l.hold(req, now)
		return l.appendAnswer(b, req, req.asked, h.Port, err), err
	})
	if ran {
		l.joined(req, h, err, now)
		l.send(req.conn, out, req.from, req.src, req.verdict, now)
	}
	return out
}

// runInline runs a request k of cache on its read loop at now, the table
// never waiting: the cache's look-up, the request (do, which appends its
// answer to b and returns the table's error) and the answer kept, in one
// hold of the cache's lock (retries.run). A retry is answered from the
// cache, through c to to from src, charged by v; a request the table
// refused for a handover is forgotten and dropped (see handedOver). It
// returns the answer, and whether the request ran: the caller then counts
// the answer and sends it, out of the lock.
func (l *Lobby) runInline(cache *retries, k retryKey, c sender, to netip.AddrPort, src netip.Addr, v limit.Verdict,
	now time.Time, out []byte, do func(b []byte) ([]byte, error)) ([]byte, bool) {
	handover := false
	out, found := cache.run(k, now, out, func(b []byte) ([]byte, bool) {
		a, err := do(b)
		handover = l.closedForHandover(err)
		return a, !handover
	})
	switch {
	case found:
		return l.replay(c, out, to, src, v, now), false
	case handover:
		l.stats.drop("handover")
		return out, false
	}
	return out, true
}

// join runs one JOIN, asked at now, and answers it, charging the reply to
// the reflection guard at now too: one clock read per datagram, and a
// Join that took a while can only make that charge stricter (the guard
// refills less). buf is scratch space it returns for reuse.
func (l *Lobby) join(req *request, now time.Time, buf []byte) []byte {
	h, err := l.hold(req, now)
	if l.handedOver(l.retries, req.key, err) {
		return buf
	}
	l.joined(req, h, err, now)
	return l.answer(req, req.asked, h.Port, err, now, buf[:0])
}

// joined counts and logs the outcome of req's JOIN at now: the seat h, or
// err. A JOIN refused for a room that its held seats fill turns the seat
// guard on: that is what forged JOINs do.
func (l *Lobby) joined(req *request, h room.Held, err error, now time.Time) {
	switch {
	case err == nil:
		if q, ok := req.conn.(*batch); ok {
			q.counts.joins++
		} else {
			l.stats.granted[1].Add(1)
		}
		if h.Occupied != req.room.Occupied() { // a new seat, not a refreshed one
			l.lists.changed()
		}
		if e := l.log.Debug(); e.Enabled() { // spares the hot path the interface conversion
			e.Uint32("room", req.room.ID).Stringer("player", req.from).Bool("proven", req.proof == room.SawListing).Msg("seat held")
		}
	case err == room.ErrFull && req.room.Seats > 0:
		l.cookies.trigger(now)
		fallthrough
	default:
		l.failed("join", req.from, req.asked, err)
	}
}

// hold asks the table for req's seat at now.
func (l *Lobby) hold(req *request, now time.Time) (room.Held, error) {
	if l.joinAt != nil {
		return l.joinAt.JoinAt(l.ctx, req.room.ID, req.from, req.proof, now)
	}
	r, err := l.rooms.Join(l.ctx, req.room.ID, req.from, req.proof)
	return room.Held{Port: r.Port, Occupied: r.Occupied()}, err
}

// handedOver reports whether a request that err ended, k in cache, is to
// be dropped as one that came during the handover (closedForHandover),
// and if so forgets it in the cache and counts it dropped. Its retry is
// for the new process to answer.
func (l *Lobby) handedOver(cache *retries, k retryKey, err error) bool {
	if !l.closedForHandover(err) {
		return false
	}
	cache.abandon(k)
	l.stats.drop("handover")
	return true
}

// closedForHandover reports whether err is the table's refusal while it is
// held for a handover, with the lobby frozen for it.
func (l *Lobby) closedForHandover(err error) bool {
	return errors.Is(err, room.ErrClosed) && l.frozen.Load()
}

// answer encodes the outcome of a CREATE or JOIN, records it for retries
// and sends it.
func (l *Lobby) answer(req *request, id uint32, port uint16, err error, now time.Time, buf []byte) []byte {
	buf = l.appendAnswer(buf, req, id, port, err)
	l.retries.finish(req.key, buf)
	l.send(req.conn, buf, req.from, req.src, req.verdict, now)
	return buf
}

// appendAnswer encodes ROOM_CREATED or JOIN_SUCCESS for room id on port,
// or JOIN_FAILED when err is set, in the request's framing, sequence and
// tick. JOIN_SUCCESS names the room as the JOIN did (id is req.asked),
// masked or not.
func (l *Lobby) appendAnswer(b []byte, req *request, id uint32, port uint16, err error) []byte {
	m := packet.Message{Header: packet.Header{Framing: req.h.Framing, Seq: req.h.Seq, Tick: req.h.Tick}}
	switch {
	case err != nil:
		m.Type = packet.JoinFailed
	case req.h.Type == packet.CreateRoom:
		m.Type = packet.RoomCreated
	default:
		m.Type = packet.JoinSuccess
	}
	if err == nil {
		m.RoomID, m.Port = id, port
	}
	out, encErr := m.Append(b)
	if encErr != nil { // a fixed-size message cannot fail to encode
		panic(fmt.Sprintf("lobby: encoding %#x: %v", m.Type, encErr))
	}
	return out
}

// failed counts a refused CREATE or JOIN by reason and logs it with its
// reason at debug: a flood of JOINs to a full room must not flood the log
// at info, where the report line sums them by reason.
func (l *Lobby) failed(op string, from netip.AddrPort, room uint32, err error) {
	reason := failureReason(err)
	l.stats.fail(reason)
	if e := l.log.Debug(); e.Enabled() { // spares the hot path the interface conversions
		e.Str("op", op).Uint32("room", room).Stringer("from", from).Str("reason", reason).Err(err).Msg("refused")
	}
}

func failureReason(err error) string {
	if errors.Is(err, errNoRoomZero) {
		return "room_0"
	}
	return room.Reason(err)
}

// send writes one reply from src (see arrival.replyFrom) if the guard's
// reply budgets let it through (v is the request's verdict). A reply
// queued in a read loop's batch is counted when the batch is flushed, once
// it is known to have gone out; if its verdict is plain (Served), its
// charge waits until then too, to be paid with the batch's other replies
// to its network (see settle).
func (l *Lobby) send(c sender, b []byte, to netip.AddrPort, src netip.Addr, v limit.Verdict, now time.Time) {
	q, queued := c.(*batch)
	if queued && v == limit.Served {
		// Charged when the batch is settled. A reply to an unverified
		// source is charged now, alone: it draws on two budgets, and a
		// batch's replies refused together by the second would have
		// paid the first once already before each asks alone.
		q.owe(b, to, src)
		return
	}
	if !l.guard.AllowReply(to.Addr(), len(b), v, now) {
		l.stats.drop("reflection")
		return
	}
	_, err := c.WriteFrom(b, to, src)
	if !queued {
		l.sent(b, err == nil)
	}
}

// settle charges a read loop's batch of replies to the reply budget at
// now, dropping what does not fit (see batch.settle).
func (l *Lobby) settle(q *batch, now time.Time) {
	q.settle(func(to netip.Addr, n int) bool {
		return l.guard.AllowReply(to, n, limit.Served, now)
	}, func() { l.stats.drop("reflection") })
}

// flush sends the replies of a read loop's batch and adds its counts to
// the lobby's: those of its requests and joins before the replies go
// out, as when each is counted on its own, and those of its replies once
// they have.
func (l *Lobby) flush(q *batch) {
	l.stats.add(&q.counts) // requests and joins, before their replies
	q.flush(func(b []byte, ok bool) {
		if t := packet.TypeOf(b); ok && !ext.Is(t) {
			q.counts.replies[replyIndex(t)]++
			return
		}
		l.sent(b, ok)
	})
	l.stats.add(&q.counts)
}

// sent counts a reply that went out, by its type, or a send error.
func (l *Lobby) sent(b []byte, ok bool) {
	if !ok {
		l.stats.drop("send_error")
		return
	}
	if t := packet.TypeOf(b); ext.Is(t) {
		l.stats.repliesByType.Add(strings.ToLower(ext.Name(t)))
	} else {
		l.stats.replies[replyIndex(t)].Add(1)
	}
}

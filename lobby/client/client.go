// Package client talks to a Foyer lobby over the native protocol: it lists
// the rooms, creates a room, joins one, and finds lobbies on the local
// network.
//
// Every request is one datagram answered by one datagram. A request that
// gets no answer within the per-attempt timeout is sent again with the same
// sequence id, so a lobby that already acted on it answers from its replay
// cache instead of acting twice: a retried CREATE never makes a second room.
//
// Replies are matched by sequence id and message type; anything else that
// reaches the client's socket (stray replies, garbage, packets that fail
// their CRC) is dropped without a trace, the same way the lobby treats
// malformed requests.
//
// Errors name the operation and the lobby, and wrap a sentinel to match:
//
//	list 127.0.0.1:7777: timeout: no ROOM_LIST after 3 attempts of 5s
//	join 127.0.0.1:7777 room 42: lobby answered JOIN_FAILED (room unknown, full, or not waiting)
//
// A JOIN_FAILED is a *Refusal; Why asks the lobby's room list what it can
// tell of the reason.
package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// Defaults for the options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultAttempts = 3
)

// maxInFlight bounds the requests one Client has outstanding: each holds a
// sequence id, and the id space must never run dry.
const maxInFlight = 1 << 14

// refusedPause is how long a request waits after the lobby's host said
// nothing listens on the port before it tries again: long enough not to
// spin, short enough that a missing lobby is reported in about a second.
const refusedPause = 250 * time.Millisecond

var (
	// ErrJoinFailed means the lobby answered JOIN_FAILED: to a JOIN, the
	// room is unknown, full, or no longer waiting; to a CREATE, the lobby
	// could not start a room.
	ErrJoinFailed = errors.New("lobby answered JOIN_FAILED")

	// ErrTimeout means no attempt got a matching reply in time, or the
	// caller's context deadline passed first. errors.Is(err,
	// context.DeadlineExceeded) holds for it too.
	ErrTimeout error = timeoutError{}

	// ErrRefused means the lobby's host answered that nothing listens on
	// the lobby's port (ICMP port unreachable) on every attempt.
	ErrRefused = errors.New("nothing listens on that port (port unreachable)")

	// ErrClosed is returned by requests on a Client after Close.
	ErrClosed = errors.New("client closed")

	errBusy = errors.New("too many requests in flight")
)

type timeoutError struct{}

func (timeoutError) Error() string { return "timeout" }

// Timeout reports true, like the net package's timeout errors.
func (timeoutError) Timeout() bool { return true }

// Is makes a timeout match context.DeadlineExceeded, so callers that only
// know the context package can still tell a timeout apart.
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Option changes how a Client or Discover talks to lobbies.
type Option func(*config)

type config struct {
	timeout   time.Duration
	attempts  int
	framing   packet.Framing
	broadcast []netip.Addr
	onAttempt func(Attempt)
}

func newConfig(opts []Option) config {
	c := config{timeout: DefaultTimeout, attempts: DefaultAttempts, framing: packet.Compact}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithTimeout sets how long one attempt waits for its reply (default 5 s).
// Values of zero or less keep the default.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithAttempts sets how many times a request is sent before it fails
// (default 3). Values below 1 keep the default.
func WithAttempts(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.attempts = n
		}
	}
}

// WithFraming selects the header the client writes: packet.Compact (the
// default, 8 bytes) or packet.Legacy (the original game's 17 bytes).
// Replies are accepted in either framing.
func WithFraming(f packet.Framing) Option {
	return func(c *config) { c.framing = f }
}

// WithBroadcast makes Discover send its query to these addresses instead of
// the limited broadcast address and every interface's broadcast address.
// A unicast address works too, which is how a lobby on this host is found
// without any broadcast at all. Dial ignores it.
func WithBroadcast(addrs ...netip.Addr) Option {
	return func(c *config) { c.broadcast = append([]netip.Addr(nil), addrs...) }
}

// WithAttemptFunc makes every request of a Client call f just before each
// datagram it sends, so that a caller can tell a person what the request
// is waiting for: a lobby that rate-limits a host drops its requests
// without a word, and only the retries show it. f runs on the goroutine
// that made the request and holds it up while it runs. Discover does not
// call it.
func WithAttemptFunc(f func(Attempt)) Option {
	return func(c *config) { c.onAttempt = f }
}

// Attempt is one sending of a request, as WithAttemptFunc reports it.
type Attempt struct {
	// Request is what is sent: packet.ListRooms, CreateRoom or JoinRoom.
	Request packet.Type
	// Lobby is where it is sent.
	Lobby netip.AddrPort
	// N counts the attempts from 1, up to Of.
	N, Of int
	// Timeout is how long the attempt waits for an answer.
	Timeout time.Duration
	// Refused is set when the attempt before this one met "port
	// unreachable" rather than silence: nothing listened on the lobby's port.
	Refused bool
	// Awaiting names the replies that answer the request, such as
	// "ROOM_CREATED or JOIN_FAILED".
	Awaiting string
}

// Seat is a place in a room the lobby holds for this client: where to send
// the game traffic.
type Seat struct {
	Room uint32
	Port uint16
	// Addr is the room's game address: the lobby's IP with the room's
	// port, or the address the lobby gave for a room of another host.
	Addr netip.AddrPort
	// Code is the room's join code and Token the seat's token (its
	// bytes; a string, so that a Seat compares), which the player shows
	// the room (Present); both empty from a seed lobby.
	Code  string
	Token string
}

func netipAddrPort(ip netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(ip, port) }

// Client sends requests to one lobby from one UDP socket. Its methods are
// safe for concurrent use; each request has its own sequence id.
type Client struct {
	addr netip.AddrPort
	conn *net.UDPConn
	cfg  config

	mu      sync.Mutex
	next    uint16
	pending map[uint16]*call
	// answered is set once the lobby answered this client: from then on
	// it knows the client receives what it sends.
	answered bool
	// ext is what the client knows of the lobby's extension, token the
	// retry token it echoes, id its own id.
	ext   extState
	token []byte
	id    [8]byte

	closeOnce sync.Once
	done      chan struct{} // closed when the read loop ends
	readErr   error         // why the read loop ended; set before done closes
}

// call is one request waiting for its reply: a seed one (reply), or an
// extension one (extReply).
type call struct {
	req      packet.Message
	reply    chan packet.Message // buffered: the read loop never blocks
	extReq   packet.Type         // the extension request's type; 0 for a seed one
	extReply chan ext.Message    // buffered: ditto
	refused  chan struct{}       // buffered: ditto
}

// Dial resolves addr ("host:port") and opens a socket to the lobby there.
// No datagram is sent until a request is made.
func Dial(addr string, opts ...Option) (*Client, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	ap := ua.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if !ap.Addr().IsValid() || ap.Port() == 0 {
		return nil, fmt.Errorf("dial %s: need a host and a port", addr)
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ap, err)
	}
	c := &Client{
		addr:    ap,
		conn:    conn,
		cfg:     newConfig(opts),
		next:    uint16(rand.Uint32()),
		pending: make(map[uint16]*call),
		done:    make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// Addr returns the lobby's address.
func (c *Client) Addr() netip.AddrPort { return c.addr }

// Close closes the socket; requests in flight fail with ErrClosed. It is
// safe to call more than once.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		err = c.conn.Close()
		<-c.done
	})
	return err
}

// List asks the lobby for its rooms.
func (c *Client) List(ctx context.Context) ([]packet.Room, error) {
	m, err := c.do(ctx, packet.Message{Header: packet.Header{Type: packet.ListRooms}})
	if err != nil {
		return nil, err
	}
	return m.Rooms, nil
}

// Create asks the lobby to start a room and hold a seat in it for this
// client. A JOIN_FAILED answer returns an error wrapping ErrJoinFailed.
//
// A lobby starts few rooms for senders it has never answered, which may
// be forged addresses: a client the lobby has not answered yet lists the
// rooms first, as a player would, so that its CREATE comes from a sender
// the lobby has seen receive.
func (c *Client) Create(ctx context.Context) (Seat, error) {
	c.mu.Lock()
	answered := c.answered
	c.mu.Unlock()
	if !answered {
		if _, err := c.List(ctx); err != nil {
			return Seat{}, fmt.Errorf("create %s: %w", c.addr, err)
		}
	}
	return c.seat(ctx, packet.Message{Header: packet.Header{Type: packet.CreateRoom}})
}

// Join asks the lobby for a seat in room id. A JOIN_FAILED answer returns
// an error wrapping ErrJoinFailed.
func (c *Client) Join(ctx context.Context, id uint32) (Seat, error) {
	return c.seat(ctx, packet.Message{Header: packet.Header{Type: packet.JoinRoom}, RoomID: id})
}

func (c *Client) seat(ctx context.Context, req packet.Message) (Seat, error) {
	m, err := c.do(ctx, req)
	if err != nil {
		return Seat{}, err
	}
	if m.Type == packet.JoinFailed {
		return Seat{}, &Refusal{Op: c.op(req), Room: req.RoomID, Create: req.Type == packet.CreateRoom}
	}
	return Seat{Room: m.RoomID, Port: m.Port, Addr: netip.AddrPortFrom(c.addr.Addr(), m.Port)}, nil
}

// op names a request for error messages: "join 127.0.0.1:7777 room 42".
func (c *Client) op(req packet.Message) string {
	switch req.Type {
	case packet.ListRooms:
		return fmt.Sprintf("list %s", c.addr)
	case packet.CreateRoom:
		return fmt.Sprintf("create %s", c.addr)
	default:
		return fmt.Sprintf("join %s room %d", c.addr, req.RoomID)
	}
}

// expected names the replies a request waits for, for timeout messages.
func expected(t packet.Type) string {
	switch t {
	case packet.ListRooms:
		return "ROOM_LIST"
	case packet.CreateRoom:
		return "ROOM_CREATED or JOIN_FAILED"
	default:
		return "JOIN_SUCCESS or JOIN_FAILED"
	}
}

// answers reports whether m is a reply to req: the sequence id is already
// matched, this checks the type and, for a join, the room.
func answers(req, m packet.Message) bool {
	switch req.Type {
	case packet.ListRooms:
		return m.Type == packet.RoomList
	case packet.CreateRoom:
		return m.Type == packet.RoomCreated || m.Type == packet.JoinFailed
	case packet.JoinRoom:
		return m.Type == packet.JoinFailed || (m.Type == packet.JoinSuccess && m.RoomID == req.RoomID)
	}
	return false
}

// do sends req until a reply arrives, the attempts run out, or ctx ends.
func (c *Client) do(ctx context.Context, req packet.Message) (packet.Message, error) {
	cl := &call{req: req, reply: make(chan packet.Message, 1), refused: make(chan struct{}, 1)}
	return exchange(c, ctx, cl, cl.reply, exchangeSpec{op: c.op(req), typ: req.Type, awaiting: expected(req.Type),
		attempts: c.cfg.attempts, timeout: c.cfg.timeout}, func(seq uint16) ([]byte, error) {
		req.Framing, req.Seq = c.cfg.framing, seq
		return req.Append(nil)
	})
}

// exchangeSpec says how one request is sent and waited for.
type exchangeSpec struct {
	op       string      // names it in errors: "join 127.0.0.1:7777 room 42"
	typ      packet.Type // its type
	awaiting string      // the replies that answer it, for messages
	attempts int
	timeout  time.Duration
	quiet    bool // not shown to WithAttemptFunc
}

// exchange registers cl, sends what encode makes of its sequence id until
// a reply arrives on replies, the attempts run out, or ctx ends.
func exchange[M any](c *Client, ctx context.Context, cl *call, replies <-chan M, e exchangeSpec, encode func(seq uint16) ([]byte, error)) (M, error) {
	var none M
	seq, err := c.register(cl)
	if err != nil {
		return none, fmt.Errorf("%s: %w", e.op, err)
	}
	defer c.unregister(seq)
	pkt, err := encode(seq)
	if err != nil {
		return none, fmt.Errorf("%s: encode: %w", e.op, err)
	}

	timer := time.NewTimer(e.timeout)
	defer timer.Stop()
	refused := false
	for attempt := 0; attempt < e.attempts; attempt++ {
		if attempt > 0 && refused {
			// Nothing listened a moment ago; give a starting lobby a
			// moment rather than resending at once.
			timer.Reset(min(refusedPause, e.timeout))
			if err := c.wait(ctx, timer, e.op); err != nil {
				return none, err
			}
		}
		if f := c.cfg.onAttempt; f != nil && !e.quiet {
			f(Attempt{Request: e.typ, Lobby: c.addr, N: attempt + 1, Of: e.attempts,
				Timeout: e.timeout, Refused: refused, Awaiting: e.awaiting})
		}
		refused = false
		select {
		case <-cl.refused: // about an earlier datagram, maybe another request's
		default:
		}
		if _, err := c.conn.Write(pkt); err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				refused = true
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return none, fmt.Errorf("%s: %w", e.op, ErrClosed)
			}
			return none, fmt.Errorf("%s: send: %w", e.op, err)
		}
		timer.Reset(e.timeout)
		select {
		case m := <-replies:
			c.mu.Lock()
			c.answered = true
			c.mu.Unlock()
			return m, nil
		case <-cl.refused:
			refused = true
		case <-timer.C:
		case <-ctx.Done():
			return none, c.ctxErr(ctx, e.op)
		case <-c.done:
			return none, fmt.Errorf("%s: %w", e.op, c.readErr)
		}
	}
	if refused {
		return none, fmt.Errorf("%s: %w", e.op, ErrRefused)
	}
	return none, fmt.Errorf("%s: %w: no %s after %d attempts of %v",
		e.op, ErrTimeout, e.awaiting, e.attempts, e.timeout)
}

// wait sleeps until timer fires, unless ctx ends or the client closes.
func (c *Client) wait(ctx context.Context, timer *time.Timer, op string) error {
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return c.ctxErr(ctx, op)
	case <-c.done:
		return fmt.Errorf("%s: %w", op, c.readErr)
	}
}

func (c *Client) ctxErr(ctx context.Context, op string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %w", op, ErrTimeout, ctx.Err())
	}
	return fmt.Errorf("%s: %w", op, ctx.Err())
}

// register gives cl a sequence id no other request in flight holds.
func (c *Client) register(cl *call) (uint16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxInFlight {
		return 0, errBusy
	}
	for {
		seq := c.next
		c.next++
		if _, busy := c.pending[seq]; !busy {
			c.pending[seq] = cl
			return seq, nil
		}
	}
}

func (c *Client) unregister(seq uint16) {
	c.mu.Lock()
	delete(c.pending, seq)
	c.mu.Unlock()
}

// readLoop hands each well-formed reply to the request it answers. It
// never blocks on a request: replies and refusals go to buffered channels,
// and one of each is enough.
func (c *Client) readLoop() {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				c.notifyRefused()
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				err = ErrClosed
			}
			c.readErr = err
			close(c.done)
			return
		}
		if ext.Is(packet.TypeOf(buf[:n])) {
			c.deliverExt(buf[:n])
			continue
		}
		m, err := packet.Parse(buf[:n])
		if err != nil {
			continue
		}
		c.mu.Lock()
		cl := c.pending[m.Seq]
		c.mu.Unlock()
		if cl == nil || cl.extReq != 0 || !answers(cl.req, m) {
			continue
		}
		select {
		case cl.reply <- m:
		default:
		}
	}
}

// notifyRefused tells every request in flight that the lobby's host
// reported the port unreachable. The report cannot be tied to one request.
func (c *Client) notifyRefused() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.pending {
		select {
		case cl.refused <- struct{}{}:
		default:
		}
	}
}

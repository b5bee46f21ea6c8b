package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// The extension of the lobby protocol (package ext): rooms with names and
// filters, private rooms and codes, passwords, quick join and seat tokens.
// A Client speaks it to a lobby that does, and falls back to the seed
// messages against an older lobby, for what they can do: a lobby that
// does not answer the first extension request within probeTimeout is
// taken to be one, for the Client's life.
//
// A lobby answers the first extension request of a source it has not seen
// receive with a retry token (EXT_RETRY), which the Client then echoes in
// every request; until it has one it pads its requests (a lobby never
// answers a source it has not validated with more bytes than it sent).

// probeTimeout bounds the wait for a lobby's first answer in the
// extension, after which it is taken for one that does not speak it. The
// first request also lists the seed way meanwhile: a lobby that answers
// that and not the extension within probeGrace of it is one without the
// extension, found in a round trip.
const (
	probeTimeout = time.Second
	probeGrace   = 200 * time.Millisecond
)

// padTo is the length a request without a token is padded to: enough for
// the EXT_RETRY it draws, in either framing.
const padTo = 64

// ErrNoExtension means the lobby does not speak the extension, and what
// was asked needs it (a code, a password, a private room, a filter on
// names, modes, maps or tags).
var ErrNoExtension = errors.New("the lobby does not speak the extension")

// RefusedError is a lobby's EXT_REFUSED: why it said no. It matches
// ErrJoinFailed, as the seed protocol's refusals do.
type RefusedError struct {
	Op     string
	Reason room.Code
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: lobby refused: %s", e.Op, reasonText(e.Reason))
}

// Is makes a refusal match ErrJoinFailed.
func (e *RefusedError) Is(target error) bool { return target == ErrJoinFailed }

// reasonText says what a refusal code means.
func reasonText(c room.Code) string {
	switch c {
	case room.CodeNotFound:
		return "no such room (or not one you may join by id)"
	case room.CodeFull:
		return "the room is full"
	case room.CodeStarted:
		return "the match has begun"
	case room.CodeWrongPassword:
		return "wrong password"
	case room.CodeQuota:
		return "your address or network holds its share"
	case room.CodeRateLimited:
		return "too many requests: try again later"
	case room.CodeNoCapacity:
		return "the lobby cannot start a room now"
	case room.CodeDraining:
		return "the lobby is shutting down or draining: it starts no new room"
	case room.CodeDenied:
		return "the lobby does not offer you that room"
	}
	return c.String()
}

// CreateOptions are what a room created through the extension asks for.
type CreateOptions struct {
	Meta     ext.Meta
	Private  bool   // listed nowhere, joined by its code
	Password string // wanted by every JOIN; empty: none
}

// extState is what the Client knows of its lobby's extension.
type extState uint8

const (
	extUnknown extState = iota
	extSpoken
	extNone
)

// clientID is this Client's own random id, which its seat tokens bind.
func (c *Client) clientID() [8]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == ([8]byte{}) {
		_, _ = rand.Read(c.id[:]) // crypto/rand does not fail
	}
	return c.id
}

// deliverExt hands an extension reply to the request it answers.
func (c *Client) deliverExt(b []byte) {
	m, err := ext.Parse(b)
	if err != nil {
		return
	}
	c.mu.Lock()
	cl := c.pending[m.Seq]
	c.mu.Unlock()
	if cl == nil || cl.extReq == 0 || !extAnswers(cl.extReq, m.Type) {
		return
	}
	select {
	case cl.extReply <- m:
	default:
	}
}

// extAnswers reports whether a reply of type got answers a request of
// type req.
func extAnswers(req, got packet.Type) bool {
	switch got {
	case ext.Retry, ext.Refused:
		return true
	case ext.Rooms:
		return req == ext.List
	case ext.Seat:
		return req != ext.List
	}
	return false
}

// askExt sends m until the lobby answers it (after handing out a retry
// token, which it echoes), and returns the answer; ErrNoExtension when
// the lobby is taken not to speak the extension.
func (c *Client) askExt(ctx context.Context, m ext.Message, op string) (ext.Message, error) {
	if err := c.probe(ctx, op); err != nil {
		return ext.Message{}, err
	}
	for range 3 {
		c.mu.Lock()
		token := c.token
		c.mu.Unlock()
		spec := exchangeSpec{op: op, typ: m.Type, awaiting: "EXT_SEAT or EXT_REFUSED",
			attempts: c.cfg.attempts, timeout: c.cfg.timeout}
		if m.Type == ext.List {
			spec.awaiting = "EXT_ROOMS or EXT_REFUSED"
		}
		r, err := c.sendExt(ctx, m, token, spec)
		if err != nil {
			return ext.Message{}, err
		}
		if r.Type == ext.Retry {
			c.mu.Lock()
			c.token = r.Token
			c.mu.Unlock()
			continue
		}
		if r.Type == ext.Refused {
			return r, &RefusedError{Op: op, Reason: room.Code(r.Reason)}
		}
		return r, nil
	}
	return ext.Message{}, fmt.Errorf("%s: %w: the lobby asks for a retry token again and again", op, ErrTimeout)
}

// sendExt sends m with token (padded without one) as spec says and
// returns the first answer.
func (c *Client) sendExt(ctx context.Context, m ext.Message, token []byte, spec exchangeSpec) (ext.Message, error) {
	m.Token, m.Pad = token, 0
	cl := &call{extReq: m.Type, extReply: make(chan ext.Message, 1), refused: make(chan struct{}, 1)}
	return exchange(c, ctx, cl, cl.extReply, spec, func(seq uint16) ([]byte, error) {
		m.Framing, m.Seq = c.cfg.framing, seq
		if m.Token == nil {
			b, err := m.Append(nil)
			if err != nil {
				return nil, err
			}
			m.Pad = max(padTo-len(b), 0)
		}
		return m.Append(nil)
	})
}

// probe finds out, once, whether the lobby speaks the extension: it asks
// for a page of one room the extension's way, and lists the seed way
// meanwhile. An extension answer (a page, or a retry token, which it
// keeps) says it does; a seed answer with none within probeGrace of it,
// or no answer within probeTimeout, says it does not: ErrNoExtension.
func (c *Client) probe(ctx context.Context, op string) error {
	c.mu.Lock()
	state := c.ext
	c.mu.Unlock()
	switch state {
	case extSpoken:
		return nil
	case extNone:
		return fmt.Errorf("%s: %w", op, ErrNoExtension)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		seed := exchangeSpec{op: op, typ: packet.ListRooms, awaiting: "ROOM_LIST",
			attempts: 1, timeout: min(c.cfg.timeout, probeTimeout), quiet: true}
		req := packet.Message{Header: packet.Header{Type: packet.ListRooms}}
		cl := &call{req: req, reply: make(chan packet.Message, 1), refused: make(chan struct{}, 1)}
		if _, err := exchange(c, pctx, cl, cl.reply, seed, func(seq uint16) ([]byte, error) {
			req.Framing, req.Seq = c.cfg.framing, seq
			return req.Append(nil)
		}); err == nil {
			time.AfterFunc(probeGrace, cancel)
		}
	}()
	spec := exchangeSpec{op: op, typ: ext.List, awaiting: "EXT_ROOMS", attempts: 1,
		timeout: min(c.cfg.timeout, probeTimeout), quiet: true}
	r, err := c.sendExt(pctx, ext.Message{Header: packet.Header{Type: ext.List}, Limit: 1}, nil, spec)
	if err != nil && ctx.Err() != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.ext = extNone
		return fmt.Errorf("%s: %w", op, ErrNoExtension)
	}
	c.ext = extSpoken
	if r.Type == ext.Retry {
		c.token = r.Token
	}
	return nil
}

// Page lists one page of the rooms f matches, after cursor (0 from the
// first), at most limit of them (0: as many as fit one datagram), and
// the cursor of the next page, 0 when this was the last.
func (c *Client) Page(ctx context.Context, f ext.Filter, cursor uint32, limit uint8) ([]ext.Entry, uint32, error) {
	op := fmt.Sprintf("list %s", c.addr)
	r, err := c.askExt(ctx, ext.Message{Header: packet.Header{Type: ext.List}, Filter: f, Cursor: cursor, Limit: limit}, op)
	if err != nil {
		return nil, 0, err
	}
	return r.Entries, r.Next, nil
}

// maxPages bounds the pages Rooms walks: a lobby whose cursor never ends
// does not keep a client.
const maxPages = 4096

// Rooms lists every room f matches, page after page. Against a lobby
// without the extension it lists the seed way, filtering on state and
// free places; a filter on anything else fails with ErrNoExtension.
func (c *Client) Rooms(ctx context.Context, f ext.Filter) ([]ext.Entry, error) {
	var all []ext.Entry
	cursor := uint32(0)
	for range maxPages {
		page, next, err := c.Page(ctx, f, cursor, 0)
		if errors.Is(err, ErrNoExtension) {
			return c.seedRooms(ctx, f)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == 0 || next <= cursor {
			return all, nil
		}
		cursor = next
	}
	return all, nil
}

// seedRooms is Rooms against a lobby without the extension.
func (c *Client) seedRooms(ctx context.Context, f ext.Filter) ([]ext.Entry, error) {
	if f.Mode != "" || f.Map != "" || f.NamePrefix != "" || len(f.Tags) > 0 {
		return nil, fmt.Errorf("list %s: filtering on names, modes, maps or tags: %w", c.addr, ErrNoExtension)
	}
	rooms, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []ext.Entry
	for _, r := range rooms {
		e := ext.Entry{ID: r.ID, Players: r.Players, MaxPlayers: r.MaxPlayers, Port: r.Port, State: r.State}
		if seedMatch(&f, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// seedMatch is what a client can check of f on a seed listing.
func seedMatch(f *ext.Filter, e ext.Entry) bool {
	return (f.States == 0 || f.States&(1<<e.State) != 0) && int(e.MaxPlayers)-int(e.Players) >= int(f.MinFree)
}

// CreateRoom asks the lobby to start a room with o. Against a lobby
// without the extension it is a seed CREATE (the room has no name, mode,
// map or tags), unless o wants a private room or a password:
// ErrNoExtension.
func (c *Client) CreateRoom(ctx context.Context, o CreateOptions) (Seat, error) {
	op := fmt.Sprintf("create %s", c.addr)
	m := ext.Message{Header: packet.Header{Type: ext.Create}, Client: c.clientID(), Meta: o.Meta, Private: o.Private, Password: o.Password}
	r, err := c.askExt(ctx, m, op)
	if errors.Is(err, ErrNoExtension) && !o.Private && o.Password == "" {
		return c.Create(ctx)
	}
	if err != nil {
		return Seat{}, err
	}
	return c.extSeat(r), nil
}

// JoinCode asks for a seat in the room whose join code is code (any case),
// with its password if it has one.
func (c *Client) JoinCode(ctx context.Context, code, password string) (Seat, error) {
	code = strings.ToUpper(code)
	op := fmt.Sprintf("join %s code %s", c.addr, code)
	if !ext.ValidCode(code) {
		return Seat{}, fmt.Errorf("%s: not a join code (%d letters of %s)", op, ext.CodeLen, ext.CodeAlphabet)
	}
	r, err := c.askExt(ctx, ext.Message{Header: packet.Header{Type: ext.Join}, Client: c.clientID(), Code: code, Password: password}, op)
	if err != nil {
		return Seat{}, err
	}
	return c.extSeat(r), nil
}

// JoinRoom asks for a seat in room id, with its password if it has one,
// and the seat's token. Against a lobby without the extension it is a
// seed JOIN, unless a password is given: ErrNoExtension.
func (c *Client) JoinRoom(ctx context.Context, id uint32, password string) (Seat, error) {
	op := fmt.Sprintf("join %s room %d", c.addr, id)
	r, err := c.askExt(ctx, ext.Message{Header: packet.Header{Type: ext.Join}, Client: c.clientID(), RoomID: id, Password: password}, op)
	if errors.Is(err, ErrNoExtension) && password == "" {
		return c.Join(ctx, id)
	}
	if err != nil {
		return Seat{}, err
	}
	return c.extSeat(r), nil
}

// Quick asks for a seat in the fullest joinable room f matches, or in a
// new one when none does. Against a lobby without the extension it lists
// the rooms, joins the fullest that matches on state and free places, or
// creates one.
func (c *Client) Quick(ctx context.Context, f ext.Filter) (Seat, error) {
	op := fmt.Sprintf("quick %s", c.addr)
	r, err := c.askExt(ctx, ext.Message{Header: packet.Header{Type: ext.Quick}, Client: c.clientID(), Filter: f}, op)
	if errors.Is(err, ErrNoExtension) {
		return c.seedQuick(ctx, f)
	}
	if err != nil {
		return Seat{}, err
	}
	return c.extSeat(r), nil
}

// seedQuick is Quick against a lobby without the extension.
func (c *Client) seedQuick(ctx context.Context, f ext.Filter) (Seat, error) {
	rooms, err := c.seedRooms(ctx, f)
	if err != nil {
		return Seat{}, err
	}
	slices.SortStableFunc(rooms, func(a, b ext.Entry) int { return int(b.Players) - int(a.Players) })
	for _, r := range rooms {
		if (r.State == packet.Waiting || r.State == packet.Countdown) && r.Players < r.MaxPlayers {
			if s, err := c.Join(ctx, r.ID); err == nil {
				return s, nil
			}
		}
	}
	return c.Create(ctx)
}

// extSeat is the seat of an EXT_SEAT: at the lobby's address, or where it
// says the room runs.
func (c *Client) extSeat(r ext.Message) Seat {
	ip := c.addr.Addr()
	if r.Addr.IsValid() {
		ip = r.Addr
	}
	return Seat{Room: r.RoomID, Port: r.Port, Addr: netipAddrPort(ip, r.Port), Code: r.Code, Token: string(r.SeatToken)}
}

// Present shows a seat's token to its room from conn until the room
// answers EXT_ADMITTED, attempts times at most, each waiting timeout: the
// room's door then admits the socket's address into the seat, wherever it
// is (a socket of another port, or of another network, takes the seat
// back). A conn connected to seat.Addr is used as it is; an unconnected
// UDP socket (net.ListenUDP's, a net.PacketConn) sends to seat.Addr, stays
// unconnected, and takes EXT_ADMITTED from seat.Addr only. It reads conn
// meanwhile and drops what else comes; call it before reading conn for
// the game.
func Present(ctx context.Context, conn net.Conn, seat Seat, timeout time.Duration, attempts int) error {
	op := fmt.Sprintf("present %s room %d", seat.Addr, seat.Room)
	if len(seat.Token) == 0 {
		return fmt.Errorf("%s: the seat has no token (a seed lobby's)", op)
	}
	m := ext.Message{Header: packet.Header{Type: ext.Present}, SeatToken: []byte(seat.Token)}
	pkt, err := m.Append(nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	send, recv := roomPath(conn, seat.Addr)
	buf := make([]byte, 2048)
	for range max(attempts, 1) {
		if err := send(pkt); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%s: %w", op, err)
		}
		deadline := time.Now().Add(timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = conn.SetReadDeadline(deadline)
		for {
			n, fromRoom, err := recv(buf)
			if err != nil {
				if errors.Is(err, syscall.ECONNREFUSED) {
					continue
				}
				break // the attempt's time is up
			}
			if a, err := ext.Parse(buf[:n]); err == nil && fromRoom && a.Type == ext.Admitted && a.RoomID == seat.Room {
				_ = conn.SetReadDeadline(time.Time{})
				return nil
			}
		}
		if ctx.Err() != nil {
			_ = conn.SetReadDeadline(time.Time{})
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
	return fmt.Errorf("%s: %w: no EXT_ADMITTED after %d attempts of %v", op, ErrTimeout, attempts, timeout)
}

// fromAddr reports whether a datagram from from came from want, an
// IPv4-mapped IPv6 address being its IPv4 one.
func fromAddr(from, want netip.AddrPort) bool {
	return from.Port() == want.Port() && from.Addr().Unmap() == want.Addr().Unmap()
}

// roomPath is how Present sends to the room at room and reads what it
// answers: through conn's own peer when it has one, else, for an
// unconnected packet socket, to room, taking only what comes from it
// (fromRoom false: from elsewhere).
func roomPath(conn net.Conn, room netip.AddrPort) (send func([]byte) error, recv func([]byte) (n int, fromRoom bool, err error)) {
	pc, ok := conn.(net.PacketConn)
	if !ok || conn.RemoteAddr() != nil {
		return func(b []byte) error { _, err := conn.Write(b); return err },
			func(b []byte) (int, bool, error) { n, err := conn.Read(b); return n, true, err }
	}
	to := net.UDPAddrFromAddrPort(room)
	return func(b []byte) error { _, err := pc.WriteTo(b, to); return err },
		func(b []byte) (int, bool, error) {
			n, from, err := pc.ReadFrom(b)
			u, _ := from.(*net.UDPAddr)
			return n, u != nil && fromAddr(u.AddrPort(), room), err
		}
}

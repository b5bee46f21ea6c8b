package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
)

var playHelp = Help{
	Usage: []string{"foyer play [flags] [ADDR] [ROOM|CODE]"},
	About: `Play the reference room from the terminal. Join room ROOM (or the room
whose join code is CODE) of the lobby at ADDR (` + defaultLobby + ` when left
out; a lone number or code is a ROOM or CODE), or create a room when ROOM
is left out, then talk to the room on its UDP port on the lobby's host:
say hello, get ready (press Enter, or pass --ready), and watch the
countdown, the start, who leaves, and the end of the match. The room
drops a player it has not heard from for 10 s, so play pings it every
--ping. --timeout and --attempts govern the hello as well as the lobby
request.

From a lobby that speaks the extension, play gets a seat token and shows
it to the room first. When the room falls silent for --reconnect (the
network went away, a NAT changed the port), play takes a new socket and
shows its token again, every second, until the room answers or --silence
runs out: the room gives the seat back, wherever play is now.

With --legacy, play speaks the original game's 17-byte framing to the
lobby and to the room, and greets the room as that game's client does: a
hello, a join request and a ping, until the room accepts the join. Players
of both framings can share a room.

Exits 0 when the match ends, 1 if the lobby or the room says no or goes
silent, and 130 after Ctrl-C, which tells the room that the player left.
Two terminals make a match: 'foyer play ADDR' in one creates a room and
prints its id, 'foyer play ADDR ROOM' in the other joins it.`,
	Example: []string{
		"foyer play 42",
		"foyer play",
		"foyer play 127.0.0.1:7777",
		"foyer play --ready 192.168.1.20 42",
		"foyer play --legacy 127.0.0.1:7777 42",
		"foyer play 127.0.0.1:7777 KXMPRT",
	},
}

// exitInterrupted is the shell's code for a command ended by Ctrl-C.
const exitInterrupted = 130

// playConfig is what play needs besides the lobby and the room.
type playConfig struct {
	ready     bool          // ready at once instead of on Enter
	ping      time.Duration // between pings
	silence   time.Duration // a room silent this long is gone
	reconnect time.Duration // a room silent this long is asked for the seat again
	lobby     *lobbyFlags   // also the hello's timeout and attempts
}

func Play(args []string, stdout, stderr io.Writer) int {
	c := New("play", playHelp, stdout, stderr)
	var cfg playConfig
	c.Flags.BoolVar(&cfg.ready, "ready", false, "get ready at once instead of on Enter")
	c.Flags.DurationVar(&cfg.ping, "ping", 2*time.Second, "time between pings to the room")
	c.Flags.DurationVar(&cfg.silence, "silence", 10*time.Second, "give up on a room silent for this long")
	c.Flags.DurationVar(&cfg.reconnect, "reconnect", 3*time.Second, "with a seat token: present it again from a new socket when the room is silent this long")
	cfg.lobby = c.lobbyFlags(client.DefaultTimeout, client.DefaultAttempts)
	c.Flags.Lookup("legacy").Usage = "talk to the lobby and the room in the original game's 17-byte header, as its client does"
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if cfg.ping <= 0 || cfg.silence <= 0 || cfg.reconnect <= 0 {
		return c.UsageError("--ping, --silence and --reconnect must be positive")
	}
	if len(pos) > 2 {
		return c.UsageError("takes [ADDR] [ROOM], got %s", count(len(pos), "argument"))
	}
	var target roomTarget
	if last := len(pos) - 1; len(pos) == 2 || len(pos) == 1 && (isRoomID(pos[0]) || isCode(pos[0])) {
		if isCode(pos[last]) {
			target.code = pos[last]
		} else {
			id, err := parseRoomID(pos[last])
			if err != nil {
				return c.UsageError("%v", err)
			}
			target.id = &id
		}
		pos = pos[:last]
	}
	addr := ""
	if len(pos) == 1 {
		addr = pos[0]
	}
	ctx, stop := interruptContext()
	defer stop()
	return c.play(ctx, addr, target, cfg, os.Stdin)
}

// roomTarget is the room play joins: by id, by code, or a new one.
type roomTarget struct {
	id   *uint32
	code string
}

// seat asks the lobby for target's seat. The original game's framing has
// no extension: a legacy player asks as its client does.
func (t roomTarget) seat(ctx context.Context, lc *client.Client, legacy bool) (client.Seat, error) {
	switch {
	case t.code != "":
		return lc.JoinCode(ctx, t.code, "")
	case legacy && t.id != nil:
		return lc.Join(ctx, *t.id)
	case legacy:
		return lc.Create(ctx)
	case t.id != nil:
		return lc.JoinRoom(ctx, *t.id, "")
	}
	return lc.CreateRoom(ctx, client.CreateOptions{})
}

// play takes a seat from the lobby at addr (in room, or in a new room if
// room is nil) and plays the match, reading Enter from stdin, until the
// match ends or ctx does.
func (c *Command) play(ctx context.Context, addr string, target roomTarget, cfg playConfig, stdin io.Reader) int {
	lc, code, ok := c.dial(addr, cfg.lobby)
	if !ok {
		return code
	}
	seat, err := target.seat(ctx, lc, cfg.lobby.legacy)
	err = lc.Why(ctx, err) // a seed lobby's refusal: what its list shows
	cfg.lobby.notes.stop()
	lobby := lc.Addr()
	lc.Close()
	if ctx.Err() != nil {
		return exitInterrupted
	}
	if err != nil {
		return c.Fail(err)
	}
	if target.id != nil || target.code != "" {
		fmt.Fprintf(c.stdout, "joined room %d, port %d\n", seat.Room, seat.Port)
	} else {
		fmt.Fprintf(c.stdout, "created room %d, port %d: others join with 'foyer play %s %d'\n", seat.Room, seat.Port, lobby, seat.Room)
		if seat.Code != "" {
			fmt.Fprintf(c.stdout, "its join code is %s: 'foyer play %s %s' joins it too\n", seat.Code, lobby, seat.Code)
		}
	}

	framing := packet.Compact
	if cfg.lobby.legacy {
		framing = packet.Legacy
	}
	p, err := dialRoom(seat, framing)
	if err != nil {
		return c.Fail(err)
	}
	defer p.close()
	if seat.Token != "" {
		if err := client.Present(ctx, p.conn, seat, cfg.lobby.timeout, cfg.lobby.attempts); err != nil {
			if ctx.Err() != nil {
				return exitInterrupted
			}
			return c.Fail(err)
		}
	}
	go p.read(p.conn)
	return p.run(ctx, c, cfg, stdin)
}

// player is one player's conversation with a room.
type player struct {
	seat    client.Seat
	framing packet.Framing
	conn    *net.UDPConn
	seq     uint16
	buf     []byte
	events  chan roomEvent
	done    chan struct{}
}

// roomEvent is a message from the room, or why none can come.
type roomEvent struct {
	msg game.Message
	err error
}

func dialRoom(seat client.Seat, framing packet.Framing) (*player, error) {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(seat.Addr))
	if err != nil {
		return nil, fmt.Errorf("play %s room %d: %w", seat.Addr, seat.Room, err)
	}
	p := &player{seat: seat, framing: framing, conn: conn, events: make(chan roomEvent), done: make(chan struct{})}
	return p, nil
}

func (p *player) close() {
	close(p.done)
	p.conn.Close()
}

// read delivers the room's messages; anything that is not a well-formed
// game message from the server, in the player's framing, is ignored.
//
// A room that has ended is gone: the next datagram sent to it draws a
// "port unreachable", which the kernel reports on the next read even
// while the room's last datagrams (its GAME_END) still wait unread. So a
// refusal is reported only once nothing more comes within refusedGrace.
func (p *player) read(conn *net.UDPConn) {
	buf := make([]byte, 2048)
	refused := false
	for {
		n, err := conn.Read(buf)
		var ev roomEvent
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			refused = true
			_ = conn.SetReadDeadline(time.Now().Add(refusedGrace))
			continue
		case refused && errors.As(err, &ne) && ne.Timeout():
			ev.err = client.ErrRefused
		case err != nil:
			return // closed
		default:
			if refused { // the room is there after all
				refused = false
				_ = conn.SetReadDeadline(time.Time{})
			}
			m, err := game.Parse(buf[:n])
			if err != nil || m.Type.Dir() != packet.ServerToClient || m.Framing != p.framing {
				continue
			}
			ev.msg = m
		}
		select {
		case p.events <- ev:
		case <-p.done:
			return
		}
		if ev.err != nil {
			return
		}
	}
}

// rebind takes a new socket and presents the seat's token from it: the
// room seats the player there again. It reports whether the room did,
// within a second.
func (p *player) rebind(ctx context.Context) bool {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(p.seat.Addr))
	if err != nil {
		return false // no route yet: the network is still away
	}
	if err := client.Present(ctx, conn, p.seat, time.Second, 1); err != nil {
		conn.Close()
		return false
	}
	old := p.conn
	p.conn = conn
	old.Close() // its reader ends
	go p.read(conn)
	return true
}

// refusedGrace is how long read still waits for the room's last datagrams
// once the room's port has refused one.
const refusedGrace = 200 * time.Millisecond

func (p *player) send(t game.Type) error {
	p.seq++
	m := game.Message{Framing: p.framing, Type: t, Seq: p.seq, Token: uint32(p.seq)}
	var err error
	if p.buf, err = m.Append(p.buf[:0]); err != nil {
		return err
	}
	_, err = p.conn.Write(p.buf)
	if errors.Is(err, syscall.ECONNREFUSED) {
		err = client.ErrRefused
	}
	return err
}

func (p *player) errorf(format string, a ...any) error {
	return fmt.Errorf("play %s room %d: %w", p.seat.Addr, p.seat.Room, fmt.Errorf(format, a...))
}

// run says hello and plays until the match ends or ctx does.
func (p *player) run(ctx context.Context, c *Command, cfg playConfig, stdin io.Reader) int {
	leave := func() int {
		p.send(game.ClientDisconnect)
		fmt.Fprintf(c.stdout, "left room %d\n", p.seat.Room)
		return exitInterrupted
	}
	hello, err := p.hello(ctx, cfg.lobby)
	if ctx.Err() != nil {
		return leave() // the hello may have seated us already
	}
	if err != nil {
		return c.Fail(err)
	}
	if p.framing == packet.Legacy {
		fmt.Fprintf(c.stdout, "in room %d: join accepted\n", p.seat.Room) // the original framing shows no slot
	} else {
		fmt.Fprintf(c.stdout, "in room %d: slot %d of %d\n", hello.RoomID, hello.Slot+1, hello.MaxPlayers)
	}

	enter := make(chan struct{}, 1)
	ready, counting := false, false
	getReady := func() error {
		ready = true
		fmt.Fprintln(c.stdout, "ready: waiting for the others")
		return p.send(game.ClientReady)
	}
	if cfg.ready {
		err = getReady()
	} else {
		fmt.Fprintln(c.stdout, "press Enter when ready (Ctrl-C leaves)")
		go waitEnter(stdin, enter)
	}

	ping := time.NewTicker(cfg.ping)
	defer ping.Stop()
	silence := time.NewTimer(cfg.silence)
	defer silence.Stop()
	quiet := time.NewTimer(cfg.reconnect)
	defer quiet.Stop()
	away := false // the room fell silent: asking for the seat from a new socket
	for err == nil {
		select {
		case ev := <-p.events:
			if ev.err != nil && p.seat.Token != "" {
				continue // the room is not there, or not for this socket: the seat may be had again
			}
			if ev.err != nil {
				err = ev.err
				break
			}
			silence.Reset(cfg.silence)
			quiet.Reset(cfg.reconnect)
			away = false
			switch m := ev.msg; m.Type {
			case game.AllReady:
				counting = true
				fmt.Fprintln(c.stdout, "all players ready")
			case game.CountdownTick:
				counting = true
				fmt.Fprintf(c.stdout, "starting in %d\n", m.Seconds)
			case game.GameStart:
				if m.Framing == packet.Legacy {
					fmt.Fprintln(c.stdout, "game started") // the original framing does not say for how long
				} else {
					fmt.Fprintf(c.stdout, "game started: a %d s match\n", m.Seconds)
				}
			case game.PlayerLeft:
				fmt.Fprintf(c.stdout, "the player in slot %d left\n", m.Slot+1)
			case game.GameEnd:
				fmt.Fprintf(c.stdout, "game over: %s\n", endText(m))
				return ExitOK
			}
		case <-enter:
			if !ready {
				err = getReady()
			}
		case <-ping.C:
			if away {
				continue
			}
			err = p.send(game.ClientPing)
			if err == nil && ready && !counting {
				// Ready has no answer of its own; say it again until the
				// countdown shows it arrived.
				err = p.send(game.ClientReady)
			}
			if err != nil && p.seat.Token != "" {
				err = nil // the network went away: the token gets the seat back
			}
		case <-quiet.C:
			if p.seat.Token == "" {
				continue
			}
			if !away {
				fmt.Fprintf(c.stdout, "the room is silent: asking for seat back from a new socket\n")
			}
			away = true
			if p.rebind(ctx) {
				fmt.Fprintf(c.stdout, "back in room %d from %s\n", p.seat.Room, p.conn.LocalAddr())
				away = false
				silence.Reset(cfg.silence)
				err = p.send(game.ClientPing)
			}
			quiet.Reset(time.Second)
		case <-silence.C:
			err = p.errorf("%w: the room has not answered for %v", client.ErrTimeout, cfg.silence)
		case <-ctx.Done():
			return leave()
		}
	}
	if errors.Is(err, client.ErrRefused) {
		err = p.errorf("%w: the room is gone", err)
	}
	return c.Fail(err)
}

// greeting is what a player sends until the room seats it: a hello in the
// compact framing; in the original game's, what its client sends every
// second until accepted.
var greeting = [...][]game.Type{
	packet.Compact: {game.ClientHello},
	packet.Legacy:  {game.ClientHello, game.ClientJoinRequest, game.ClientPing},
}

// seated is the answer that seats a player, and asked what it answers,
// per framing.
var (
	seated = [...]game.Type{packet.Compact: game.ServerHello, packet.Legacy: game.ServerJoinAccept}
	asked  = [...]string{packet.Compact: "hello", packet.Legacy: "join request"}
)

// hello sends the greeting until the room seats the player or answers
// ServerJoinDeny, with the lobby requests' timeout and attempts. A room
// whose port is still closed may be starting: its attempt runs out as if
// it were silent.
func (p *player) hello(ctx context.Context, lf *lobbyFlags) (game.Message, error) {
	timer := time.NewTimer(lf.timeout)
	defer timer.Stop()
	refused := false
	for range lf.attempts {
		for _, t := range greeting[p.framing] {
			if err := p.send(t); err != nil && !errors.Is(err, client.ErrRefused) {
				return game.Message{}, p.errorf("%w", err)
			}
		}
		timer.Reset(lf.timeout)
	wait:
		for {
			select {
			case ev := <-p.events:
				refused = ev.err != nil
				switch ev.msg.Type {
				case seated[p.framing]:
					return ev.msg, nil
				case game.ServerJoinDeny:
					return game.Message{}, p.errorf("the room denied the %s: %s", asked[p.framing], denyText(ev.msg))
				}
			case <-timer.C:
				break wait
			case <-ctx.Done():
				return game.Message{}, ctx.Err()
			}
		}
	}
	if refused {
		return game.Message{}, p.errorf("%w", client.ErrRefused)
	}
	return game.Message{}, p.errorf("%w: no %v or SERVER_JOIN_DENY after %d attempts of %v", client.ErrTimeout, seated[p.framing], lf.attempts, lf.timeout)
}

// waitEnter signals once when a line arrives; at the end of input it never
// does, which is why --ready exists.
func waitEnter(r io.Reader, enter chan<- struct{}) {
	if _, err := bufio.NewReader(r).ReadString('\n'); err == nil {
		enter <- struct{}{}
	}
}

// denyReasons and endReasons say what the room's reason codes mean.
var (
	denyReasons = map[game.DenyReason]string{
		game.DenyFull:       "the room is full",
		game.DenyInProgress: "the match has already begun",
	}
	endReasons = map[game.EndReason]string{
		game.EndTimeUp:    "time is up",
		game.EndAbandoned: "the room was abandoned",
		game.EndStopped:   "the host stopped the room",
	}
)

// denyText says why the room denied a player; a legacy deny does not say.
func denyText(m game.Message) string {
	if m.Framing == packet.Legacy {
		return "the room is full or the match has begun"
	}
	return reason(denyReasons, m.Deny)
}

// endText says why the match ended; a legacy GAME_END says only whether
// it ran its full length.
func endText(m game.Message) string {
	if m.Framing == packet.Legacy && m.End != game.EndTimeUp {
		return "the match was cut short"
	}
	return reason(endReasons, m.End)
}

// reason says what code r means; a code texts lacks, which a newer room
// may send, is shown by its number.
func reason[R game.DenyReason | game.EndReason](texts map[R]string, r R) string {
	if s, ok := texts[r]; ok {
		return s
	}
	return fmt.Sprintf("reason %d", r)
}

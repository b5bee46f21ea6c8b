// Package refroom is Foyer's reference room: the default game a room
// process plays, on the protocol of package packet/game. Players say hello,
// get ready, count down together, play for match_duration, and the room
// finishes; docs/game-protocol.md tells the rules from a player's side.
// Each player is answered in the framing it speaks, the compact one or the
// original game's, and both kinds play in one room.
//
// [Room] is the rules as a socket-free state machine; [Game] runs it on
// the UDP socket the instance SDK hands over.
package refroom

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
	"github.com/rs/zerolog"
)

// readBuffer is larger than any game message, so that a longer datagram is
// read whole and rejected rather than cut to something that parses.
const readBuffer = 2048

// Game is the reference room as an instance.Game.
type Game struct {
	log      zerolog.Logger
	conn     net.PacketConn
	room     *Room
	rep      *loggingReporter
	stopping atomic.Bool
	done     chan struct{}
	dropped  int // malformed datagrams, owned by the loop
}

var (
	_ instance.Game        = (*Game)(nil)
	_ instance.Reconnecter = (*Game)(nil)
)

// New returns a reference room that logs to log.
func New(log zerolog.Logger) *Game {
	return &Game{log: log, done: make(chan struct{})}
}

// Start reads the rules from a's settings and starts serving players on
// conn. Bad settings fail Start with a message that names the setting.
func (g *Game) Start(ctx context.Context, a instance.Assignment, conn net.PacketConn, r instance.Reporter) error {
	cfg, err := ParseSettings(a.Settings, a.MaxPlayers)
	if err != nil {
		return err
	}
	g.log = g.log.With().Uint32("room", a.RoomID).Uint16("port", a.Port).Logger()
	g.conn = conn
	g.rep = &loggingReporter{log: g.log, Reporter: r}
	g.room = NewRoom(a.RoomID, a.MaxPlayers, cfg, g.rep)
	context.AfterFunc(ctx, g.requestStop)
	g.log.Info().Int("max_players", a.MaxPlayers).Int("min_players", cfg.MinPlayers).
		Dur("countdown", cfg.Countdown).Dur("match_duration", cfg.MatchDuration).Msg("room open")
	go g.loop()
	return nil
}

// PlayerReconnected follows a player to its new address. The SDK calls
// it from inside the loop's read, so the loop's room is the caller's.
func (g *Game) PlayerReconnected(from, to netip.AddrPort) {
	g.log.Debug().Stringer("from", from).Stringer("to", to).Msg("player reconnected")
	g.room.Reconnected(time.Now(), from, to)
}

// Stop ends the match (GameEnd to every player) and waits for the loop to
// close the socket, or for ctx.
func (g *Game) Stop(ctx context.Context) error {
	if g.room == nil {
		return nil
	}
	g.requestStop()
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// requestStop wakes the loop with a past read deadline; the loop checks
// the flag after each deadline it sets, so the wake-up cannot be lost.
func (g *Game) requestStop() {
	g.stopping.Store(true)
	_ = g.conn.SetReadDeadline(time.Unix(1, 0))
}

// loop is the room's only goroutine: it owns the room, reads with the
// room's next deadline, and sends what the room asks for.
func (g *Game) loop() {
	defer close(g.done)
	defer g.conn.Close()
	buf := make([]byte, readBuffer)
	var out []byte
	for g.room.State() != packet.Finished {
		_ = g.conn.SetReadDeadline(g.room.Next())
		if g.stopping.Load() {
			g.room.Stop()
			g.flush(&out)
			break
		}
		n, addr, err := g.conn.ReadFrom(buf)
		now := time.Now()
		var ne net.Error
		switch {
		case err == nil:
			g.receive(now, buf[:n], addr)
		case !errors.As(err, &ne) || !ne.Timeout():
			if !errors.Is(err, net.ErrClosed) {
				g.log.Error().Err(err).Msg("room socket failed")
			}
			g.room.Stop()
		}
		g.room.Advance(now)
		g.flush(&out)
	}
	// Every GameEnd is on its way: now the host may learn of the end,
	// which ends the process.
	g.rep.releaseFinished()
	g.log.Info().Int("dropped", g.dropped).Msg("room finished")
}

func (g *Game) receive(now time.Time, b []byte, addr net.Addr) {
	from, ok := addrPort(addr)
	m, err := game.Parse(b)
	if !ok || err != nil {
		g.dropped++ // never answered: a reply to garbage is a reflection
		return
	}
	g.room.Receive(now, from, m)
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	var ap netip.AddrPort
	if u, ok := a.(*net.UDPAddr); ok {
		ap = u.AddrPort()
	} else if p, err := netip.ParseAddrPort(a.String()); err == nil {
		ap = p
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
}

func (g *Game) flush(out *[]byte) {
	for _, d := range g.room.Outbox() {
		var err error
		if *out, err = d.Msg.Append((*out)[:0]); err != nil {
			g.log.Error().Err(err).Stringer("type", d.Msg.Type).Msg("room built a bad message")
			continue
		}
		_, _ = g.conn.WriteTo(*out, net.UDPAddrFromAddrPort(d.To))
	}
}

// loggingReporter logs what the room reports, then passes it on. It holds
// Finished back until releaseFinished: the room reports it while its last
// datagrams (GameEnd) still wait in its outbox, and once the host has it
// the process exits. Only the loop's goroutine uses it.
type loggingReporter struct {
	log zerolog.Logger
	instance.Reporter
	finished bool // Finished reported by the room, not yet passed on
}

func (l *loggingReporter) SetState(s packet.RoomState) {
	l.log.Info().Stringer("state", s).Msg("room state")
	if s == packet.Finished {
		l.finished = true
		return
	}
	l.Reporter.SetState(s)
}

// releaseFinished passes on a Finished the room reported.
func (l *loggingReporter) releaseFinished() {
	if l.finished {
		l.Reporter.SetState(packet.Finished)
	}
}

func (l *loggingReporter) PlayerConnected(ip netip.Addr) {
	l.log.Debug().Stringer("ip", ip).Msg("player connected")
	l.Reporter.PlayerConnected(ip)
}

func (l *loggingReporter) PlayerDisconnected(ip netip.Addr) {
	l.log.Debug().Stringer("ip", ip).Msg("player disconnected")
	l.Reporter.PlayerDisconnected(ip)
}

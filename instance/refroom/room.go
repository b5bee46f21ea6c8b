package refroom

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
)

// Datagram is a message the room wants sent.
type Datagram struct {
	To  netip.AddrPort
	Msg game.Message
}

type player struct {
	slot     uint8
	framing  packet.Framing // the one its first message used; the room answers in it
	ready    bool
	lastSeen time.Time
}

// Room is the reference room's rules as a state machine, free of sockets
// and clocks: the caller feeds it messages and the time, sends what it
// puts in its outbox, and calls Advance by the time Next says.
//
//	Waiting --(min_players connected, all ready)--> Countdown
//	Countdown --(a player left, too few remain)--> Waiting
//	Countdown --(countdown over)--> Playing
//	Playing --(match over, or nobody left)--> Finished
//	any --(Stop)--> Finished
//
// A room nobody is in waits: its supervisor ends it (empty_timeout).
type Room struct {
	id      uint32
	max     int
	cfg     Config
	rep     instance.Reporter
	state   packet.RoomState
	players map[netip.AddrPort]*player
	seq     uint16
	// left are the players the room let go lately, by their last
	// address; back, those of them that came back with their seat token
	// (Reconnected), by their new one: a hello from there seats them as
	// they were, even once the match has begun.
	left, back map[netip.AddrPort]*player

	countdownEnd time.Time
	nextTick     time.Time // next CountdownTick; zero once all are sent
	ticksLeft    int       // the seconds the next tick announces
	matchEnd     time.Time
	nextAlive    time.Time // next keepalive to legacy players, in a match

	out []Datagram
}

// NewRoom opens room id in Waiting. maxPlayers must be within
// 1-MaxPlayers and cfg must come from ParseSettings.
func NewRoom(id uint32, maxPlayers int, cfg Config, rep instance.Reporter) *Room {
	return &Room{
		id:      id,
		max:     maxPlayers,
		cfg:     cfg,
		rep:     rep,
		players: make(map[netip.AddrPort]*player, maxPlayers),
		left:    make(map[netip.AddrPort]*player),
		back:    make(map[netip.AddrPort]*player),
	}
}

// State is the room's current state.
func (r *Room) State() packet.RoomState { return r.state }

// Players is the number of connected players.
func (r *Room) Players() int { return len(r.players) }

// Outbox returns the datagrams to send, in order, and forgets them. The
// slice is reused by the next call.
func (r *Room) Outbox() []Datagram {
	out := r.out
	r.out = r.out[:0]
	return out
}

// Receive handles one message from a player's address. A player speaks
// the framing of the message that seated it: from a seated address,
// messages in the other framing are ignored.
func (r *Room) Receive(now time.Time, from netip.AddrPort, m game.Message) {
	if r.state == packet.Finished {
		return
	}
	p := r.players[from]
	if p != nil && p.framing != m.Framing {
		return
	}
	switch m.Type {
	case game.ClientHello, game.ClientJoinRequest:
		// Either seats a new player; both are answered again as often as
		// they come, since the original client repeats them every second.
		if p == nil {
			if p = r.admit(from, m); p == nil {
				return
			}
		}
		r.answer(from, m, r.welcome(p, m.Type))
	case game.ClientReady:
		if p != nil {
			p.ready = true
		}
	case game.ClientPing:
		if p != nil {
			r.answer(from, m, game.Message{Type: game.ServerPong, Token: m.Token})
		}
	case game.ClientDisconnect:
		if p != nil {
			r.remove(from)
			p = nil
		}
	case game.ClientInput:
		// A room that plays no game reads an input only as a sign of
		// life: in a match it is what the original client sends.
	default:
		return // a server's message, sent to a server: ignored
	}
	if p != nil {
		p.lastSeen = now
	}
	r.Advance(now)
}

// Reconnected follows a player that came back from another address with
// its seat token (see instance.Reconnecter): one the room still has moves
// to its new address with its slot and its readiness; one the room let go
// is seated as it was on its next hello from there.
func (r *Room) Reconnected(now time.Time, from, to netip.AddrPort) {
	if p := r.players[from]; p != nil {
		delete(r.players, from)
		r.players[to] = p
		p.lastSeen = now
		return
	}
	if p := r.left[from]; p != nil {
		delete(r.left, from)
		r.back[to] = p
	}
}

// welcome is the answer to a seated player's hello or join request: a
// compact SERVER_HELLO says where it sits; the legacy answers are empty.
func (r *Room) welcome(p *player, req game.Type) game.Message {
	if req == game.ClientJoinRequest {
		return game.Message{Type: game.ServerJoinAccept}
	}
	return game.Message{Type: game.ServerHello, RoomID: r.id, Slot: p.slot, MaxPlayers: uint8(r.max)}
}

// admit seats a new player who sent req, or answers with a deny and
// returns nil.
// A player may join until the match begins: in Countdown the newcomer
// plays when it starts, as the lobby's rule (room.Room.JoinError) says.
func (r *Room) admit(from netip.AddrPort, req game.Message) *player {
	if p := r.back[from]; p != nil && len(r.players) < r.max {
		delete(r.back, from)
		if r.slotTaken(p.slot) {
			p.slot = r.freeSlot()
		}
		p.framing = req.Framing
		r.players[from] = p
		r.rep.PlayerConnected(from.Addr())
		return p
	}
	if r.state != packet.Waiting && r.state != packet.Countdown {
		r.answer(from, req, game.Message{Type: game.ServerJoinDeny, Deny: game.DenyInProgress})
		return nil
	}
	if len(r.players) >= r.max {
		r.answer(from, req, game.Message{Type: game.ServerJoinDeny, Deny: game.DenyFull})
		return nil
	}
	p := &player{slot: r.freeSlot(), framing: req.Framing}
	r.players[from] = p
	r.rep.PlayerConnected(from.Addr())
	return p
}

// slotTaken reports whether a player sits in slot.
func (r *Room) slotTaken(slot uint8) bool {
	for _, p := range r.players {
		if p.slot == slot {
			return true
		}
	}
	return false
}

func (r *Room) freeSlot() uint8 {
	var taken [MaxPlayers]bool
	for _, p := range r.players {
		taken[p.slot] = true
	}
	for i, t := range taken {
		if !t {
			return uint8(i)
		}
	}
	return 0 // unreachable: admit checks the room is not full
}

// remove lets the player at addr go, and tells the others which slot it
// left (the compact players: the legacy framing has no such message).
func (r *Room) remove(addr netip.AddrPort) {
	if len(r.left) >= 2*r.max {
		clear(r.left) // the grace of the oldest is over long since
	}
	slot := r.players[addr].slot
	r.left[addr] = r.players[addr]
	delete(r.players, addr)
	r.rep.PlayerDisconnected(addr.Addr())
	r.broadcast(game.Message{Type: game.PlayerLeft, Slot: slot})
}

// Advance applies what time alone changes: silent players are dropped,
// the countdown ticks, states change.
func (r *Room) Advance(now time.Time) {
	if r.state == packet.Finished {
		return
	}
	for addr, p := range r.players {
		if r.silent(p, now) {
			r.remove(addr)
		}
	}
	switch r.state {
	case packet.Waiting:
		if r.allReady() {
			r.startCountdown(now)
		}
	case packet.Countdown:
		switch {
		case len(r.players) < r.cfg.MinPlayers:
			r.setState(packet.Waiting)
		case !now.Before(r.countdownEnd):
			r.play(now)
		case !now.Before(r.nextTick):
			r.tick()
		}
	case packet.Playing:
		switch {
		case len(r.players) == 0:
			r.finish(game.EndAbandoned)
		case !now.Before(r.matchEnd):
			r.finish(game.EndTimeUp)
		case !now.Before(r.nextAlive):
			r.keepAlive(now)
		}
	}
}

// keepAliveEvery is how often a legacy player hears from the room in a
// match. The original client gives up on a server silent for 5 s, and its
// server sends a snapshot every tick; a room with no world to show sends
// an empty SERVER_PONG, which that client takes as a sign of life and
// nothing more.
const keepAliveEvery = time.Second

// keepAlive sends the legacy players their keepalive.
func (r *Room) keepAlive(now time.Time) {
	r.broadcastIn(game.Message{Type: game.ServerPong}, packet.Legacy)
	r.nextAlive = now.Add(keepAliveEvery)
}

// silent reports whether p has been silent for silence_timeout.
func (r *Room) silent(p *player, now time.Time) bool {
	return r.heeds(p) && now.Sub(p.lastSeen) >= r.cfg.SilenceTimeout
}

// heeds reports whether p is dropped when silent. A legacy player is not,
// in a match: the original client sends nothing there but the inputs of a
// player who moves, and leaves when the match ends.
func (r *Room) heeds(p *player) bool {
	return r.state != packet.Playing || p.framing != packet.Legacy
}

func (r *Room) allReady() bool {
	if len(r.players) < r.cfg.MinPlayers {
		return false
	}
	for _, p := range r.players {
		if !p.ready {
			return false
		}
	}
	return true
}

// startCountdown enters Countdown: ticks announce the whole seconds left,
// rounded up, at each whole second before the end. A zero countdown goes
// through Countdown straight to Playing, without a tick.
func (r *Room) startCountdown(now time.Time) {
	r.setState(packet.Countdown)
	r.broadcast(game.Message{Type: game.AllReady}) // legacy players only
	r.countdownEnd = now.Add(r.cfg.Countdown)
	r.ticksLeft = int(ceilSeconds(r.cfg.Countdown))
	if r.ticksLeft == 0 {
		r.play(now)
		return
	}
	r.tick()
}

func (r *Room) play(now time.Time) {
	r.setState(packet.Playing)
	r.matchEnd = now.Add(r.cfg.MatchDuration)
	r.nextAlive = now.Add(keepAliveEvery)
	r.broadcast(game.Message{Type: game.GameStart, Seconds: uint16(min(ceilSeconds(r.cfg.MatchDuration), 0xFFFF))})
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

func (r *Room) tick() {
	// A tick's byte says 255 for anything longer; the ticks are exact
	// from there on.
	r.broadcast(game.Message{Type: game.CountdownTick, Seconds: uint16(min(r.ticksLeft, 0xFF))})
	r.ticksLeft--
	r.nextTick = r.countdownEnd.Add(-time.Duration(r.ticksLeft) * time.Second)
}

// Stop ends the room on the host's request.
func (r *Room) Stop() {
	if r.state != packet.Finished {
		r.finish(game.EndStopped)
	}
}

func (r *Room) finish(why game.EndReason) {
	r.broadcast(game.Message{Type: game.GameEnd, End: why})
	clear(r.players)
	r.setState(packet.Finished)
}

func (r *Room) setState(s packet.RoomState) {
	r.state = s
	r.rep.SetState(s)
}

// Next is when Advance next has something to do; the zero time when
// nothing is due (the room has finished, or waits with nobody in it).
func (r *Room) Next() time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	switch r.state {
	case packet.Finished:
		return time.Time{}
	case packet.Countdown:
		if r.ticksLeft > 0 {
			earliest(r.nextTick)
		}
		earliest(r.countdownEnd)
	case packet.Playing:
		earliest(r.matchEnd)
		earliest(r.nextAlive)
	}
	for _, p := range r.players {
		if r.heeds(p) {
			earliest(p.lastSeen.Add(r.cfg.SilenceTimeout))
		}
	}
	return next
}

// send queues m, numbered by the room's counter.
func (r *Room) send(to netip.AddrPort, m game.Message) {
	m.Seq = r.seq
	r.seq++
	r.out = append(r.out, Datagram{to, m})
}

// answer queues m in reply to req, in req's framing. Pongs echo their
// ping's sequence (and tick), as do all legacy replies, as the original
// game's do; compact hellos and denies are numbered by the room.
func (r *Room) answer(to netip.AddrPort, req, m game.Message) {
	m.Framing = req.Framing
	if m.Type != game.ServerPong && req.Framing == packet.Compact {
		r.send(to, m)
		return
	}
	m.Seq = req.Seq
	if m.Type == game.ServerPong {
		m.Tick = req.Tick
	}
	r.out = append(r.out, Datagram{to, m})
}

// broadcast sends m to every player in slot order, so that the numbering
// is reproducible, each in its framing; a player whose framing lacks m's
// type (ALL_READY, for compact players) is skipped.
func (r *Room) broadcast(m game.Message) { r.broadcastIn(m, packet.Compact, packet.Legacy) }

// broadcastIn is broadcast to the players of the framings given only.
func (r *Room) broadcastIn(m game.Message, framings ...packet.Framing) {
	addrs := slices.SortedFunc(maps.Keys(r.players), func(a, b netip.AddrPort) int {
		return cmp.Compare(r.players[a].slot, r.players[b].slot)
	})
	for _, addr := range addrs {
		if f := r.players[addr].framing; m.Type.In(f) && slices.Contains(framings, f) {
			m.Framing = f
			r.send(addr, m)
		}
	}
}

// Package announce registers Foyer's own rooms with an upstream GG2-style
// lobby, so that browsers of that lobby list them.
//
// Every own room (Source "instance" or "exec"; rooms registered here from
// elsewhere are not passed on) is sent as a counted-form registration over
// UDP when it appears or changes, and again every Interval, as the
// upstream forgets a server 70 s after its last registration. Each room
// gets a random server ID (crypto/rand): the ID is the secret that lets
// only this lobby unregister the room. A reaped room is unregistered at
// once, and every room is unregistered at shutdown.
//
// The upstream sees the datagrams' source address as the rooms' host, so
// the announcer must run on the host the rooms' ports are reachable on.
package announce

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/lobby/internal/frontend"
	"github.com/foyerlobby/foyer/lobby/internal/tally"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// Config is the announce part of the [gg2] section of config.toml.
type Config struct {
	// Upstream is the upstream lobby's "host:port", resolved once by New.
	Upstream string
	// Lobby is the lobby ID the registrations carry.
	Lobby gg2.UUID
	// Interval is how often every room is registered again.
	Interval time.Duration
	// Game is the "game" value of rooms that name none.
	Game string
}

// DefaultConfig returns the defaults documented in config.toml; Upstream
// is empty (announcing is off).
func DefaultConfig() Config {
	return Config{
		Lobby:    gg2.GG2LobbyUUID,
		Interval: 30 * time.Second,
		Game:     "foyer",
	}
}

// Stats is a snapshot of the announcer's counters.
type Stats struct {
	// Registrations and Unregisters count datagrams sent; SendErrors
	// those the socket refused (an upstream that is down answers with
	// ICMP, seen as an error on the next send).
	Registrations, Unregisters, SendErrors uint64
	// Rooms is the rooms announced now.
	Rooms int
}

// Announcer registers rooms upstream.
type Announcer struct {
	cfg   Config
	rooms room.Table
	log   zerolog.Logger
	conn  *net.UDPConn

	registrations, unregisters, sendErrors tally.Counter

	mu      sync.Mutex
	ids     map[uint32]gg2.UUID // announced rooms' server IDs
	version uint64              // of the last snapshot synced
	buf     []byte
}

// New resolves cfg.Upstream and opens the socket registrations go out on.
func New(cfg Config, rooms room.Table, log zerolog.Logger) (*Announcer, error) {
	if cfg.Interval <= 0 {
		return nil, errors.New("announce: interval must be positive")
	}
	up, err := net.ResolveUDPAddr("udp", cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("announce: upstream %q: %w", cfg.Upstream, err)
	}
	c, err := net.DialUDP("udp", nil, up)
	if err != nil {
		return nil, fmt.Errorf("announce: upstream %q: %w", cfg.Upstream, err)
	}
	return &Announcer{cfg: cfg, rooms: rooms, conn: c, ids: make(map[uint32]gg2.UUID),
		log: log.With().Str("component", "announce").Str("upstream", cfg.Upstream).Logger()}, nil
}

// Close releases the socket of an Announcer that will not Serve (Serve
// closes it itself when it ends).
func (a *Announcer) Close() error { return a.conn.Close() }

// Stats returns the announcer's counters.
func (a *Announcer) Stats() Stats {
	a.mu.Lock()
	rooms := len(a.ids)
	a.mu.Unlock()
	return Stats{Registrations: a.registrations.Load(), Unregisters: a.unregisters.Load(),
		SendErrors: a.sendErrors.Load(), Rooms: rooms}
}

// Serve announces until ctx is done, then unregisters every room, closes
// the socket and returns. Send errors are logged as one line per
// Interval in which there were any. Serve runs once per Announcer.
func (a *Announcer) Serve(ctx context.Context) error {
	defer a.conn.Close()
	var report sync.WaitGroup
	defer report.Wait()
	report.Go(func() {
		tally.Report(ctx, a.log, a.cfg.Interval, "announce send errors", tally.Total("send_errors", &a.sendErrors))
	})
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	events := a.rooms.Watch(watchCtx)
	a.log.Info().Dur("interval", a.cfg.Interval).Msg("announcing rooms upstream")
	a.sync()
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			n := a.withdrawAll()
			a.log.Info().Int("unregistered", n).Msg("announcing stopped")
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil // ctx is ending
				continue
			}
			a.event(ev)
		case <-tick.C:
			a.sync()
		}
	}
}

// own reports whether r is a room of this Foyer rather than one
// registered here from elsewhere, and one it lists: a private room is
// joined by its code, and announced nowhere.
func own(r room.Room) bool { return r.Source.Own() && r.Public() }

// event applies one change. Events older than the last synced snapshot
// are stale (Watch may lag behind List) and ignored, or a room reaped
// meanwhile would be announced again.
func (a *Announcer) event(ev room.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ev.Version <= a.version || !own(ev.Room) {
		return
	}
	if ev.Kind == room.Reaped {
		a.withdraw(ev.Room.ID, ev.Cause)
		return
	}
	a.announce(ev.Room)
}

// sync registers every own room again and unregisters rooms announced but
// no longer listed (their reap event may have been missed).
func (a *Announcer) sync() {
	snap := a.rooms.List()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.version = snap.Version
	listed := make(map[uint32]bool, len(snap.Rooms))
	for _, r := range snap.Rooms {
		if own(r) {
			listed[r.ID] = true
			a.announce(r)
		}
	}
	for id := range a.ids {
		if !listed[id] {
			a.withdraw(id, "gone")
		}
	}
}

// announce sends r's registration; a.mu is held.
func (a *Announcer) announce(r room.Room) {
	id, known := a.ids[r.ID]
	if !known {
		if _, err := rand.Read(id[:]); err != nil {
			a.log.Error().Err(err).Msg("no random server ID")
			return
		}
	}
	reg := gg2.Registration{
		Form: gg2.Counted, ServerID: id, LobbyID: a.cfg.Lobby, Transport: gg2.UDP,
		Port: r.Port, Slots: frontend.Clamp16(r.MaxPlayers), Players: frontend.Clamp16(r.Occupied()),
		KeyValues: frontend.RoomKeys(r, a.cfg.Game),
	}
	b, err := reg.Append(a.buf[:0])
	if err != nil { // port 0: a room not yet bound has nothing to announce
		return
	}
	a.buf = b
	if !known {
		a.ids[r.ID] = id
		a.log.Info().Uint32("room", r.ID).Uint16("port", r.Port).Msg("room announced")
	}
	a.send(b, &a.registrations)
}

// withdraw sends room id's unregister; a.mu is held.
func (a *Announcer) withdraw(id uint32, cause room.Cause) {
	sid, ok := a.ids[id]
	if !ok {
		return
	}
	delete(a.ids, id)
	a.send(gg2.Unregister{ServerID: sid}.Append(a.buf[:0]), &a.unregisters)
	ev := a.log.Info()
	if cause == room.Stopped { // one summary line at shutdown instead
		ev = a.log.Debug()
	}
	ev.Uint32("room", id).Str("cause", string(cause)).Msg("room withdrawn")
}

func (a *Announcer) withdrawAll() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.ids)
	for id := range a.ids {
		a.withdraw(id, room.Stopped)
	}
	return n
}

// send writes one datagram and counts it on sent; a.mu is held.
func (a *Announcer) send(b []byte, sent *tally.Counter) {
	if _, err := a.conn.Write(b); err != nil {
		a.sendErrors.Add(1)
		a.log.Debug().Err(err).Msg("send failed")
		return
	}
	sent.Add(1)
}

// Package supervisor runs one game-instance process per room: it takes a
// UDP port from a pool, starts the instance, keeps the room table from the
// status the instance pushes, holds seats for players on their way in, and
// reaps the process whatever it does.
//
// Two other kinds of room share the table, its ids and its seats. The exec
// driver (Config.Probe) runs game servers that know nothing of Foyer as
// plain processes with the same hygiene, learning their status by asking
// for their Teeworlds server info, or not at all. Rooms registered by an
// edge (Registry) run elsewhere and have no process.
//
// One mutex guards the table, the port pool and the counters; nothing
// blocking (spawning, stopping, waiting for exits) happens under it, so a
// slow spawn never delays List or Join. Each instance has one goroutine
// blocked on its status stream and its exit; one housekeeping ticker checks
// health and seat expiry for all rooms, so idle rooms cost next to nothing.
package supervisor

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/teeinfo"
	"github.com/rs/zerolog"
)

// watchBuffer is how many events a watcher may fall behind before it
// misses some.
const watchBuffer = 256

// Supervisor spawns, tracks and reaps room instances. It implements Rooms.
type Supervisor struct {
	cfg  Config
	log  zerolog.Logger
	argv []string

	ctx    context.Context // cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // trackers, spawns in flight, background loops
	refill chan struct{}  // wakes the warm-pool loop

	mu         sync.Mutex
	closed     bool
	live       map[uint32]*room // every room: listed, warm, dying, registered
	registered map[string]*room // registered rooms by key; also in live
	warm       []*room          // ready and not handed out, oldest first
	spawning   int              // spawns in flight, counted against MaxInstances
	version    uint64
	snap       Snapshot
	snapOK     bool
	watchers   map[chan Event]struct{}
	ports      *portPool
	ids        *roomIDs
	stats      Stats
	prober     *prober // nil unless Probe is "teeworlds"
}

// room is the supervisor's record of one room; all fields are guarded by
// Supervisor.mu. A spawned room has a process; a registered room has a
// key and nothing else.
type room struct {
	row    Room
	proc   process                // nil for registered rooms
	status <-chan instance.Status // go-plugin instances: pushed status
	probe  *probeTarget           // exec rooms with probe "teeworlds"
	key    string                 // registered rooms: the registration key
	listed bool                   // handed out by Create; before that, warm or not yet entered
	seats  map[netip.AddrPort]time.Time
	// lastStatus is when the room last said it is alive; only rooms
	// that report (watched) are checked against HealthTimeout.
	lastStatus time.Time
	watched    bool
	spawnTime  time.Duration
	cause      string // why it is being stopped; "" while healthy
}

var _ Rooms = (*Supervisor)(nil)

// New validates cfg, fills its zero fields from Defaults and starts the
// supervisor's background loops (and the warm pool, if configured).
func New(cfg Config) (*Supervisor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	argv, err := commandLine(cfg)
	if err != nil {
		return nil, err
	}
	ids, err := newRoomIDs(time.Now(), cfg.IDFile)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		cfg:        cfg,
		log:        cfg.Log,
		argv:       argv,
		refill:     make(chan struct{}, 1),
		live:       make(map[uint32]*room),
		registered: make(map[string]*room),
		watchers:   make(map[chan Event]struct{}),
		ports:      newPortPool(cfg.FirstPort, cfg.LastPort, cfg.PortCooldown, cfg.PortQuarantine),
		ids:        ids,
		stats:      newStats(),
	}
	if cfg.Probe == "teeworlds" {
		if s.prober, err = newProber(probeAddrs(cfg), s.log, s.applyInfo); err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.prober != nil {
		s.prober.run(s.ctx.Done(), &s.wg)
	}
	s.wg.Add(1)
	go s.housekeep()
	if cfg.Warm > 0 {
		s.wg.Add(1)
		go s.keepWarm()
		s.wakeWarm()
	}
	return s, nil
}

// List returns the room table. The Rooms slice is shared by every caller
// holding this version and must not be modified.
func (s *Supervisor) List() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.snapOK {
		rooms := make([]Room, 0, len(s.live))
		for _, r := range s.live {
			if r.listed {
				rooms = append(rooms, r.view())
			}
		}
		slices.SortFunc(rooms, func(a, b Room) int { return cmp.Compare(a.ID, b.ID) })
		s.snap = Snapshot{Version: s.version, Rooms: rooms}
		s.snapOK = true
	}
	return s.snap
}

// Watch delivers table changes until ctx is done, then closes the channel.
// A watcher that falls watchBuffer events behind misses events (counted in
// Stats.WatchDrops); it can catch up with List.
func (s *Supervisor) Watch(ctx context.Context) <-chan Event {
	ch := make(chan Event, watchBuffer)
	s.mu.Lock()
	s.watchers[ch] = struct{}{}
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.watchers, ch)
		close(ch)
		s.mu.Unlock()
	})
	return ch
}

// Create starts a room, from the warm pool when one is ready, and holds a
// seat in it for creator. Errors wrap ErrClosed, ErrCapacity, ErrNoPorts or
// ErrSpawn.
func (s *Supervisor) Create(ctx context.Context, creator netip.AddrPort) (Room, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Room{}, ErrClosed
	}
	if i := slices.IndexFunc(s.warm, func(r *room) bool { return r.cause == "" }); i >= 0 {
		r := s.warm[i] // the ones before it are on their way out
		s.warm = slices.Delete(s.warm, i, i+1)
		s.stats.WarmHits++
		row := s.publish(r, creator)
		s.mu.Unlock()
		s.wakeWarm()
		s.log.Info().Uint32("id", row.ID).Uint16("port", row.Port).Int("pid", row.PID).Str("source", row.Source).
			Bool("warm", true).Msg("room created")
		return row, nil
	}
	if n := s.processes() + s.spawning; n >= s.cfg.MaxInstances {
		s.mu.Unlock()
		return Room{}, fmt.Errorf("%w: %d of %d instances running or starting", ErrCapacity, n, s.cfg.MaxInstances)
	}
	s.spawning++
	s.wg.Add(1)
	s.mu.Unlock()

	r, row, err := s.spawnAndRegister(ctx, &creator)
	if err != nil {
		return Room{}, err
	}
	s.log.Info().Uint32("id", row.ID).Uint16("port", row.Port).Int("pid", row.PID).Str("source", row.Source).
		Float64("spawn_ms", float64(r.spawnTime.Microseconds())/1000).Msg("room created")
	return row, nil
}

// spawnAndRegister spawns an instance for a slot the caller reserved
// (spawning and wg incremented) and enters it in live with its tracker,
// which inherits the wg count: published with a seat for creator, or into
// the warm pool when creator is nil. Under a concurrent Shutdown the new
// instance is stopped and ErrClosed returned.
func (s *Supervisor) spawnAndRegister(ctx context.Context, creator *netip.AddrPort) (*room, Room, error) {
	r, err := s.spawn(ctx)
	var row Room
	s.mu.Lock()
	s.spawning--
	if err == nil {
		s.stats.SpawnLatency.observe(r.spawnTime)
		if s.closed {
			err = ErrClosed
			r.cause = "stopped"
			r.proc.Kill() // Shutdown did not see it; it must not outlive the wait
		}
		s.live[r.row.ID] = r // the tracker reaps it in every case
		switch {
		case s.closed:
		case creator != nil:
			row = s.publish(r, *creator)
		default:
			s.warm = append(s.warm, r)
		}
		go s.track(r)
	} else {
		s.wg.Done()
	}
	s.mu.Unlock()
	if err != nil {
		return nil, Room{}, err
	}
	return r, row, nil
}

// publish lists r in the table with a seat for creator. s.mu is held.
func (s *Supervisor) publish(r *room, creator netip.AddrPort) Room {
	r.listed = true
	r.seats = map[netip.AddrPort]time.Time{creator: time.Now().Add(s.cfg.SeatTTL)}
	s.stats.Created++
	row := r.view()
	s.emit(Event{Kind: RoomCreated, Room: row})
	return row
}

// JoinNeverWaits reports that Join only touches the in-memory table under
// a short lock, never a process or the network, so a lobby may call it on
// its read loop.
func (s *Supervisor) JoinNeverWaits() bool { return true }

// Join holds a seat in room id for player. It succeeds only for a listed
// room that is Waiting or Counting down with a free place (connected
// players plus held seats below the maximum); a player already holding a
// seat there keeps it, refreshed, and takes no second one.
func (s *Supervisor) Join(ctx context.Context, id uint32, player netip.AddrPort) (Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Room{}, ErrClosed
	}
	r := s.live[id]
	if id == 0 || r == nil || !r.listed {
		return Room{}, fmt.Errorf("%w: %d", ErrNoRoom, id)
	}
	if r.cause != "" || (r.row.State != packet.Waiting && r.row.State != packet.Countdown) {
		return Room{}, fmt.Errorf("%w: room %d is %v", ErrNotJoinable, id, r.row.State)
	}
	expiry := time.Now().Add(s.cfg.SeatTTL)
	if _, ok := r.seats[player]; ok {
		r.seats[player] = expiry
		return r.view(), nil
	}
	if r.row.Players+len(r.seats) >= r.row.MaxPlayers {
		return Room{}, fmt.Errorf("%w: room %d has %d players and %d seats held of %d",
			ErrFull, id, r.row.Players, len(r.seats), r.row.MaxPlayers)
	}
	r.seats[player] = expiry
	row := r.view()
	s.emit(Event{Kind: RoomChanged, Room: row})
	// One line per seat newly held: bounded by the rooms' sizes, whatever
	// the JOIN traffic (a repeated JOIN holds no new seat).
	s.log.Info().Uint32("id", id).Stringer("player", player).Int("players", row.Players).
		Int("seats", row.Seats).Int("max_players", row.MaxPlayers).Msg("room joined")
	return row, nil
}

// processes is how many rooms have a process: every room but the
// registered ones. s.mu is held.
func (s *Supervisor) processes() int { return len(s.live) - len(s.registered) }

// view is r's table row. s.mu is held.
func (r *room) view() Room {
	row := r.row
	row.Seats = len(r.seats)
	return row
}

// emit records a change of the table and hands it to every watcher that
// keeps up. s.mu is held.
func (s *Supervisor) emit(ev Event) {
	s.version++
	s.snapOK = false
	ev.Version = s.version
	for ch := range s.watchers {
		select {
		case ch <- ev:
		default:
			s.stats.WatchDrops++
		}
	}
}

// track follows one instance from registration to exit: it applies every
// status the instance pushes and reaps it once the process is gone.
func (s *Supervisor) track(r *room) {
	defer s.wg.Done()
	status, exited := r.status, r.proc.Exited()
	for {
		select {
		case st, ok := <-status:
			if !ok {
				status = nil // the stream broke; the exit or the health check follows
				continue
			}
			s.applyStatus(r, st)
		case <-exited:
			if r.probe != nil {
				s.prober.remove(r.probe)
			}
			s.reap(r)
			if status != nil {
				for range status { // the stream waits for its reader to the end
				}
			}
			return
		}
	}
}

// applyStatus takes one report into the table. A connecting player turns
// the oldest seat held for the same IP into that player.
func (s *Supervisor) applyStatus(r *room, st instance.Status) {
	s.mu.Lock()
	r.lastStatus = time.Now()
	changed := false
	if st.Event == instance.PlayerConnected && r.seats != nil {
		var oldest netip.AddrPort
		var oldestExp time.Time
		for ep, exp := range r.seats {
			if ep.Addr().Unmap() == st.IP.Unmap() && (oldestExp.IsZero() || exp.Before(oldestExp)) {
				oldest, oldestExp = ep, exp
			}
		}
		if !oldestExp.IsZero() {
			delete(r.seats, oldest)
			changed = true
		}
	}
	if st.Players != r.row.Players {
		r.row.Players = st.Players
		changed = true
	}
	from, listed := r.row.State, r.listed
	if st.State != from {
		r.row.State = st.State
		changed = true
		if st.State == packet.Finished {
			// The instance exits by itself once it has told us; the
			// grace covers one that does not.
			r.cause = cmp.Or(r.cause, "finished")
			time.AfterFunc(s.cfg.StopGrace, r.proc.Kill)
		}
	}
	if changed && r.listed {
		s.emit(Event{Kind: RoomChanged, Room: r.view()})
	}
	s.mu.Unlock()
	if st.State != from {
		s.log.Info().Uint32("id", r.row.ID).Stringer("from", from).Stringer("to", st.State).
			Int("players", st.Players).Bool("listed", listed).Msg("room state changed")
	}
}

// applyInfo takes a probed server's info into the table: it is alive and
// Waiting, with the players and maximum it reports. Players and the
// maximum count clients, spectators included: a spectator takes a slot
// as a player does.
func (s *Supervisor) applyInfo(t *probeTarget, in teeinfo.Info) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.live[t.id]
	if r != t.room || r.cause != "" {
		return // not yet entered (the spawn applies the first reply) or leaving
	}
	r.lastStatus = time.Now()
	old, before := r.view(), r.row.Players
	setInfo(&r.row, in)
	s.fillSeats(r, before)
	if row := r.view(); row != old && r.listed {
		s.emit(Event{Kind: RoomChanged, Room: row})
	}
}

// setInfo copies what a Teeworlds server says of itself into its row. The
// counts are whatever the server wrote, so they are bounded to what the
// room list can carry.
func setInfo(row *Room, in teeinfo.Info) {
	row.State = packet.Waiting
	row.Players, row.MaxPlayers = min(max(in.NumClients, 0), math.MaxUint16), min(max(in.MaxClients, 0), math.MaxUint16)
	row.Name, row.Game, row.Map = in.Name, in.GameType, in.Map
	row.Password = in.Flags&teeinfo.FlagPassword != 0
}

// stop ends r's process: Stop with the grace period (which SIGKILLs the
// process group when the grace runs out), or a SIGKILL at once when kill is
// set. The first cause recorded is the one reported. s.mu is held; nothing
// blocks here.
func (s *Supervisor) stop(r *room, cause string, kill bool) {
	if r.cause == "" {
		r.cause = cause
	}
	if kill {
		r.proc.Kill()
	} else {
		r.proc.Stop(s.cfg.StopGrace)
	}
}

// reap removes an exited instance from the table and returns its port to
// the pool, after the cooldown.
func (s *Supervisor) reap(r *room) {
	code, sig := r.proc.ExitStatus()
	s.mu.Lock()
	delete(s.live, r.row.ID)
	if i := slices.Index(s.warm, r); i >= 0 {
		s.warm = slices.Delete(s.warm, i, i+1)
	}
	cause := r.cause
	if cause == "" {
		cause = "exited"
		if code != 0 || sig != "" {
			cause = "crashed"
		}
	}
	s.ports.release(r.row.Port, time.Now())
	s.stats.Reaped[cause]++
	if r.listed {
		s.emit(Event{Kind: RoomReaped, Room: r.view(), Cause: cause, ExitCode: code, Signal: sig})
	}
	s.mu.Unlock()
	s.log.Info().Uint32("id", r.row.ID).Uint16("port", r.row.Port).Int("pid", r.row.PID).
		Str("cause", cause).Int("exit_code", code).Str("signal", sig).Bool("listed", r.listed).Msg("room reaped")
	s.wakeWarm()
}

// housekeep is the one timer of the supervisor: it kills instances silent
// for HealthTimeout, retires warm instances past WarmMaxAge and drops
// seats whose player did not come.
func (s *Supervisor) housekeep() {
	defer s.wg.Done()
	period := min(s.cfg.HealthTimeout, s.cfg.SeatTTL, s.cfg.WarmMaxAge) / 4
	period = max(min(period, time.Second), 10*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.sweep(now)
		}
	}
}

func (s *Supervisor) sweep(now time.Time) {
	var unhealthy []Room
	s.mu.Lock()
	defer func() {
		s.mu.Unlock()
		for _, row := range unhealthy {
			s.log.Warn().Uint32("id", row.ID).Int("pid", row.PID).Dur("timeout", s.cfg.HealthTimeout).
				Msg("room unhealthy, killing")
		}
	}()
	for _, r := range s.live {
		if r.watched && r.cause == "" && now.Sub(r.lastStatus) > s.cfg.HealthTimeout {
			unhealthy = append(unhealthy, r.row)
			s.stop(r, "unhealthy", true)
		}
		if !r.listed && r.cause == "" && now.Sub(r.row.StartedAt) > s.cfg.WarmMaxAge {
			if i := slices.Index(s.warm, r); i >= 0 {
				s.warm = slices.Delete(s.warm, i, i+1)
			}
			s.stop(r, "retired", false)
			s.wakeWarm()
		}
		expired := false
		for ep, exp := range r.seats {
			if now.After(exp) {
				delete(r.seats, ep)
				expired = true
			}
		}
		if expired && r.listed {
			s.emit(Event{Kind: RoomChanged, Room: r.view()})
		}
	}
}

// wakeWarm asks the warm-pool loop to top the pool up.
func (s *Supervisor) wakeWarm() {
	if s.cfg.Warm == 0 {
		return
	}
	select {
	case s.refill <- struct{}{}:
	default:
	}
}

// keepWarm keeps Config.Warm ready instances, one spawn at a time; after a
// failed spawn it waits a second so a broken command does not spin.
func (s *Supervisor) keepWarm() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.refill:
		}
		for s.reserveWarm() {
			if _, _, err := s.spawnAndRegister(s.ctx, nil); err != nil {
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(time.Second):
				}
				s.wakeWarm()
				break
			}
		}
	}
}

// reserveWarm reserves a spawn slot when the warm pool is short and there
// is room under MaxInstances.
func (s *Supervisor) reserveWarm() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.warm) >= s.cfg.Warm || s.processes()+s.spawning >= s.cfg.MaxInstances {
		return false
	}
	s.spawning++
	s.wg.Add(1)
	return true
}

// Shutdown refuses new rooms, stops every instance (Stop, then SIGKILL of
// its process group after StopGrace) and returns once all have exited and
// the background loops have ended. When ctx ends first, the remaining
// instances are killed at once, waited for, and ctx's error is returned.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	var dropped []Room
	for _, r := range s.registered {
		dropped = append(dropped, s.dropRegistered(r, "stopped"))
	}
	for _, r := range s.live {
		s.stop(r, "stopped", false)
	}
	s.mu.Unlock()
	for _, row := range dropped {
		s.log.Info().Uint32("id", row.ID).Str("cause", "stopped").Str("source", row.Source).Msg("room reaped")
	}

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for _, r := range s.live {
		s.stop(r, "stopped", true)
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}

// Stats returns a copy of the supervisor's counters and gauges.
func (s *Supervisor) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Reaped = maps.Clone(s.stats.Reaped)
	st.SpawnLatency.Counts = slices.Clone(s.stats.SpawnLatency.Counts)
	for _, r := range s.live {
		if r.listed {
			st.Rooms++
		}
	}
	st.Registered = len(s.registered)
	st.Warm = len(s.warm)
	st.Spawning = s.spawning
	st.PortsReady, st.PortsCooling, st.PortsQuarantined, st.PortsInUse = s.ports.counts(time.Now())
	st.Version = s.version
	return st
}

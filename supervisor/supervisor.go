// Package supervisor runs one game-instance process per room: it takes a
// UDP port from a pool, starts the instance, keeps the room table from the
// status the instance pushes, holds seats for players on their way in, and
// reaps the process whatever it does.
//
// Game servers that know nothing of Foyer run with the exec driver
// (Config.Probe): each under a keeper, an instance of this executable
// whose child the server is (package instance/keeper), so every room is
// one kind of process here. Rooms registered by an edge (room.Registry)
// run elsewhere, have no process, and share the table, its ids and its
// seats.
//
// With a state directory (Config.StateDir) rooms outlive the supervisor:
// a supervisor that starts finds them there and adopts them (adopt.go),
// and one about to hand over to another process readies them for it
// (Release). The instances are the source of truth: each says who it is,
// and keeps the seats its room holds, which the supervisor sends it on
// every change.
//
// Every room runs in cgroups of its own where the host has them, bounded
// by Config.Limits and killed whole when it is reaped; where it has none,
// the supervisor is the child subreaper of what escapes the rooms'
// process groups (contain.go).
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
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// watchBuffer is how many events a watcher may fall behind before it
// misses some.
const watchBuffer = 256

// Supervisor spawns, tracks and reaps room instances. It implements room.Table.
type Supervisor struct {
	cfg   Config
	log   zerolog.Logger
	argv  []string
	tree  *cgroup.Tree // the rooms' cgroups; nil without
	usage usageCache   // guarded by its own lock

	ctx    context.Context // cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // trackers, spawns in flight, background loops
	refill chan struct{}  // wakes the warm-pool loop

	mu         sync.Mutex
	closed     bool
	live       map[uint32]*record // every room: listed, warm, dying, registered
	registered map[string]*record // registered rooms by key; also in live
	warm       []*record          // ready and not handed out, oldest first
	spawning   int                // spawns in flight, counted against MaxInstances
	version    uint64
	snap       room.Snapshot
	snapOK     bool
	watchers   room.Watchers
	ports      *portPool
	ids        *roomIDs
	dirs       *roomDirs
	stats      Stats
	released   bool      // handed over (Release): no new rooms, no health kills
	dirty      []*record // rooms whose seats their instance does not have yet

	keepWake chan struct{} // wakes the seat keeper
}

// room is the supervisor's record of one room; all fields are guarded by
// Supervisor.mu. A spawned room has a process; a registered room has a
// key and nothing else.
type record struct {
	row    room.Room
	proc   *host.Process      // nil for registered rooms
	cgroup *cgroup.Room       // its cgroups; nil without (and for registered rooms)
	status <-chan host.Status // the instance's pushed status
	key    string             // registered rooms: the registration key
	listed bool               // handed out by Create; before that, warm or not yet entered
	seats  seats              // held for players on their way in
	// lastStatus is when the room last said it is alive; only rooms
	// that report (watched) are checked against HealthTimeout, and a
	// probed room says so only with its server's details.
	lastStatus time.Time
	watched    bool
	probed     bool
	pooled     bool       // its port came from the pool and goes back to it
	dirty      bool       // in Supervisor.dirty
	keepMu     sync.Mutex // one Keep at a time to its instance, in order
	spawnTime  time.Duration
	cause      room.Cause // why it is being stopped; "" while healthy
}

// The edges answer JOIN on their read loops only for a table whose Join
// never waits; the supervisor's does not.
var (
	_ room.Table           = (*Supervisor)(nil)
	_ room.JoinNeverWaiter = (*Supervisor)(nil)
)

// New validates cfg, fills its zero fields from Defaults and starts the
// supervisor's background loops (and the warm pool, if configured). Every
// lifecycle event is logged to log, one line each.
func New(cfg Config, log zerolog.Logger) (*Supervisor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	argv, err := commandLine(cfg)
	if err != nil {
		return nil, err
	}
	dirs, err := openRoomDirs(cfg.StateDir, log)
	if err != nil {
		return nil, err
	}
	idFile := cfg.IDFile
	if idFile == "" && cfg.StateDir != "" {
		// Rooms that ended while no lobby ran cannot be adopted and
		// counted: only a mark says which ids they had.
		idFile = filepath.Join(cfg.StateDir, "ids")
	}
	tree, err := openTree(cfg, log)
	if err != nil {
		dirs.close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ids, err := newRoomIDs(time.Now(), idFile, log)
	if err != nil {
		cancel()
		if tree != nil {
			tree.Remove()
		}
		dirs.close()
		return nil, err
	}
	s := &Supervisor{
		ctx:        ctx,
		cancel:     cancel,
		cfg:        cfg,
		log:        log,
		argv:       argv,
		refill:     make(chan struct{}, 1),
		live:       make(map[uint32]*record),
		registered: make(map[string]*record),
		ports:      newPortPool(cfg.FirstPort, cfg.LastPort, cfg.PortCooldown, cfg.PortQuarantine),
		ids:        ids,
		dirs:       dirs,
		tree:       tree,
		stats:      newStats(),
		keepWake:   make(chan struct{}, 1),
	}
	if cfg.StateDir != "" {
		s.adoptAll()
		s.wg.Add(1)
		go s.keepSeats()
	}
	s.endUnadopted()
	s.wg.Go(func() { s.ids.writer(s.ctx.Done()) })
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
func (s *Supervisor) List() room.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.snapOK {
		rooms := make([]room.Room, 0, len(s.live))
		for _, r := range s.live {
			if r.listed {
				rooms = append(rooms, r.view())
			}
		}
		slices.SortFunc(rooms, func(a, b room.Room) int { return cmp.Compare(a.ID, b.ID) })
		s.snap = room.Snapshot{Version: s.version, Rooms: rooms}
		s.snapOK = true
	}
	return s.snap
}

// Watch delivers table changes until ctx is done, then closes the channel.
// A watcher that falls watchBuffer events behind misses events (counted in
// Stats.WatchDrops); it can catch up with List.
func (s *Supervisor) Watch(ctx context.Context) <-chan room.Event {
	return s.watchers.Watch(ctx, watchBuffer)
}

// Create starts a room, from the warm pool when one is ready, and holds a
// seat in it for creator. Errors wrap room.ErrClosed, room.ErrCapacity, room.ErrNoPorts or
// room.ErrSpawn.
func (s *Supervisor) Create(ctx context.Context, creator netip.AddrPort) (room.Room, error) {
	s.mu.Lock()
	if s.closed || s.released {
		s.mu.Unlock()
		return room.Room{}, room.ErrClosed
	}
	if i := slices.IndexFunc(s.warm, func(r *record) bool { return r.cause == "" }); i >= 0 {
		r := s.warm[i] // the ones before it are on their way out
		s.warm = slices.Delete(s.warm, i, i+1)
		s.stats.WarmHits++
		row := s.publish(r, creator)
		s.mu.Unlock()
		s.keepListed(r)
		s.wakeWarm()
		s.log.Info().Uint32("id", row.ID).Uint16("port", row.Port).Int("pid", row.PID).Str("source", string(row.Source)).
			Bool("warm", true).Msg("room created")
		return row, nil
	}
	if n := s.processes() + s.spawning; n >= s.cfg.MaxInstances {
		s.mu.Unlock()
		return room.Room{}, fmt.Errorf("%w: %d of %d instances running or starting", room.ErrCapacity, n, s.cfg.MaxInstances)
	}
	s.spawning++
	s.wg.Add(1)
	s.mu.Unlock()

	r, row, err := s.spawnAndRegister(ctx, &creator)
	if err != nil {
		return room.Room{}, err
	}
	s.keepListed(r)
	s.log.Info().Uint32("id", row.ID).Uint16("port", row.Port).Int("pid", row.PID).Str("source", string(row.Source)).
		Float64("spawn_ms", float64(r.spawnTime.Microseconds())/1000).Msg("room created")
	return row, nil
}

// spawnAndRegister spawns an instance for a slot the caller reserved
// (spawning and wg incremented) and enters it in live with its tracker,
// which inherits the wg count: published with a seat for creator, or into
// the warm pool when creator is nil. Under a concurrent Shutdown the new
// instance is stopped and room.ErrClosed returned.
func (s *Supervisor) spawnAndRegister(ctx context.Context, creator *netip.AddrPort) (*record, room.Room, error) {
	r, err := s.spawn(ctx)
	var row room.Room
	s.mu.Lock()
	s.spawning--
	if err == nil {
		s.stats.SpawnLatency.observe(r.spawnTime)
		if s.closed {
			err = room.ErrClosed
			r.cause = room.Stopped
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
		return nil, room.Room{}, err
	}
	return r, row, nil
}

// keepListed tells the instance of a room just handed out that it is
// listed before its creator hears of it: a lobby that adopts the room
// after a crash must list it too, and treats a room whose instance never
// heard so as warm.
func (s *Supervisor) keepListed(r *record) {
	if s.cfg.StateDir != "" {
		s.keep(r)
	}
}

// publish lists r in the table with a seat for creator. s.mu is held.
func (s *Supervisor) publish(r *record, creator netip.AddrPort) room.Room {
	r.listed = true
	r.seats.hold(creator, time.Now().Add(s.cfg.SeatTTL), false) // a CREATE proves nothing of its sender
	s.remember(r)
	s.stats.Created++
	row := r.view()
	s.emit(room.Event{Kind: room.Created, Room: row})
	return row
}

// JoinNeverWaits reports that Join only touches the in-memory table under
// a short lock, never a process or the network, so a lobby may call it on
// its read loop.
func (s *Supervisor) JoinNeverWaits() bool { return true }

// Join holds a seat in room id for player. It succeeds only for a listed
// room that is joinable (room.Room.JoinError); a player already holding a
// seat there keeps it, refreshed, and takes no second one, even in a room
// that is full.
func (s *Supervisor) Join(ctx context.Context, id uint32, player netip.AddrPort, proof room.Proof) (room.Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.released {
		return room.Room{}, room.ErrClosed
	}
	r := s.live[id]
	if id == 0 || r == nil || !r.listed {
		return room.Room{}, room.ErrNoRoom
	}
	if r.cause != "" {
		return room.Room{}, room.ErrNotJoinable // being stopped
	}
	err := r.view().JoinError()
	if err == room.ErrNotJoinable {
		return room.Room{}, err
	}
	// A player already holding a seat keeps it, refreshed, even in a room
	// that is full: its seat is one of those that fill it. A proven player
	// may take the place of a seat held for a sender that may be forged.
	proven := proof == room.SawListing
	if err != nil && !r.seats.holdsFor(player) {
		if !proven || !r.seats.dropOldestUnproven() {
			return room.Room{}, err
		}
		s.stats.SeatsDisplaced++
	}
	s.remember(r)
	if !r.seats.hold(player, time.Now().Add(s.cfg.SeatTTL), proven) {
		return r.view(), nil
	}
	s.stats.SeatsHeld++
	row := r.view()
	s.emit(room.Event{Kind: room.Changed, Room: row})
	// Seats come from remote requests: one line each at debug level only,
	// counted in Stats.SeatsHeld.
	if e := s.log.Debug(); e.Enabled() {
		e.Uint32("id", id).Stringer("player", player).Int("players", row.Players).
			Int("seats", row.Seats).Int("max_players", row.MaxPlayers).Msg("room joined")
	}
	return row, nil
}

// processes is how many rooms have a process: every room but the
// registered ones. s.mu is held.
func (s *Supervisor) processes() int { return len(s.live) - len(s.registered) }

// view is r's table row. s.mu is held.
func (r *record) view() room.Room {
	row := r.row
	row.Seats = r.seats.len()
	return row
}

// emit records a change of the table and hands it to every watcher that
// keeps up. s.mu is held.
func (s *Supervisor) emit(ev room.Event) {
	s.version++
	s.snapOK = false
	ev.Version = s.version
	s.watchers.Send(ev)
}

// track follows one instance from registration to exit: it applies every
// status the instance pushes and reaps it once the process is gone.
func (s *Supervisor) track(r *record) {
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
// the oldest seat held for the same IP into that player; a probed
// server's growing count turns the oldest seats into players (fillSeats).
// An instance that says it ends otherwise than cleanly has crashed,
// whatever state it reports with it.
func (s *Supervisor) applyStatus(r *record, st host.Status) {
	s.mu.Lock()
	if st.Details != nil || !r.probed {
		r.lastStatus = time.Now()
	}
	old, before, seats := r.view(), r.row.Players, r.seats.len()
	if st.Event == host.PlayerConnected {
		r.seats.dropOldestOf(st.IP)
	}
	r.row.Players = st.Players
	if st.Details != nil {
		setDetails(&r.row, *st.Details)
		s.fillSeats(r, before)
	}
	if e := st.Exit; e != nil && (e.Code != 0 || e.Signal != "") {
		r.cause = cmp.Or(r.cause, room.Crashed)
	}
	from, listed := r.row.State, r.listed
	if st.State != from {
		r.row.State = st.State
		if st.State == packet.Finished {
			// The instance exits by itself once it has told us; the
			// grace covers one that does not.
			r.cause = cmp.Or(r.cause, room.Finished)
			time.AfterFunc(s.cfg.StopGrace, r.proc.Kill)
		}
	}
	if r.seats.len() != seats {
		s.remember(r)
	}
	if row := r.view(); row != old && r.listed {
		s.emit(room.Event{Kind: room.Changed, Room: row})
	}
	s.mu.Unlock()
	if st.State != from {
		// Players move a room between Waiting and Countdown as often as
		// they like (ready, leave, join): one line each at debug level.
		// The start and the end of a match come once per room.
		ev := s.log.Debug()
		if st.State == packet.Playing || st.State == packet.Finished {
			ev = s.log.Info()
		}
		ev.Uint32("id", r.row.ID).Stringer("from", from).Stringer("to", st.State).
			Int("players", st.Players).Bool("listed", listed).Bool("adopted", r.row.Adopted).Msg("room state changed")
	}
}

// setDetails copies what a probed server says of itself into its row.
func setDetails(row *room.Room, d host.Details) {
	row.MaxPlayers = d.MaxPlayers
	row.Name, row.Game, row.Map, row.Password = d.Name, d.Game, d.Map, d.Password
}

// stop ends r's process: Stop with the grace period (which SIGKILLs the
// process group when the grace runs out), or a SIGKILL at once when kill is
// set. The first cause recorded is the one reported. s.mu is held; nothing
// blocks here.
func (s *Supervisor) stop(r *record, cause room.Cause, kill bool) {
	if r.cause == "" {
		r.cause = cause
	}
	if kill {
		r.proc.Kill()
	} else {
		r.proc.Stop(s.cfg.StopGrace)
	}
}

// reap kills what is left of an exited instance's room, removes it from
// the table and returns its port to the pool, after the cooldown.
func (s *Supervisor) reap(r *record) {
	code, sig := r.proc.ExitStatus()
	ooms := s.end(r.row.ID, r.cgroup)
	s.mu.Lock()
	delete(s.live, r.row.ID)
	if i := slices.Index(s.warm, r); i >= 0 {
		s.warm = slices.Delete(s.warm, i, i+1)
	}
	cause := r.cause
	switch {
	case ooms > 0:
		// Whatever else the room's end was taken for (a crash, a
		// silence), the limit is why.
		cause = room.OOM
	case cause == "":
		cause = room.Exited
		if code != 0 || sig != "" {
			cause = room.Crashed
		}
	}
	if r.pooled {
		s.ports.release(r.row.Port, time.Now())
	}
	s.stats.Reaped[cause]++
	if r.listed {
		s.emit(room.Event{Kind: room.Reaped, Room: r.view(), Cause: cause, ExitCode: code, Signal: sig})
	}
	s.mu.Unlock()
	s.dirs.forwardLog(r.row.ID, s.log)
	s.dirs.remove(r.row.ID)
	if ooms > 0 {
		s.log.Warn().Uint32("id", r.row.ID).Int64("oom_kills", ooms).Int64("memory_max", s.cfg.Limits.MemoryMax).
			Msg("room killed by the OOM killer at its memory_max")
	}
	s.log.Info().Uint32("id", r.row.ID).Uint16("port", r.row.Port).Int("pid", r.row.PID).
		Str("cause", string(cause)).Int("exit_code", code).Str("signal", sig).Bool("listed", r.listed).
		Bool("adopted", r.row.Adopted).Msg("room reaped")
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
	var unhealthy []room.Room
	s.mu.Lock()
	defer func() {
		s.mu.Unlock()
		for _, row := range unhealthy {
			s.log.Warn().Uint32("id", row.ID).Int("pid", row.PID).Dur("timeout", s.cfg.HealthTimeout).
				Msg("room unhealthy, killing")
		}
	}()
	for _, r := range s.live {
		if r.watched && r.cause == "" && !s.released && now.Sub(r.lastStatus) > s.cfg.HealthTimeout {
			unhealthy = append(unhealthy, r.row)
			s.stop(r, room.Unhealthy, true)
		}
		if !r.listed && r.cause == "" && now.Sub(r.row.StartedAt) > s.cfg.WarmMaxAge {
			if i := slices.Index(s.warm, r); i >= 0 {
				s.warm = slices.Delete(s.warm, i, i+1)
			}
			s.stop(r, room.Retired, false)
			s.wakeWarm()
		}
		if r.seats.expire(now) > 0 && r.listed {
			s.emit(room.Event{Kind: room.Changed, Room: r.view()})
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
	if s.closed || s.released || len(s.warm) >= s.cfg.Warm || s.processes()+s.spawning >= s.cfg.MaxInstances {
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
	var dropped []room.Room
	for _, r := range s.registered {
		dropped = append(dropped, s.dropRegistered(r, room.Stopped))
	}
	for _, r := range s.live {
		s.stop(r, room.Stopped, false)
	}
	s.mu.Unlock()
	for _, row := range dropped {
		s.log.Info().Uint32("id", row.ID).Str("cause", string(room.Stopped)).Str("source", string(row.Source)).Msg("room reaped")
	}

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.closeTree()
		s.dirs.close()
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for _, r := range s.live {
		s.stop(r, room.Stopped, true)
	}
	s.mu.Unlock()
	<-done
	s.closeTree()
	s.dirs.close()
	return ctx.Err()
}

// Stats returns a copy of the supervisor's counters and gauges.
func (s *Supervisor) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Reaped = maps.Clone(s.stats.Reaped)
	st.WatchDrops = s.watchers.Drops()
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

// Package supervisor runs one game-instance process per room: it takes a
// UDP port from a pool, starts the instance, takes the status the instance
// pushes into the room table (package roomtable), and reaps the process
// whatever it does. The table, which the supervisor makes and which every
// edge lists and joins through, owns the rooms, their seats and ids, and
// the rooms that edges registered; the supervisor is its Spawner and
// owns what the table knows nothing of: processes, ports, directories and
// cgroups, and the warm pool.
//
// Game servers that know nothing of Foyer run with the exec driver
// (Config.Probe): each under a keeper, an instance of this executable
// whose child the server is (package instance/keeper), so every room is
// one kind of process here.
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
// One mutex guards the processes, the warm pool, the port pool and the
// counters; the supervisor may call the table while holding it, the table
// never calls back under its own. Nothing blocking (spawning, stopping,
// waiting for exits) happens under either, so a slow spawn never delays
// List or Join. Each instance has one goroutine blocked on its status
// stream and its exit; one housekeeping ticker checks health and seat
// expiry for all rooms, so idle rooms cost next to nothing.
package supervisor

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/nftdoor"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// Supervisor spawns, tracks and reaps room instances behind its room
// table (Table). It is the table's roomtable.Spawner.
type Supervisor struct {
	cfg   Config
	log   zerolog.Logger
	argv  []string
	tree  *cgroup.Tree // the rooms' cgroups; nil without
	usage usageCache   // guarded by its own lock
	table *roomtable.Table

	door *nftdoor.Door // the exec rooms' door (door.go); nil without

	ctx    context.Context // cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // trackers, spawns in flight, background loops
	refill chan struct{}  // wakes the warm-pool loop

	mu       sync.Mutex
	closed   bool
	live     map[uint32]*record // every room with a process: listed, warm, dying
	warm     []*record          // ready and not handed out, oldest first
	spawning int                // spawns in flight, counted against MaxInstances
	ports    *portPool
	dirs     *roomDirs
	stats    Stats
	released bool // handed over (Release): no new rooms, no health kills
	draining bool // Drain: no new rooms; those that run play on
	// proven is set while the last instance start that ended went well:
	// only then is a room handed out while its instance starts (begin),
	// so that a room program that cannot start fails the creates.
	proven bool

	dirtyMu  sync.Mutex          // a leaf lock: the table's hook takes it
	dirty    map[uint32]struct{} // rooms whose seats their instance does not have yet
	lazy     map[uint32]struct{} // rooms whose seats were only refreshed since
	keepWake chan struct{}       // wakes the seat keeper
}

// record is the supervisor's record of one room's process; all fields but
// keepMu are guarded by Supervisor.mu. row is the room as it was entered in
// the table (id, port, pid, source, start); the table has it as it is now.
type record struct {
	row    room.Room
	proc   *host.Process
	cgroup *cgroup.Room       // its cgroups; nil without
	status <-chan host.Status // the instance's pushed status
	// lastStatus is when the room last said it is alive; only rooms
	// that report (watched) are checked against HealthTimeout, and a
	// probed room says so only with its server's details.
	lastStatus time.Time
	watched    bool
	probed     bool
	pooled     bool       // its port came from the pool and goes back to it
	keepMu     sync.Mutex // one Keep at a time to its instance, in order
	spawnTime  time.Duration
	phases     spawnPhases // where spawnTime went
	cause      room.Cause  // why it is being stopped; "" while healthy
	// handedOut is when the room was listed (zero while warm); begun is
	// set once its match began. Only rooms whose game reports its state
	// (not a probed or kept server's) are held to MaxWaiting.
	handedOut time.Time
	begun     bool
	// emptySince is when a sweep first saw the room handed out with no
	// player and no seat; zero while someone is in it.
	emptySince time.Time
	refused    uint64 // datagrams its door turned away, as it last said
	// booting is set while the instance of a room handed out as it
	// started (begin) is still starting; bootDone ends its start's
	// context once it is over (see boot).
	booting  bool
	bootDone func()
	warden   *warden // its warden, launched by boot; nil without
}

var _ roomtable.Spawner = (*Supervisor)(nil)

// New checks cfg (start from DefaultConfig), makes the room table and
// starts the supervisor's background loops (and the warm pool, if
// configured). Every lifecycle event is logged to log, one line each.
func New(cfg Config, log zerolog.Logger) (*Supervisor, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	argv, err := commandLine(cfg)
	if err != nil {
		return nil, err
	}
	noteRoomProgram(cfg, log)
	dirs, err := openRoomDirs(cfg, log)
	if err != nil {
		return nil, err
	}
	if data := dataPath(cfg); data != "" {
		if err := os.MkdirAll(data, 0o700); err != nil {
			dirs.close()
			return nil, fmt.Errorf("supervisor: data_dir: %w", err)
		}
		log.Info().Str("dir", data).Msg("game servers keep their files in a data directory")
	}
	tree, err := openTree(cfg, log)
	if err != nil {
		dirs.close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{
		ctx:      ctx,
		cancel:   cancel,
		cfg:      cfg,
		log:      log,
		argv:     argv,
		refill:   make(chan struct{}, 1),
		live:     make(map[uint32]*record),
		ports:    newPortPool(cfg.FirstPort, cfg.LastPort, cfg.PortCooldown, cfg.PortQuarantine),
		dirs:     dirs,
		tree:     tree,
		stats:    newStats(),
		dirty:    make(map[uint32]struct{}),
		lazy:     make(map[uint32]struct{}),
		keepWake: make(chan struct{}, 1),
	}
	tc := roomtable.Config{SeatTTL: cfg.SeatTTL, IDFile: cfg.IDFile, IDs: cfg.IDs,
		SeatsPerAddress: cfg.SeatsPerAddress, RoomsPerNetwork: cfg.RoomsPerNetwork,
		ReconnectGrace: cfg.ReconnectGrace, CodeTaken: cfg.CodeTaken}
	if tc.IDFile == "" && cfg.StateDir != "" {
		// Rooms that ended while no lobby ran cannot be adopted and
		// counted: only a mark says which ids they had.
		tc.IDFile = filepath.Join(cfg.StateDir, "ids")
	}
	tc.SeatsChanged = s.remember // every room's door admits by its seats
	if s.table, err = roomtable.New(tc, s, log); err != nil {
		cancel()
		if tree != nil {
			tree.Remove()
		}
		dirs.close()
		return nil, err
	}
	s.openDoor()
	if cfg.StateDir != "" {
		s.adoptAll()
	}
	s.reconcileDoor()
	s.wg.Add(1)
	go s.keepSeats()
	s.endUnadopted()
	s.wg.Add(1)
	go s.housekeep()
	if cfg.Warm > 0 {
		s.wg.Add(1)
		go s.keepWarm()
		s.wakeWarm()
	}
	return s, nil
}

// Table is the room table whose rooms the supervisor runs: what every edge
// lists, creates and joins through, and registers rooms in.
func (s *Supervisor) Table() *roomtable.Table { return s.table }

// Spawn hands out a room for creator, from the warm pool when one is
// ready, for the table's Create. Errors wrap room.ErrClosed,
// room.ErrDraining, room.ErrCapacity, room.ErrNoPorts or room.ErrSpawn.
func (s *Supervisor) Spawn(ctx context.Context, creator netip.AddrPort, h roomtable.Handout) (room.Room, error) {
	for {
		s.mu.Lock()
		if s.closed || s.released {
			s.mu.Unlock()
			return room.Room{}, room.ErrClosed
		}
		if s.draining {
			s.mu.Unlock()
			return room.Room{}, room.ErrDraining
		}
		i := slices.IndexFunc(s.warm, func(r *record) bool { return r.cause == "" })
		if i < 0 {
			break
		}
		r := s.warm[i] // the ones before it are on their way out
		s.warm = slices.Delete(s.warm, i, i+1)
		s.mu.Unlock()
		row, ok := s.table.Hand(r.row.ID, creator, h)
		if !ok {
			continue // it ended meanwhile
		}
		s.mu.Lock()
		s.stats.WarmHits++
		r.handedOut = time.Now()
		s.mu.Unlock()
		s.keepListed(r)
		s.wakeWarm()
		s.log.Info().Uint32("id", row.ID).Uint16("port", row.Port).Int("pid", row.PID).Str("source", string(row.Source)).
			Bool("warm", true).Str("log", s.dirs.logPath(row.ID)).Msg("room created")
		return row, nil
	}
	if n := s.processes() + s.spawning; n >= s.cfg.MaxInstances {
		s.mu.Unlock()
		return room.Room{}, fmt.Errorf("%w: %d of %d instances running or starting", room.ErrCapacity, n, s.cfg.MaxInstances)
	}
	s.spawning++
	s.wg.Add(1)
	s.mu.Unlock()

	r, err := s.spawnAndEnter(ctx, false)
	if err != nil {
		return room.Room{}, err
	}
	row, ok := s.table.Hand(r.row.ID, creator, h)
	if !ok {
		return room.Room{}, room.ErrClosed // the table closed, or the room ended, meanwhile
	}
	s.mu.Lock()
	r.handedOut = time.Now()
	s.mu.Unlock()
	s.keepListed(r)
	e := s.log.Info().Uint32("id", row.ID).Uint16("port", row.Port).Int("pid", row.PID).Str("source", string(row.Source)).
		Float64("spawn_ms", ms(r.spawnTime)).Float64("prep_ms", ms(r.phases.prep)).Float64("fork_ms", ms(r.phases.launch.Fork))
	if r.bootDone != nil {
		e = e.Bool("starting", true) // the rest is in its "room ready" line
	} else {
		e = afterFork(e, r.phases.launch, r.phases.ready)
	}
	e.Str("log", s.dirs.logPath(row.ID)).Msg("room created")
	return row, nil
}

// spawnAndEnter spawns an instance for a slot the caller reserved
// (spawning and wg incremented), enters it in the table, kept ready, and
// in live with its tracker, which inherits the wg count. The caller hands
// it out (Table.Hand), or it joins the warm pool when warm is set. Under a
// concurrent Shutdown the new instance is stopped and room.ErrClosed
// returned.
func (s *Supervisor) spawnAndEnter(ctx context.Context, warm bool) (*record, error) {
	s.mu.Lock()
	// Where rooms outlive the lobby, the hand-out waits for the
	// instance to hold the creator's seat (keepListed): nothing to gain.
	early := !warm && s.proven && s.cfg.StateDir == ""
	s.mu.Unlock()
	r, err := s.spawn(ctx, early)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spawning--
	if err != nil {
		s.wg.Done()
		return nil, err
	}
	if !r.booting { // a start still under way is counted once over (boot)
		s.stats.SpawnLatency.observe(r.spawnTime)
	}
	s.table.Enter(r.row, false, nil, nil)
	if s.closed {
		err = room.ErrClosed
		s.stop(r, room.Stopped, true) // Shutdown did not see it; it must not outlive the wait
	}
	s.live[r.row.ID] = r // the tracker reaps it in every case
	if warm && err == nil {
		s.warm = append(s.warm, r)
	}
	go s.track(r)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// keepListed makes a room just handed out wait, where it must, until its
// instance holds its creator's seat and knows it is listed. Table.Hand
// has the seat sent in any case (SeatsChanged: keepSeats sends it at
// once), so a room of the SDK does not wait: its door keeps the first
// datagrams of a player whose seat is on its way (knocks), as for a
// JOIN's, and the creator hears of the room a round trip to an idle
// process sooner. Two must wait. Where rooms outlive the lobby (a state
// directory), a lobby that adopts the room after a crash lists it, with
// the creator's seat, only if its instance heard so (it treats one that
// never did as warm). An exec room's door is this host's firewall, which
// keeps nothing it turns away.
func (s *Supervisor) keepListed(r *record) {
	if r.row.Source == room.Exec || s.cfg.StateDir != "" {
		s.keep(r)
	}
}

// processes is how many rooms have a process. s.mu is held.
func (s *Supervisor) processes() int { return len(s.live) }

// track follows one instance from registration to exit: it applies every
// status the instance pushes and reaps it once the process is gone.
func (s *Supervisor) track(r *record) {
	defer s.wg.Done()
	if r.bootDone != nil {
		s.boot(r)
	}
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

// applyStatus takes one report into the table (a connecting player takes
// up the oldest seat held from its IP; a probed server's growing count
// takes up the oldest seats) and into the room's health. An instance that
// says it ends otherwise than cleanly has crashed, whatever state it
// reports with it.
func (s *Supervisor) applyStatus(r *record, st host.Status) {
	rep := roomtable.Report{State: st.State, Players: st.Players, Meta: st.Meta}
	switch st.Event {
	case host.PlayerConnected:
		rep.Connected, rep.ConnectedSeat = st.IP, st.Seat
	case host.PlayerDisconnected:
		rep.Away, rep.AwayFrom = st.Seat, st.Addr
	}
	if d := st.Details; d != nil {
		rep.Details = &roomtable.Details{MaxPlayers: d.MaxPlayers, Name: d.Name, Game: d.Game, Map: d.Map, Password: d.Password}
	}
	s.mu.Lock()
	from, row, _ := s.table.Report(r.row.ID, rep)
	if st.Details != nil || !r.probed {
		r.lastStatus = time.Now()
	}
	r.refused = max(r.refused, st.DoorRefused)
	if e := st.Exit; e != nil && (e.Code != 0 || e.Signal != "") {
		s.setCause(r, room.Crashed)
	}
	r.begun = r.begun || st.State == packet.Playing || st.State == packet.Finished
	if st.State != from && st.State == packet.Finished {
		// The instance exits by itself once it has told us; the grace
		// covers one that does not.
		s.setCause(r, room.Finished)
		time.AfterFunc(s.cfg.StopGrace, r.proc.Kill)
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
			Int("players", st.Players).Bool("listed", row.ID != 0).Bool("adopted", r.row.Adopted).Msg("room state changed")
	}
}

// setCause records why r ends, if nothing did before: the first cause is
// the one reported, and no one joins the room from now on. s.mu is held.
func (s *Supervisor) setCause(r *record, cause room.Cause) {
	if r.cause == "" {
		r.cause = cause
		s.table.Stopping(r.row.ID)
	}
}

// stop ends r's process: Stop with the grace period (which SIGKILLs the
// process group when the grace runs out), or a SIGKILL at once when kill is
// set. s.mu is held; nothing blocks here.
func (s *Supervisor) stop(r *record, cause room.Cause, kill bool) {
	s.setCause(r, cause)
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
	s.closeDoor(r)
	// Kept while the room is still live, so that RoomLog finds the log,
	// whole, in one place or the other.
	kept := s.dirs.keep(r.row.ID)
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
	s.stats.DoorRefused += r.refused
	// The room leaves the listing as its capacity comes free.
	_, listed, _ := s.table.Remove(r.row.ID, cause, code, sig)
	s.mu.Unlock()
	s.dirs.remove(r.row.ID)
	if ooms > 0 {
		s.log.Warn().Uint32("id", r.row.ID).Int64("oom_kills", ooms).Int64("memory_max", s.cfg.Limits.MemoryMax).
			Msg("room killed by the OOM killer at its memory_max")
	}
	s.log.Info().Uint32("id", r.row.ID).Uint16("port", r.row.Port).Int("pid", r.row.PID).
		Str("cause", string(cause)).Int("exit_code", code).Str("signal", sig).Bool("listed", listed).
		Bool("adopted", r.row.Adopted).Str("log", kept).Msg("room reaped")
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
	told := summary{at: time.Now()}
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.sweep(now)
			told = s.summarize(told, now)
		}
	}
}

// summaryInterval is how often what the rooms' doors turned away is
// logged, when they turned anything away: refusals come from the network,
// one line per datagram would be the attacker's to write.
const summaryInterval = 10 * time.Second

// summary is what the last summary line said.
type summary struct {
	at                 time.Time
	refused, overQuota uint64
}

// summarize logs, at most every summaryInterval, how many datagrams the
// rooms' doors turned away and JOINs went over their address's quota
// since the last line, if any did.
func (s *Supervisor) summarize(last summary, now time.Time) summary {
	if now.Sub(last.at) < summaryInterval {
		return last
	}
	st := s.Stats()
	next := summary{at: now, refused: st.DoorRefused, overQuota: st.SeatsOverQuota}
	if next.refused > last.refused || next.overQuota > last.overQuota {
		s.log.Info().Uint64("door_refused", next.refused-last.refused).Uint64("seats_over_quota", next.overQuota-last.overQuota).
			Dur("in", now.Sub(last.at).Round(time.Second)).Msg("rooms kept out the unseated")
	}
	return next
}

// sweep ends what time alone ends: rooms silent past HealthTimeout, rooms
// nobody came to (abandoned), rooms whose match did not begin within
// MaxWaiting, rooms empty for EmptyTimeout (idle), rooms older than
// MaxLifetime, and warm rooms past WarmMaxAge.
func (s *Supervisor) sweep(now time.Time) {
	var unhealthy []*record
	var ended []room.Event // the room and why it ends, for the log
	abandoned := s.table.Expire(now)
	snap := s.table.List()
	s.mu.Lock()
	end := func(r *record, cause room.Cause) {
		ended = append(ended, room.Event{Room: r.row, Cause: cause})
		s.stop(r, cause, false)
	}
	for _, r := range s.live {
		switch {
		case r.cause != "" || s.released || r.booting: // a start has its own deadline
		case r.watched && now.Sub(r.lastStatus) > s.cfg.HealthTimeout:
			unhealthy = append(unhealthy, r)
			s.stop(r, room.Unhealthy, true)
		case r.reportsState() && !r.handedOut.IsZero() && !r.begun && now.Sub(r.handedOut) > s.cfg.MaxWaiting:
			end(r, room.WaitedOut)
		case s.cfg.MaxLifetime > 0 && !r.handedOut.IsZero() && now.Sub(r.row.StartedAt) >= s.cfg.MaxLifetime:
			end(r, room.Lifetime)
		}
	}
	for _, id := range abandoned {
		// A room without status cannot say its creator came: only the
		// rooms that report their players are held to it.
		if r := s.live[id]; r != nil && r.watched && r.cause == "" && !s.released {
			end(r, room.Abandoned)
		}
	}
	for _, row := range snap.Rooms {
		// Only a room that reports its players can be seen empty.
		r := s.live[row.ID]
		if r == nil || !r.watched || r.cause != "" || s.released || r.handedOut.IsZero() {
			continue
		}
		switch {
		case row.Occupied() > 0:
			r.emptySince = time.Time{}
		case r.emptySince.IsZero():
			r.emptySince = now
		case now.Sub(r.emptySince) >= s.cfg.EmptyTimeout:
			end(r, room.Idle)
		}
	}
	for _, r := range slices.Clone(s.warm) {
		if r.cause == "" && now.Sub(r.row.StartedAt) > s.cfg.WarmMaxAge {
			s.retire(r)
		}
	}
	s.mu.Unlock()
	for _, r := range unhealthy {
		s.log.Warn().Uint32("id", r.row.ID).Int("pid", r.row.PID).Dur("timeout", s.cfg.HealthTimeout).
			Msg("room unhealthy, killing")
	}
	for _, ev := range ended {
		s.log.Info().Uint32("id", ev.Room.ID).Int("pid", ev.Room.PID).Str("cause", string(ev.Cause)).Msg("room stopping")
	}
}

// retire stops warm room r, which leaves the warm pool. s.mu is held.
func (s *Supervisor) retire(r *record) {
	s.warm = slices.DeleteFunc(s.warm, func(w *record) bool { return w == r })
	s.stop(r, room.Retired, false)
	s.wakeWarm()
}

// StopRoom stops room id for an operator: the game is asked to stop and
// gets StopGrace before its room is killed whole; the room is reaped with
// the cause "operator". Errors: room.ErrNoRoom for a room with no process
// here (none, or one another host or a registration stands for).
// Stopping a room already on its way out does nothing more.
func (s *Supervisor) StopRoom(id uint32) error {
	s.mu.Lock()
	r := s.live[id]
	if r == nil || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%w: room %d has no process on this host", room.ErrNoRoom, id)
	}
	first := r.cause == ""
	if first {
		s.warm = slices.DeleteFunc(s.warm, func(w *record) bool { return w == r })
		s.stop(r, room.Operator, false)
	}
	s.mu.Unlock()
	if first {
		s.log.Info().Uint32("id", id).Int("pid", r.row.PID).Str("cause", string(room.Operator)).
			Dur("grace", s.cfg.StopGrace).Msg("room stopping")
	}
	return nil
}

// Drain, on, makes this host start no new room (Spawn refuses with
// room.ErrDraining, Capacity is 0, so a cluster places CREATEs on other
// hosts) while the rooms that run play on, until they end; the warm
// rooms are retired. Off, the host takes rooms again.
func (s *Supervisor) Drain(on bool) {
	s.mu.Lock()
	was := s.draining
	s.draining = on
	if on {
		for _, r := range slices.Clone(s.warm) {
			if r.cause == "" {
				s.retire(r)
			}
		}
	}
	left := len(s.live) - len(s.warm)
	s.mu.Unlock()
	if !on {
		s.wakeWarm()
	}
	if was != on {
		s.log.Info().Bool("draining", on).Int("rooms", left).Msg("drain")
	}
}

// reportsState reports whether r's game says when its match begins: a
// game built on the SDK, not a kept server. s.mu is held.
func (r *record) reportsState() bool { return r.watched && !r.probed && r.row.Source == room.Instance }

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

// refillDelay is how long the warm pool waits, once woken, before it
// starts instances: the create that took a warm room and woke it is then
// answered before a new instance's start takes the host's CPU from it.
// On a busy host that halves the create's latency as its client sees it
// (tests BenchmarkCreateFromClient/warm), and the pool is full again
// that much later.
const refillDelay = 2 * time.Millisecond

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
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(refillDelay):
		}
		for s.reserveWarm() {
			if _, err := s.spawnAndEnter(s.ctx, true); err != nil {
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
	if s.closed || s.released || s.draining || len(s.warm) >= s.cfg.Warm || s.processes()+s.spawning >= s.cfg.MaxInstances {
		return false
	}
	s.spawning++
	s.wg.Add(1)
	return true
}

// RoomSize is the places of the rooms Spawn starts: max_players (a
// foreign server may say otherwise once it runs).
func (s *Supervisor) RoomSize() int { return s.cfg.MaxPlayers }

// Capacity is how many rooms Spawn could hand out now: the warm rooms
// ready, plus the instances MaxInstances still allows for which a port is
// ready.
func (s *Supervisor) Capacity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.released || s.draining {
		return 0
	}
	ready := 0
	for _, r := range s.warm {
		if r.cause == "" {
			ready++
		}
	}
	free := max(s.cfg.MaxInstances-s.processes()-s.spawning, 0)
	ports, _, _, _ := s.ports.counts(time.Now())
	return ready + min(free, ports)
}

// Shutdown refuses new rooms, closes the table (its registered rooms go),
// stops every instance (Stop, then SIGKILL of its process group after
// StopGrace) and returns once all have exited and the background loops
// have ended. When ctx ends first, the remaining instances are killed at
// once, waited for, and ctx's error is returned.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	for _, r := range s.live {
		s.stop(r, room.Stopped, false)
	}
	s.mu.Unlock()
	s.table.Close()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for _, r := range s.live {
			s.stop(r, room.Stopped, true)
		}
		s.mu.Unlock()
		<-done
		err = ctx.Err()
	}
	s.closeTree()
	s.removeDoor()
	s.dirs.close()
	return err
}

// Stats returns a copy of the supervisor's counters and gauges, with its
// table's.
func (s *Supervisor) Stats() Stats {
	ts := s.table.Stats()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.SpawnLatency.Counts = slices.Clone(s.stats.SpawnLatency.Counts)
	st.Version, st.Rooms, st.Registered = ts.Version, ts.Rooms, ts.Registered
	st.Created, st.SeatsHeld, st.SeatsDisplaced, st.SeatsOverQuota = ts.Created, ts.SeatsHeld, ts.SeatsDisplaced, ts.SeatsOverQuota
	for _, r := range s.live {
		st.DoorRefused += r.refused
	}
	st.Reaped, st.WatchDrops = ts.Reaped, ts.WatchDrops
	st.Warm = len(s.warm)
	st.Spawning = s.spawning
	st.Draining = s.draining
	st.Live = len(s.live)
	st.PortsReady, st.PortsCooling, st.PortsQuarantined, st.PortsInUse = s.ports.counts(time.Now())
	return st
}

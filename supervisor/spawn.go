package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/keeper"
	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/internal/udpsock"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// maxPortAttempts bounds how many ports one create tries when instances
// report their port taken, so a pool full of squatted ports fails fast.
const maxPortAttempts = 8

// maxRunAttempts bounds how many ports one create tries when a kept
// server exits before it is ready: once may be its port, three times is
// the server.
const maxRunAttempts = 3

// commandLine returns the argv of one instance: Config.Command, or the
// instance subcommand of RoomProgram (or of this executable, see
// roomProgram); for the exec driver, the keeper (Config.Keeper, or that
// subcommand) with Command as its server.
func commandLine(cfg Config) ([]string, error) {
	if len(cfg.Command) > 0 && cfg.Probe == "" {
		return cfg.Command, nil
	}
	prefix := cfg.Keeper
	if len(prefix) == 0 {
		var err error
		if prefix, _, err = roomProgram(); err != nil {
			return nil, err
		}
	}
	if cfg.Probe == "" {
		return prefix, nil
	}
	return append(slices.Clip(prefix), keeper.Args(keeper.Config{Command: cfg.Command, Probe: cfg.Probe, Data: dataPath(cfg)})...), nil
}

// dataPath is the data directory of cfg's server command, DataDir/KEY,
// KEY the first 16 hex digits of the SHA-256 of the command's arguments:
// the rooms of one command share it, those of another command do not.
// It is "" without DataDir or a foreign server.
func dataPath(cfg Config) string {
	if cfg.DataDir == "" || cfg.Probe == "" {
		return ""
	}
	h := sha256.New()
	for _, a := range cfg.Command {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return filepath.Join(cfg.DataDir, hex.EncodeToString(h.Sum(nil))[:16])
}

// spawn starts one instance on a free port and waits until its game is
// ready or, with early, where the supervisor binds the port (begin),
// until its process is forked. A port that cannot be bound is quarantined
// and another is tried, invisibly to the caller. Errors wrap
// room.ErrNoPorts or room.ErrSpawn.
func (s *Supervisor) spawn(ctx context.Context, early bool) (*record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SpawnTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // Shutdown aborts spawns in flight
	defer stop()

	t0 := time.Now()
	id := s.table.NewID()
	// The room's cgroups are made while its directory is (and its user
	// chosen, which reads every process's ids): neither waits for the
	// other.
	var cg *cgroup.Room
	var cgErr error
	made := make(chan struct{})
	go func() {
		defer close(made)
		cg, cgErr = s.roomCgroup(id)
	}()
	dir, uid, err := s.dirs.make(id)
	<-made
	switch {
	case err != nil:
		if cg != nil {
			_ = cg.Remove()
		}
		return nil, s.spawnFailed(id, 0, 1, fmt.Errorf("%w: room directory: %v", room.ErrSpawn, err))
	case cgErr != nil:
		s.dirs.remove(id)
		return nil, s.spawnFailed(id, 0, 1, fmt.Errorf("%w: %v", room.ErrSpawn, cgErr))
	}
	prepped := time.Now()
	r, err := s.spawnInstance(ctx, id, dir, uid, cg, t0, early)
	if err != nil {
		s.end(id, cg) // the instance is gone; what it started may not be
		s.dirs.remove(id)
		return nil, err
	}
	r.cgroup = cg
	r.phases.prep = prepped.Sub(t0)
	// No room is announced under an id a crash could hand out again; a
	// mark that cannot be written in time is logged and the room goes
	// ahead.
	if err := s.table.AwaitID(ctx, id); err != nil {
		s.log.Warn().Uint32("id", id).Msg("room id not yet covered by the id file")
	}
	s.shutDoor(r)
	return r, nil
}

// spawnInstance starts an instance of the go-plugin room (or of the
// keeper of a foreign server) in dir and the cgroups cg (if any), as the
// room's user uid (-1: this process's), with the room's environment, as
// spawn says.
func (s *Supervisor) spawnInstance(ctx context.Context, id uint32, dir string, uid int, cg *cgroup.Room, t0 time.Time, early bool) (*record, error) {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = roomEnv(s.cfg, dir)
	lc := host.LaunchConfig{
		Cmd:          cmd,
		StartTimeout: s.cfg.SpawnTimeout,
		Log:          s.log,
		StartProcess: startIn(cg),
		Dir:          dir,
	}
	var w *warden // beside a room run as its user, in cgroups
	if uid >= 0 {
		program, err := roomuser.Run(cmd, uid)
		if err != nil {
			return nil, s.spawnFailed(id, 0, 1, fmt.Errorf("%w: %v", room.ErrSpawn, err))
		}
		defer program.Close() // the child has its own once started
		if cg != nil {
			w = &warden{s: s, cg: cg, later: early && s.passSocket()}
			lc.StartProcess = w.start
		}
	}
	if s.cfg.StateDir != "" {
		lc.Grace = s.cfg.ReattachGrace
	}
	if cg != nil {
		lc.Cgroup = s.tree.Name() + "/" + cg.Name()
	}
	if s.passSocket() {
		return s.begin(ctx, id, lc, w, t0, early)
	}
	p, err := host.Launch(ctx, lc)
	// The warden was forked while the room booted: it has started by
	// now, and a room goes no further without it (a launch that failed
	// leaves it to the caller's end, with the room's cgroups).
	if werr := w.started(); werr != nil && err == nil {
		p.Kill()
		<-p.Exited()
		err = werr
	}
	if err != nil {
		return nil, s.spawnFailed(id, 0, 1, s.spawnError(ctx, err))
	}
	launched := time.Now()
	// A fresh instance refusing a port it cannot bind (or whose server
	// ended before it was ready) stays fresh, so the next port is tried
	// on the same process.
	runs := 0
	for attempt := 1; ; attempt++ {
		port, err := s.acquirePort(portFree)
		if err != nil {
			p.Kill()
			<-p.Exited()
			return nil, s.spawnFailed(id, 0, attempt, err)
		}
		a := s.assignment(id, port)
		err = p.Start(ctx, a)
		if err == nil {
			return s.started(ctx, p, a, t0, spawnPhases{launch: p.Phases(), ready: time.Since(launched)})
		}
		inUse, again := errors.Is(err, instance.ErrPortInUse), errors.Is(err, host.ErrTryAgain)
		if again && udpBound(port) {
			// The server could not bind its port because something took
			// it meanwhile: the port's fault, not the server's.
			inUse, again = true, false
		}
		switch {
		case inUse:
			s.quarantine(port, err)
		case again:
			runs++
			s.releasePort(port)
		}
		if (inUse && attempt < maxPortAttempts || again && runs < maxRunAttempts) && ctx.Err() == nil {
			if again {
				s.log.Warn().Uint32("id", id).Uint16("port", port).Int("attempt", runs).Err(err).Msg("server not ready, trying another port")
			}
			continue
		}
		p.Kill()
		<-p.Exited() // the port is free only once the process is gone
		if !inUse && !again {
			s.releasePort(port)
		}
		return nil, s.spawnFailed(id, port, attempt, s.spawnError(ctx, err))
	}
}

// assignment is what room id's instance is told in Start, on port.
func (s *Supervisor) assignment(id uint32, port uint16) instance.Assignment {
	return instance.Assignment{RoomID: id, Port: port, MaxPlayers: s.cfg.MaxPlayers, Settings: s.cfg.Room, Bind: s.cfg.Bind,
		SeatKeys: s.seatKeys(id), ReconnectGrace: s.cfg.ReconnectGrace}
}

// begin starts an instance of the go-plugin room on a port bound here
// and passed to it (Config.PassSocket), with its warden if w is not nil.
// With early, the room is returned once the process is forked, still
// booting: its tracker waits for the rest of its start, and then starts
// its warden (boot). Otherwise begin waits for its game to be ready, as
// spawnInstance does.
func (s *Supervisor) begin(ctx context.Context, id uint32, lc host.LaunchConfig, w *warden, t0 time.Time, early bool) (*record, error) {
	port, sock, err := s.bindPort()
	if err != nil {
		return nil, s.spawnFailed(id, 0, 1, err)
	}
	lc.Socket = sock
	a := s.assignment(id, port)
	// The start ends with the call that asked for the room while begin
	// runs; a room handed out while it starts outlives that call, not the
	// supervisor (boot ends its start).
	bctx, done := context.WithTimeout(s.ctx, s.cfg.SpawnTimeout)
	stop := context.AfterFunc(ctx, done)
	defer stop()
	p, err := host.Begin(bctx, lc, a)
	sock.Close() // the instance has its own
	if err != nil {
		w.drop()
	} else {
		err = w.started() // nil if early: launched by boot
	}
	if err == nil && !early {
		err = p.Err()
		s.prove(err == nil)
	}
	if err != nil {
		done()
		if p != nil {
			p.Kill()
			<-p.Exited() // the port is free only once the process is gone
		}
		s.releasePort(port)
		if errors.Is(err, instance.ErrPortInUse) {
			// The socket passed holds the port: the program binds its own.
			err = fmt.Errorf("%w (a room program that binds its port itself needs pass_socket = false)", err)
		}
		return nil, s.spawnFailed(id, port, 1, s.spawnError(bctx, err))
	}
	if !early {
		done()
		ph := p.Phases()
		return s.started(ctx, p, a, t0, spawnPhases{launch: ph, ready: ph.Ready})
	}
	r, err := s.started(ctx, p, a, t0, spawnPhases{launch: host.Phases{Fork: p.Forked()}})
	r.booting, r.bootDone, r.warden = true, done, w
	return r, err
}

// passSocket reports whether rooms get their port from the supervisor
// (Config.PassSocket): go-plugin rooms, where it is on.
func (s *Supervisor) passSocket() bool { return s.cfg.PassSocket && s.cfg.Probe == "" }

// prove records whether an instance's start, which begin waited for,
// went well (see Supervisor.proven).
func (s *Supervisor) prove(ok bool) {
	s.mu.Lock()
	s.proven = ok
	s.mu.Unlock()
}

// bindPort takes a port of the pool and binds it where the rooms' ports
// are bound (Config.Bind, or every address), as the instance would: a
// port it cannot bind is quarantined and another tried. The caller closes
// the socket once the instance has it.
func (s *Supervisor) bindPort() (uint16, *os.File, error) {
	for attempt := 1; ; attempt++ {
		// The bind is the test: it fails while a socket holds the port
		// where it binds (every address, or Bind), and once it holds
		// the port no other socket can take it there.
		port, err := s.acquirePort(func(uint16) bool { return true })
		if err != nil {
			return 0, nil, err
		}
		c, err := udpsock.Listen(s.cfg.Bind, port)
		if err == nil {
			f, ferr := c.File()
			c.Close()
			if ferr == nil {
				return port, f, nil
			}
			err = ferr
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == maxPortAttempts {
			s.releasePort(port)
			return 0, nil, fmt.Errorf("%w: udp port %d: %v", room.ErrSpawn, port, err)
		}
		s.quarantine(port, err)
	}
}

// boot waits for the rest of the start of a room handed out while its
// instance started (begin), and then starts its warden. A room whose
// start failed has been killed: its tracker reaps it.
func (s *Supervisor) boot(r *record) {
	err := r.proc.Err()
	if w := r.warden; w != nil {
		if err != nil {
			w.drop()
		} else {
			w.launch()
			if err = w.started(); err != nil {
				r.proc.Kill()
			}
		}
	}
	r.bootDone()
	ph := r.proc.Phases()
	s.mu.Lock()
	r.booting = false
	r.lastStatus = time.Now() // health is counted from here
	spawnTime := r.spawnTime + time.Since(r.row.StartedAt)
	stopped := r.cause != "" // stopped while it started: no fault of its program
	switch {
	case err == nil:
		s.stats.SpawnLatency.observe(spawnTime)
		s.proven = true
	case !stopped:
		s.proven = false
		s.setCause(r, room.Crashed)
	}
	s.mu.Unlock()
	if err != nil {
		if !stopped {
			s.spawnFailed(r.row.ID, r.row.Port, 1, fmt.Errorf("%w: %v", room.ErrSpawn, err))
		}
		return
	}
	afterFork(s.log.Info().Uint32("id", r.row.ID).Uint16("port", r.row.Port).Int("pid", r.row.PID).
		Float64("spawn_ms", ms(spawnTime)), ph, ph.Ready).Msg("room ready")
	s.remember(r.row.ID, time.Time{}) // the seats it was given while it started
}

// spawnPhases says where the time of a spawn went.
type spawnPhases struct {
	prep   time.Duration // the room's directory, its user and its cgroups
	launch host.Phases   // the instance's start, until its first report
	ready  time.Duration // from there until its game was ready on its port
}

// afterFork adds to a log line the phases of an instance's start after
// its fork (ph), its game's start taking ready.
func afterFork(e *zerolog.Event, ph host.Phases, ready time.Duration) *zerolog.Event {
	return e.Float64("boot_ms", ms(ph.Boot)).Float64("dial_ms", ms(ph.Dial)).Float64("watch_ms", ms(ph.Watch)).
		Float64("ready_ms", ms(ready))
}

// ms is d in milliseconds, for the log.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// started makes the record of a room whose instance p started on a, the
// spawn's phases so far being phases. A probed server's first answer is
// in the row before the room is handed out: the creator sees the server's
// own maximum.
func (s *Supervisor) started(ctx context.Context, p *host.Process, a instance.Assignment, t0 time.Time, phases spawnPhases) (*record, error) {
	now := time.Now()
	r := &record{
		row: room.Room{
			ID: a.RoomID, Port: a.Port, MaxPlayers: a.MaxPlayers, PID: p.PID(),
			StartedAt: p.StartedAt(), Source: room.Instance,
		},
		proc:       p,
		status:     p.Status(),
		watched:    true,
		pooled:     true,
		lastStatus: now,
		spawnTime:  now.Sub(t0),
		phases:     phases,
	}
	if r.row.StartedAt.IsZero() {
		r.row.StartedAt = now // still starting (begin)
	}
	if s.cfg.Probe != "" {
		r.row.Source = room.Exec
		// A probed server, or one that reports to its endpoint, is alive
		// while it says so (details), not while its keeper runs.
		r.probed = s.cfg.Probe == keeper.ProbeTeeworlds || s.cfg.Probe == keeper.ProbeEndpoint
		// A server without a probe has no status, hence no health to
		// miss: it lives until it exits.
		r.watched = s.cfg.Probe != keeper.ProbeNone
	}
	if r.probed {
		d, err := p.Describe(ctx)
		if err != nil {
			p.Kill()
			<-p.Exited()
			s.releasePort(a.Port)
			return nil, s.spawnFailed(a.RoomID, a.Port, 1, s.spawnError(ctx, err))
		}
		if d.Status.Details != nil {
			setDetails(&r.row, *d.Status.Details)
			r.row.Players = d.Status.Players
		}
	}
	return r, nil
}

// setDetails copies what a probed server says of itself into its row.
func setDetails(row *room.Room, d host.Details) {
	row.MaxPlayers = d.MaxPlayers
	row.Name, row.Game, row.Map, row.Password = d.Name, d.Game, d.Map, d.Password
}

// spawnError says why a spawn failed, wrapping room.ErrSpawn, or room.ErrClosed when
// Shutdown interrupted it. The spawn's time is up when its deadline has
// passed, whether or not ctx says so yet: the instance, which has the
// same deadline, may end the call first, while ctx's timer is still to
// run. (A ctx ended by its deadline has it passed.)
func (s *Supervisor) spawnError(ctx context.Context, err error) error {
	deadline, ok := ctx.Deadline()
	switch {
	case s.ctx.Err() != nil:
		return room.ErrClosed
	case ok && !time.Now().Before(deadline): // ctx's DeadlineExceeded too
		return fmt.Errorf("%w: not ready within %v: %v", room.ErrSpawn, s.cfg.SpawnTimeout, err)
	default:
		return fmt.Errorf("%w: %v", room.ErrSpawn, err)
	}
}

// acquirePort takes a ready port that passes the check free; ports
// failing it are quarantined on the way.
func (s *Supervisor) acquirePort(free func(uint16) bool) (uint16, error) {
	for {
		s.mu.Lock()
		now := time.Now()
		port, ok := s.ports.acquire(now)
		if !ok {
			_, cooling, quarantined, inUse := s.ports.counts(now)
			s.mu.Unlock()
			return 0, fmt.Errorf("%w: %d in use, %d cooling down, %d quarantined", room.ErrNoPorts, inUse, cooling, quarantined)
		}
		s.mu.Unlock()
		if free(port) {
			return port, nil
		}
		s.quarantine(port, errors.New("bound by another process"))
	}
}

func (s *Supervisor) quarantine(port uint16, why error) {
	s.mu.Lock()
	s.ports.quarantineAcquired(port, time.Now())
	s.stats.Quarantines++
	s.mu.Unlock()
	e := s.log.Warn().Uint16("port", port).Err(why).Dur("for", s.cfg.PortQuarantine)
	if held := s.portHolders([]uint16{port}); len(held) > 0 {
		// Whoever holds it: a room that binds ports not its own is one
		// the operator should end.
		e = e.Int("holder_pid", held[0].PID).Int("holder_uid", held[0].UID)
		if held[0].Room != 0 {
			e = e.Uint32("held_by_room", held[0].Room)
		}
	}
	e.Msg("port quarantined")
}

func (s *Supervisor) releasePort(port uint16) {
	s.mu.Lock()
	s.ports.release(port, time.Now())
	s.mu.Unlock()
}

func (s *Supervisor) spawnFailed(id uint32, port uint16, attempt int, err error) error {
	s.mu.Lock()
	s.stats.SpawnFailures++
	s.mu.Unlock()
	if !errors.Is(err, room.ErrClosed) {
		s.log.Error().Uint32("id", id).Uint16("port", port).Int("attempt", attempt).Err(err).Msg("spawn failed")
	}
	return err
}

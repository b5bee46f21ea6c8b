package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// maxPortAttempts bounds how many ports one create tries when instances
// report their port taken, so a pool full of squatted ports fails fast.
const maxPortAttempts = 8

// The parent-death signal of a child is tied to the OS thread that forked
// it, not to the process: with Go moving goroutines between threads and
// retiring threads, a child forked from an arbitrary goroutine is killed
// whenever that thread happens to exit. Every instance is therefore forked
// by one goroutine locked to its thread that never returns, so the signal
// fires exactly when the supervisor's process dies.
var forker struct {
	once sync.Once
	reqs chan forkRequest
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startOnForkThread starts cmd from the dedicated locked thread; it is the
// StartProcess of every LaunchConfig.
func startOnForkThread(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range forker.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkRequest{cmd, done}
	return <-done
}

// commandLine returns the argv of one instance: Config.Command, or this
// executable's hidden "instance" subcommand.
func commandLine(cfg Config) ([]string, error) {
	if len(cfg.Command) > 0 {
		return cfg.Command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("supervisor: locating the reference room: %w", err)
	}
	return []string{exe, "instance"}, nil
}

// spawn starts one instance on a free port and waits until its game is
// ready. A port the instance cannot bind is quarantined and another is
// tried, invisibly to the caller. Errors wrap room.ErrNoPorts or room.ErrSpawn.
func (s *Supervisor) spawn(ctx context.Context) (*record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SpawnTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // Shutdown aborts spawns in flight
	defer stop()

	t0 := time.Now()
	id := s.ids.take()
	var r *record
	var err error
	if s.cfg.Probe != "" {
		r, err = s.spawnExec(ctx, id, t0)
	} else {
		r, err = s.spawnInstance(ctx, id, t0)
	}
	if err == nil {
		s.awaitDurable(ctx, id)
	}
	return r, err
}

// awaitDurable waits, within ctx, until id is covered by the mark on disk,
// so that no room is announced under an id a crash could hand out again.
// That wait is rare (a burst of rooms faster than one write of the mark)
// and runs in parallel with the spawn; a mark that cannot be written in
// time is logged and the room goes ahead.
func (s *Supervisor) awaitDurable(ctx context.Context, id uint32) {
	for ch := s.ids.durable(id); ch != nil; ch = s.ids.durable(id) {
		select {
		case <-ch:
		case <-ctx.Done():
			s.log.Warn().Uint32("id", id).Msg("room id not yet covered by the id file")
			return
		}
	}
}

// spawnInstance starts an instance of the go-plugin room, as spawn says.
func (s *Supervisor) spawnInstance(ctx context.Context, id uint32, t0 time.Time) (*record, error) {
	p, err := host.Launch(ctx, host.LaunchConfig{
		Cmd:          exec.Command(s.argv[0], s.argv[1:]...),
		StartTimeout: s.cfg.SpawnTimeout,
		Log:          s.log,
		StartProcess: startOnForkThread,
	})
	if err != nil {
		return nil, s.spawnFailed(id, 0, 1, s.spawnError(ctx, err))
	}
	// A fresh instance refusing a port it cannot bind stays fresh, so the
	// next port is tried on the same process.
	for attempt := 1; ; attempt++ {
		port, err := s.acquirePort()
		if err != nil {
			p.Kill()
			<-p.Exited()
			return nil, s.spawnFailed(id, 0, attempt, err)
		}
		err = p.Start(ctx, instance.Assignment{RoomID: id, Port: port, MaxPlayers: s.cfg.MaxPlayers, Settings: s.cfg.Room, Bind: s.cfg.Bind})
		if err == nil {
			now := time.Now()
			return &record{
				row: room.Room{
					ID: id, Port: port, MaxPlayers: s.cfg.MaxPlayers, PID: p.PID(),
					StartedAt: now, Source: room.Instance,
				},
				proc:       p,
				status:     p.Status(),
				watched:    true,
				lastStatus: now,
				spawnTime:  now.Sub(t0),
			}, nil
		}
		inUse := errors.Is(err, instance.ErrPortInUse)
		if inUse {
			s.quarantine(port, err)
			if attempt < maxPortAttempts && ctx.Err() == nil {
				continue
			}
		}
		p.Kill()
		<-p.Exited() // the port is free only once the process is gone
		if !inUse {
			s.releasePort(port)
		}
		return nil, s.spawnFailed(id, port, attempt, s.spawnError(ctx, err))
	}
}

// noProbeSettle is how long a server with probe "none" must keep running
// after its start to count as ready: long enough for one that cannot bind
// its port or read its configuration to have exited.
const noProbeSettle = 200 * time.Millisecond

// spawnExec runs the configured command as a plain process on a free port
// and waits until it is ready: its first complete info reply on the port
// (probe "teeworlds"), or still running after noProbeSettle (probe
// "none"). A server that exits first fails the create; unlike a go-plugin
// instance it cannot report its port taken, so it is not retried on
// another port. Errors wrap room.ErrNoPorts or room.ErrSpawn.
func (s *Supervisor) spawnExec(ctx context.Context, id uint32, t0 time.Time) (*record, error) {
	port, err := s.acquirePort()
	if err != nil {
		return nil, s.spawnFailed(id, 0, 1, err)
	}
	var bind string
	if s.cfg.Bind.IsValid() && !s.cfg.Bind.IsUnspecified() {
		bind = s.cfg.Bind.String()
	}
	argv := expandArgs(s.argv, id, port, s.cfg.MaxPlayers, bind)
	p, err := startExec(argv, s.log.With().Uint32("id", id).Logger())
	if err != nil {
		s.releasePort(port)
		return nil, s.spawnFailed(id, port, 1, fmt.Errorf("%w: %v", room.ErrSpawn, err))
	}
	r := &record{
		row: room.Room{
			ID: id, Port: port, MaxPlayers: s.cfg.MaxPlayers, PID: p.PID(),
			State: packet.Waiting, Source: room.Exec,
		},
		proc: p,
	}
	if err := s.awaitExec(ctx, r, p); err != nil {
		if r.probe != nil {
			s.prober.remove(r.probe)
		}
		p.Kill()
		<-p.Exited() // the port is free only once the process is gone
		s.releasePort(port)
		return nil, s.spawnFailed(id, port, 1, s.spawnError(ctx, err))
	}
	now := time.Now()
	r.row.StartedAt, r.lastStatus, r.spawnTime = now, now, now.Sub(t0)
	return r, nil
}

// awaitExec waits until the exec'd server r is ready, as spawnExec says.
func (s *Supervisor) awaitExec(ctx context.Context, r *record, p *execProcess) error {
	var ready <-chan struct{}          // probe "teeworlds": the first reply
	var poll, settled <-chan time.Time // its polls; probe "none": the settle time
	if s.cfg.Probe == "teeworlds" {
		r.probe = s.prober.add(r.row.Port, r.row.ID, r)
		r.watched = true
		ready = r.probe.ready
		t := time.NewTicker(probeReadyPoll)
		defer t.Stop()
		poll = t.C
		s.prober.poke(r.probe)
	} else {
		t := time.NewTimer(noProbeSettle)
		defer t.Stop()
		settled = t.C
	}
	for {
		select {
		case <-ready:
			setInfo(&r.row, s.prober.firstInfo(r.probe))
			return nil
		case <-settled:
			return nil
		case <-poll:
			s.prober.poke(r.probe)
		case <-p.Exited():
			code, sig := p.ExitStatus()
			return fmt.Errorf("exited before it was ready (exit code %d, signal %q)", code, sig)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// spawnError says why a spawn failed, wrapping room.ErrSpawn, or room.ErrClosed when
// Shutdown interrupted it.
func (s *Supervisor) spawnError(ctx context.Context, err error) error {
	switch {
	case s.ctx.Err() != nil:
		return room.ErrClosed
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: not ready within %v: %v", room.ErrSpawn, s.cfg.SpawnTimeout, err)
	default:
		return fmt.Errorf("%w: %v", room.ErrSpawn, err)
	}
}

// acquirePort takes a ready port that passes the bind pre-check;
// ports failing it are quarantined on the way.
func (s *Supervisor) acquirePort() (uint16, error) {
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
		if portFree(port) {
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
	s.log.Warn().Uint16("port", port).Err(why).Dur("for", s.cfg.PortQuarantine).Msg("port quarantined")
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

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/instance/keeper"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// Bounds of the adoption at the start.
const (
	// adoptWorkers rooms are asked at once: each answer is a local round
	// trip, so a few in parallel keep both cores busy.
	adoptWorkers = 16
	// adoptTimeout is what one room gets to answer; a room that does not
	// is ended with its cgroup, or, without cgroups, left to end after
	// its grace, as if no lobby had come back.
	adoptTimeout = 3 * time.Second
	// keepTimeout bounds one Keep call to an instance.
	keepTimeout = time.Second
)

// found is what the adoption learnt of one room directory.
type found struct {
	id   uint32
	proc *host.Process
	desc host.Description
	err  error
}

// adoptAll finds the rooms in the state directory and takes each over:
// every directory rooms/ID whose socket answers as the instance of room
// ID. What does not (a dead instance's socket, something else's socket,
// a damaged directory) is reported, and the directory of a room that no
// longer runs is removed; nothing stops the start. Called by New, before
// the supervisor is shared.
func (s *Supervisor) adoptAll() {
	t0 := time.Now()
	entries, err := os.ReadDir(s.dirs.rooms())
	if err != nil {
		s.log.Warn().Err(err).Msg("state_dir: rooms not readable, none adopted")
		return
	}
	jobs := make(chan uint32)
	results := make(chan found)
	var workers sync.WaitGroup
	for range min(adoptWorkers, max(len(entries), 1)) {
		workers.Go(func() {
			for id := range jobs {
				results <- s.find(id)
			}
		})
	}
	go func() {
		for _, e := range entries {
			id, err := strconv.ParseUint(e.Name(), 10, 32)
			if err != nil || id == 0 || !e.IsDir() {
				s.log.Warn().Str("path", filepath.Join(s.dirs.rooms(), e.Name())).Msg("state_dir: not a room directory, ignored")
				continue
			}
			jobs <- uint32(id)
		}
		close(jobs)
		workers.Wait()
		close(results)
	}()
	var adopted, gone int
	for f := range results {
		if f.err == nil {
			f.err = s.enter(f.proc, f.desc)
		}
		if f.err != nil {
			gone++
			if s.tree == nil {
				// What the room left (with cgroups, endUnadopted ends it).
				s.end(f.id, nil)
			}
			s.dirs.remove(f.id)
			e := s.log.Warn()
			if errors.Is(f.err, host.ErrGone) {
				e = s.log.Info() // a room that ended while no lobby ran
			}
			e.Uint32("id", f.id).Err(f.err).Msg("room not adopted, its directory removed")
			continue
		}
		adopted++
	}
	s.log.Info().Int("adopted", adopted).Int("removed", gone).Str("state_dir", s.cfg.StateDir).
		Dur("took", time.Since(t0)).Msg("rooms adopted")
}

// find asks the instance in room id's directory who it is.
func (s *Supervisor) find(id uint32) found {
	dir := s.dirs.path(id)
	sockets, _ := filepath.Glob(filepath.Join(dir, "plugin*"))
	if len(sockets) != 1 {
		return found{id: id, err: fmt.Errorf("%w: %d sockets in %s", host.ErrGone, len(sockets), dir)}
	}
	ctx, cancel := context.WithTimeout(s.ctx, adoptTimeout)
	defer cancel()
	p, desc, err := host.Attach(ctx, sockets[0], s.log)
	if err == nil && desc.Assignment.RoomID != id {
		p.Stop(s.cfg.StopGrace)
		err = fmt.Errorf("%w: its instance says it is room %d (stopped)", host.ErrNotARoom, desc.Assignment.RoomID)
	}
	return found{id: id, proc: p, desc: desc, err: err}
}

// enter lists an adopted room as it was: its id, port, state, players,
// seats, start time, and whether it was handed out or kept warm. Its port
// leaves the pool, its id is never handed out again. A room whose port
// another adopted room holds is stopped: no port is listed twice.
func (s *Supervisor) enter(p *host.Process, d host.Description) error {
	a, st, now := d.Assignment, d.Status, time.Now()
	r := &record{
		row: room.Room{
			ID: a.RoomID, Port: a.Port, MaxPlayers: a.MaxPlayers, PID: p.PID(), StartedAt: d.StartedAt,
			Source: room.Instance, State: st.State, Players: st.Players, Adopted: true,
		},
		proc:       p,
		cgroup:     s.adoptCgroup(a.RoomID),
		status:     p.Status(),
		watched:    true,
		probed:     st.Details != nil,
		lastStatus: now,
	}
	if d.Runs {
		r.row.Source = room.Exec
		r.watched = s.cfg.Probe != keeper.ProbeNone
	}
	if st.Details != nil {
		setDetails(&r.row, *st.Details)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.portTaken(a.Port) {
		p.Stop(s.cfg.StopGrace)
		return fmt.Errorf("%w: port %d is another adopted room's (stopped)", host.ErrNotARoom, a.Port)
	}
	// A port outside the pool (the range changed) is the room's until it
	// ends and never joins the pool.
	r.pooled = s.ports.claim(a.Port)
	s.adoptDoor(r)
	s.live[a.RoomID] = r
	r.row.SetMeta(d.Kept.Meta)
	r.row.Code, r.row.Private = d.Kept.Code, d.Kept.Private
	s.table.Enter(r.row, d.Kept.Listed, d.Kept.Seats, d.Kept.Password)
	if d.Kept.Listed {
		r.handedOut = now // max_waiting starts again with the new lobby
	} else {
		s.warm = append(s.warm, r)
	}
	r.begun = st.State == packet.Playing || st.State == packet.Finished
	s.wg.Add(1)
	go s.track(r)
	seats, _, _ := s.table.Seats(a.RoomID)
	s.log.Info().Uint32("id", a.RoomID).Uint16("port", a.Port).Int("pid", r.row.PID).Str("source", string(r.row.Source)).
		Stringer("state", st.State).Int("players", st.Players).Int("seats", len(seats)).Bool("listed", d.Kept.Listed).
		Bool("adopted", true).Dur("age", now.Sub(d.StartedAt).Truncate(time.Millisecond)).Msg("room adopted")
	return nil
}

// portTaken reports whether a room of live has port. s.mu is held.
func (s *Supervisor) portTaken(port uint16) bool {
	for _, r := range s.live {
		if r.row.Port == port {
			return true
		}
	}
	return false
}

// Release readies the rooms for another process that is to adopt them (an
// upgrade): it stops taking rooms (the table's Create and Join fail with
// room.ErrClosed), waits for the spawns in flight (their rooms are handed
// out as usual), stores every room's seats in its instance, stops
// killing rooms that fall silent (the other process watches them now) and
// lets go of the state directory. The rooms keep running and List keeps
// answering. After a handover that failed, Resume takes the rooms back;
// after one that worked, the process exits without Shutdown. It needs a
// state directory.
func (s *Supervisor) Release(ctx context.Context) error {
	if s.cfg.StateDir == "" {
		return errors.New("supervisor: no state_dir: the rooms cannot outlive this process")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return room.ErrClosed
	}
	s.released = true
	s.table.Hold(true)
	// Every room is kept, whether or not it changed: its instance then
	// holds the listed flag too, even for a room adopted warm.
	for id := range s.live {
		s.remember(id, time.Time{})
	}
	s.mu.Unlock()
	for {
		s.mu.Lock()
		n := s.spawning
		s.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			s.Resume()
			return fmt.Errorf("supervisor: release: %d spawns still in flight: %w", n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.flushSeats(true)
	s.dirs.unlock()
	return nil
}

// Resume takes the rooms back after a Release whose handover failed: it
// locks the state directory again, opens again every status stream the
// other process took over, and takes rooms again.
func (s *Supervisor) Resume() error {
	if err := s.dirs.relock(); err != nil {
		return err
	}
	s.mu.Lock()
	s.released = false
	s.table.Hold(false)
	procs := make([]*host.Process, 0, len(s.live))
	for _, r := range s.live {
		r.lastStatus = time.Now() // silent while the other process watched
		procs = append(procs, r.proc)
	}
	s.mu.Unlock()
	for _, p := range procs {
		if err := p.Rewatch(); err != nil {
			s.log.Warn().Int("pid", p.PID()).Err(err).Msg("room not watched again")
		}
	}
	return nil
}

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/roomuser"
)

// Every room runs in cgroups of its own (package cgroup) where the host
// has them: its first process, the go-plugin instance or the keeper of a
// foreign server, is started in them, so everything the room ever starts
// is there too, whatever it does with sessions and process groups. When
// the room is reaped its cgroups are killed until empty and removed;
// Config.Limits bound each room.
//
// Without cgroups (no permission, no cgroup filesystem, or
// Config.NoCgroups), rooms are process groups and this process is the
// child subreaper of what escapes them: a process left behind by a room
// whose parents died comes back here instead of going to init. Every
// process of a room carries the room's directory in its environment
// (instancepb.EnvRoomDir), which is how the reap finds and kills what is
// left of the room (cgroup.KillCarrying), and reaps it. Keepers are
// subreapers too, and kill what their server leaves when it exits, so
// orphans reach this process only when a keeper itself is killed. One
// that exits by itself before its room is reaped stays a zombie here
// until this process exits: nothing tells it, by then, from a child
// something else waits for.

// endTimeout bounds the killing of what is left of one room.
const endTimeout = 10 * time.Second

// usageTTL is how long Usage answers from what it last read: the kernel
// folds memory statistics in every 2 s, and the board asks every second.
const usageTTL = time.Second

// treeSeq numbers the trees of the supervisors of one process.
var treeSeq atomic.Uint32

// treeName is the name of the supervisor's cgroup subtree and of its
// door's table: fixed for a state directory (StateName); else this
// supervisor's own, since the rooms die with it.
func treeName(stateDir string) string {
	if stateDir != "" {
		return StateName(stateDir)
	}
	return fmt.Sprintf("foyer-%d-%d", os.Getpid(), treeSeq.Add(1))
}

// StateName is the name under which a lobby with state directory dir
// keeps, in the kernel, what of its rooms outlives it: their cgroup
// subtree and the nftables table (family inet) of their door. It is fixed
// for the directory, so that the process started next with it finds them,
// whatever process it is (an upgrade's).
func StateName(dir string) string {
	h := fnv.New64a()
	h.Write([]byte(filepath.Clean(dir)))
	return fmt.Sprintf("foyer-s%016x", h.Sum64())
}

// cgroupName is the name of room id's cgroups in the tree.
func cgroupName(id uint32) string { return "room-" + strconv.FormatUint(uint64(id), 10) }

// openTree opens the rooms' cgroup subtree, or returns nil where rooms
// run without cgroups, having said so. Limits that cannot be enforced
// are an error.
func openTree(cfg Config, log zerolog.Logger) (*cgroup.Tree, error) {
	limited := cfg.Limits != cgroup.Limits{}
	var why error
	if cfg.NoCgroups {
		why = errors.New("turned off")
	} else {
		tree, err := cgroup.Open(treeName(cfg.StateDir))
		if err == nil {
			if err := tree.Check(cfg.Limits); err != nil {
				_ = tree.Remove()
				return nil, fmt.Errorf("supervisor: %w", err)
			}
			log.Info().Str("cgroups", tree.String()).Int64("memory_max", cfg.Limits.MemoryMax).
				Float64("cpu_max", cfg.Limits.CPUMax).Int64("pids_max", cfg.Limits.PidsMax).Msg("rooms contained in cgroups")
			// A lobby without a state directory that died (kill -9) while it
			// made a room left that room's cgroups, empty: nothing else
			// removes them.
			if gone := tree.Sweep(deadLobby); len(gone) > 0 {
				log.Info().Strs("trees", gone).Msg("cgroups of lobbies that died removed")
			}
			return tree, nil
		}
		why = err
	}
	if limited {
		var set []string
		for _, l := range []struct {
			key string
			on  bool
		}{{"memory_max", cfg.Limits.MemoryMax != 0}, {"cpu_max", cfg.Limits.CPUMax != 0}, {"pids_max", cfg.Limits.PidsMax != 0}} {
			if l.on {
				set = append(set, l.key)
			}
		}
		return nil, fmt.Errorf("supervisor: %s: cannot be enforced without cgroups: %w", strings.Join(set, ", "), why)
	}
	e := log.Warn().Err(why)
	if err := cgroup.SetSubreaper(); err != nil {
		e = e.AnErr("subreaper", err)
	}
	e.Msg("rooms are not in cgroups: each is a process group, what escapes it comes back to this process and is killed with its room, and no room is limited")
	return nil, nil
}

// startIn returns how an instance is started: on the fork thread, in the
// room's cgroups when it has them.
func startIn(cg *cgroup.Room) func(*exec.Cmd) error {
	if cg == nil {
		return proc.StartOnForkThread
	}
	return func(cmd *exec.Cmd) error { return proc.OnForkThread(func() error { return cg.Start(cmd) }) }
}

// warden is the start of a room's warden (see package roomuser) beside
// the first process of a room that runs as its user in cgroups cg: in the
// same cgroups, with a pidfd of that process. The warden is forked while
// the room's program starts, and a room is handed out only once its
// warden runs; except for a room handed out while its instance starts
// (later), whose warden is forked once its game is ready, so that the two
// programs' starts do not take the processors from the hand-out and from
// each other.
type warden struct {
	s       *Supervisor
	cg      *cgroup.Room
	later   bool           // forked by launch, not by start
	pidfd   *os.File       // of the room's process, until the warden is forked
	forking sync.WaitGroup // the warden's start, once launched
	err     error          // of that start
}

// start is the room's StartProcess: it starts cmd as startIn does and
// then, beside it, the warden (unless later).
func (w *warden) start(cmd *exec.Cmd) error {
	if err := startIn(w.cg)(cmd); err != nil {
		return err
	}
	// The process is not reaped before this returns: its pid is its own.
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		return fmt.Errorf("the room's warden: pidfd of %d: %w", cmd.Process.Pid, err)
	}
	w.pidfd = os.NewFile(uintptr(fd), "pidfd")
	if !w.later {
		w.launch()
	}
	return nil
}

// launch forks the warden, in the background: started waits for it.
func (w *warden) launch() {
	pidfd := w.pidfd
	w.pidfd = nil
	w.forking.Go(func() {
		defer pidfd.Close()
		w.err = proc.OnForkThread(func() error { return w.fork(pidfd) })
	})
}

// drop lets go of a warden never launched, for a room that did not start.
func (w *warden) drop() {
	if w != nil && w.pidfd != nil {
		w.pidfd.Close()
		w.pidfd = nil
	}
}

// started waits for the warden's start, if the room's process started,
// and returns its error; nil for no warden (a nil w).
func (w *warden) started() error {
	if w == nil {
		return nil
	}
	w.forking.Wait()
	return w.err
}

// fork starts the warden. It runs as this process's user, in a process
// group of its own and with no parent-death signal: it outlives this
// process, which is what it is for.
func (w *warden) fork(pidfd *os.File) error {
	argv := w.s.dirs.users.warden
	cmd := exec.Command(argv[0], slices.Concat(argv[1:], []string{roomuser.WardenArg + "=" + w.s.tree.Name() + "/" + w.cg.Name()})...)
	cmd.Env = []string{"GOMAXPROCS=1"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{pidfd} // descriptor 3, as roomuser.Warden wants it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cg.Start(cmd); err != nil {
		return fmt.Errorf("the room's warden: %w", err)
	}
	go func() { _ = cmd.Wait() }() // ended with the room, or after it
	return nil
}

// roomCgroup makes room id's cgroups, or returns nil without cgroups.
func (s *Supervisor) roomCgroup(id uint32) (*cgroup.Room, error) {
	if s.tree == nil {
		return nil, nil
	}
	return s.tree.Create(cgroupName(id), s.cfg.Limits)
}

// end kills what is left of room id, whose first process has exited: in
// its cgroups cg, every process, and then the cgroups; without cgroups,
// the processes that carry the room's directory. It returns how many
// processes of the room the OOM killer killed.
func (s *Supervisor) end(id uint32, cg *cgroup.Room) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	if cg == nil {
		n, err := cgroup.KillCarrying(ctx, instancepb.EnvRoomDir+"="+s.dirs.path(id))
		if err != nil {
			s.log.Warn().Uint32("id", id).Err(err).Msg("room's leftover processes not all killed")
		} else if n > 0 {
			s.log.Info().Uint32("id", id).Int("processes", n).Msg("room's leftover processes killed")
		}
		return 0
	}
	if err := cg.Kill(ctx); err != nil {
		s.log.Warn().Uint32("id", id).Err(err).Msg("room's cgroup not emptied")
	}
	ooms, err := cg.OOMKills()
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // gone: its instance ended it
		s.log.Warn().Uint32("id", id).Err(err).Msg("room's OOM kills not known")
	}
	if err := cg.Remove(); err != nil {
		s.log.Warn().Uint32("id", id).Err(err).Msg("room's cgroup not removed")
	}
	return ooms
}

// adoptCgroup returns the cgroups of adopted room id, or nil when it has
// none here (it was started without cgroups, or elsewhere).
func (s *Supervisor) adoptCgroup(id uint32) *cgroup.Room {
	if s.tree == nil {
		return nil
	}
	cg, err := s.tree.Room(cgroupName(id))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn().Uint32("id", id).Err(err).Msg("adopted room's cgroup")
		}
		return nil
	}
	return cg
}

// endUnadopted kills and removes the rooms' cgroups in the tree that no
// adopted room claims: rooms that ended, or did not answer, while no
// lobby ran, and what they left behind. Called by New after the
// adoption.
func (s *Supervisor) endUnadopted() {
	if s.tree == nil {
		return
	}
	names, err := s.tree.List()
	if err != nil {
		s.log.Warn().Err(err).Msg("rooms' cgroups not listed")
		return
	}
	// An adopted room reaped meanwhile has ended its cgroup already.
	s.mu.Lock()
	claimed := make(map[string]bool, len(s.live))
	for _, r := range s.live {
		if r.cgroup != nil {
			claimed[r.cgroup.Name()] = true
		}
	}
	s.mu.Unlock()
	for _, name := range names {
		if claimed[name] {
			continue
		}
		cg, err := s.tree.Room(name)
		if err != nil {
			continue
		}
		procs, _ := cg.Procs()
		ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
		err = cg.Kill(ctx)
		cancel()
		if err == nil {
			err = cg.Remove()
		}
		s.log.Info().Str("cgroup", name).Int("processes", len(procs)).AnErr("error", err).Msg("cgroup of a room not adopted ended")
	}
}

// closeTree removes the tree once every room is gone.
func (s *Supervisor) closeTree() {
	if s.tree == nil {
		return
	}
	if err := s.tree.Remove(); err != nil {
		s.log.Warn().Err(err).Msg("rooms' cgroup subtree not removed")
	}
}

// usageCache is what Usage last read.
type usageCache struct {
	mu    sync.Mutex // held while reading: one reader of the kernel at a time
	at    time.Time
	rooms map[uint32]cgroup.Usage
}

// Usage returns what the processes of each room use (CPU time, resident
// memory), by room id; rooms without cgroups are left out. It
// reads the kernel's account of the rooms at most once every second,
// outside the table's lock; the map is shared by every caller until then
// and must not be modified.
func (s *Supervisor) Usage() map[uint32]cgroup.Usage {
	if s.tree == nil {
		return nil
	}
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	if now := time.Now(); now.Sub(s.usage.at) < usageTTL {
		return s.usage.rooms
	}
	type listed struct {
		id uint32
		cg *cgroup.Room
	}
	var rooms []listed
	s.mu.Lock()
	for _, r := range s.live {
		if r.cgroup != nil {
			rooms = append(rooms, listed{r.row.ID, r.cgroup})
		}
	}
	s.mu.Unlock()
	out := make(map[uint32]cgroup.Usage, len(rooms))
	for _, r := range rooms {
		// A room reaped meanwhile has no cgroup any more: left out.
		if u, err := r.cg.Usage(); err == nil {
			out[r.id] = u
		}
	}
	s.usage.at, s.usage.rooms = time.Now(), out
	return out
}

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// What a room's first process (its keeper, or a go-plugin instance) does
// to its own room when no lobby will: the lobby it waited for never came
// back, or the lobby it belonged to died. The lobby gives it the names of
// its tree and its room (see the instance's environment).

// End ends, from inside, the room tree/room (the names given to Open and
// Create) that the calling process is in: it kills every other process in
// the room's cgroups, whatever they did with sessions, process groups or
// their parents, waits until none is left (or ctx ends), and leaves the
// room (Leave), so that the room leaves nothing behind once the caller
// exits. A caller that is not in that room kills nothing and moves
// nowhere. The killed processes are not reaped: the caller's own
// children among them are the caller's to wait for, the others go to
// whoever they were reparented to; a zombie does not keep a cgroup from
// being removed.
func End(ctx context.Context, tree, room string) error {
	ps, err := inRoom(tree, room)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		// The first hierarchy tracks every process of the room (the
		// unified one when there is one): a process is in all of the
		// room's cgroups or in none. The caller cannot freeze the room
		// it is in, so the others are signalled in rounds until none is
		// left; a fork racing the signals is caught by the next round.
		// A room that runs as a user of its own cannot signal its
		// warden, which runs as the lobby's (and ends what this leaves):
		// it is beyond reach, and not waited for.
		dir := ps[0].dir
		beyond := map[int]bool{}
		var b backoff
		for {
			pids, err := readProcs(dir)
			if err != nil {
				return fmt.Errorf("cgroup: ending room %s: %w", room, err)
			}
			others := 0
			for _, pid := range pids {
				if !beyond[pid] {
					others++
				}
			}
			if others == 0 {
				break
			}
			out, err := signalCgroupBut(dir, unix.SIGKILL, beyond)
			if err != nil {
				return fmt.Errorf("cgroup: ending room %s: %w", room, err)
			}
			for _, pid := range out {
				beyond[pid] = true
			}
			if err := b.wait(ctx); err != nil {
				return fmt.Errorf("cgroup: ending room %s: %d processes left: %w", room, others, err)
			}
		}
	}
	return leave(room, ps)
}

// Leave is the last thing a room's keeper does when no lobby will come
// back for its room, once every other process of the room is gone (see
// End, or KillDescendants): it moves the calling process out of the
// room's cgroups, into the lobby's own (the "foyer-lobby" leaf on v2 when
// there is one), and removes them, and the tree's directories if that was
// their last room, so that the room leaves nothing behind. tree and room
// are the names given to Open and Create; a hierarchy where the caller is
// not in tree/room is left alone, so a process that is in no room moves
// nowhere.
func Leave(tree, room string) error {
	ps, err := inRoom(tree, room)
	if err != nil {
		return err
	}
	return leave(room, ps)
}

// inRoom returns the hierarchies in which the calling process is in the
// room tree/room, the unified one first.
func inRoom(tree, room string) ([]place, error) {
	if err := errors.Join(checkName(tree), checkName(room)); err != nil {
		return nil, err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var in []place
	for _, p := range locate(parseMountinfo(mi), parseProcCgroup(pc)) {
		if path.Base(p.dir) == room && path.Base(path.Dir(p.dir)) == tree {
			in = append(in, p)
		}
	}
	return in, nil
}

// leave moves the calling process out of the room's cgroups ps, into the
// lobby's, and removes them and, if they are empty, the tree's.
func leave(room string, ps []place) error {
	for _, p := range ps {
		dest := path.Dir(path.Dir(p.dir))
		if leaf := path.Join(dest, lobbyLeaf); p.v2 && exists(leaf) {
			dest = leaf
		}
		if err := write(dest+"/cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			if os.Geteuid() != 0 && (errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EPERM)) {
				// A room run as a user of its own cannot leave: its
				// warden, which runs as the lobby's, removes its
				// cgroups once it has exited.
				return nil
			}
			return fmt.Errorf("cgroup: leaving room %s: %w", room, err)
		}
	}
	var errs []error
	for _, p := range ps {
		if err := os.Remove(p.dir); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(path.Dir(p.dir)) // the tree, unless other rooms are in it
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroup: leaving room %s: %w", room, err)
	}
	return nil
}

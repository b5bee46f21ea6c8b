// Package cgroup contains each room in cgroups of its own: every process a
// room starts is in them from its first instruction, whatever it does with
// sessions and process groups, so that killing the room kills all of it,
// and the kernel bounds the room's memory, CPU and process count.
//
// It talks to the kernel directly (cgroupfs and clone3), for cgroup v2,
// v1, and hosts that mount both.
//
// # Layout
//
// A lobby opens a Tree under a name of its own (Open); each room gets a
// cgroup under the room's name in it (Create), in every hierarchy that
// matters:
//
//	v2:  <lobby's cgroup>/<tree>/<room>         rooms: processes, cgroup.kill,
//	     <lobby's cgroup>/foyer-lobby            cpu.stat, memory, cpu, pids
//	                                             (the lobby, if it had to move)
//	v1:  <lobby's cgroup in hierarchy>/<tree>/<room>, for memory, cpu and
//	     pids, and without v2 also cpuacct (CPU time) and freezer (kills)
//
// On a hybrid host (v1 controllers and a unified hierarchy without them),
// the unified hierarchy tracks and kills the room's processes, and v1
// bounds and measures them. The tree's name is fixed per lobby (e.g.
// "foyer", or one per lobby when several run in one cgroup), and room
// names are unique within it (e.g. "room-<id>"), so that a lobby started
// again finds its rooms by name (List, Room).
//
// The tree's own directories exist only while they hold rooms: Open
// leaves none, Create makes them, and the removal of their last room
// (Room.Remove, or Leave from inside) removes them. So a lobby killed
// while it had no room leaves no cgroup, nor does one whose rooms all
// ended by themselves.
//
// # What the host needs
//
// Root, or (cgroup v2 only) a systemd service with Delegate=yes, which
// makes the service's cgroup Foyer's own. Linux 5.14 for v2 (cgroup.kill);
// on v1, 4.13 for the OOM kill count. Open's error, wrapping
// ErrUnavailable, says what is missing; Check's, wrapping ErrLimit, which
// configured limit cannot be enforced and why.
//
// # Without cgroups
//
// Where Open fails, rooms are process groups, and escapees are caught by
// descent instead: SetSubreaper on the lobby and on each room's keeper
// makes every orphan come back to them instead of init; KillDescendants
// stops, then kills, every descendant of a process; ReapAdopted reaps the
// orphans no one else waits for. What is left of a room once its first
// process is gone (its orphans came back to the lobby, or went to init)
// is found by what every process of the room inherited in its
// environment, the room's own directory, and killed with KillCarrying. It
// is a fallback, not containment: no limit can be enforced, and a process
// that both clears its environment and loses every parent between it and
// the room's first process is beyond reach.
//
// # Wiring into the supervisor
//
// At start, once:
//
//	tree, err := cgroup.Open(name)        // ErrUnavailable: log err once, SetSubreaper,
//	                                      // and refuse any configured limit
//	err = tree.Check(limits)              // refuse to start: the error says why
//	log tree.String()                     // what is used, how rooms are killed, what is missing
//	for _, n := range tree.List() { ... } // not adopted: Room(n), Kill, Remove
//
// Spawn: create the room's cgroups, then start its first process (the
// go-plugin instance, or the keeper of a foreign server) with Room.Start
// instead of cmd.Start, on the fork thread, telling it the names of its
// tree and room:
//
//	room, err := tree.Create("room-"+id, limits)
//	err = room.Start(cmd)  // inside the fork thread's loop, where cmd.Start was
//	// spawn failed: room.Kill(ctx); room.Remove()
//
// Nothing is needed in the keeper or the instance to be contained: their
// children inherit the room's cgroups. Reap, stop and shutdown: once the
// first process has exited (or the stop grace is over):
//
//	room.Kill(ctx)                   // everything left, whatever its session; waits until empty
//	if n, _ := room.OOMKills(); n > 0 { cause = oom }
//	room.Remove()
//
// and at shutdown, once every room is gone, tree.Remove(). Usage feeds
// /rooms and the per-room gauges, which go with Remove. A room's first
// process whose lobby never comes back (or died) ends its room itself
// with End, which kills every other process of the room and leaves it.
package cgroup

package supervisor

import (
	"time"

	"github.com/foyerlobby/foyer/room"
)

// SpawnBuckets are the upper bounds of the spawn-latency histogram.
var SpawnBuckets = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	30 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, time.Second, 5 * time.Second,
}

// Histogram counts observations per bucket: Counts[i] those at most
// SpawnBuckets[i], the last entry those above every bound.
type Histogram struct {
	Counts []uint64
	Sum    time.Duration
}

func (h *Histogram) observe(d time.Duration) {
	i := 0
	for i < len(SpawnBuckets) && d > SpawnBuckets[i] {
		i++
	}
	h.Counts[i]++
	h.Sum += d
}

// Stats is what the lobby and its admin page observe of a supervisor.
type Stats struct {
	Version uint64 // the table version
	Rooms   int    // listed rooms, including ones being stopped and registered ones
	// Registered is how many of Rooms were registered by an edge
	// (room.Registry) rather than spawned here.
	Registered int
	Warm       int // ready instances not handed out
	Spawning   int // spawns in flight
	// Live is how many rooms have a process here: listed, warm or on
	// their way out.
	Live int
	// Draining is set while the host starts no new room (Drain).
	Draining bool

	PortsReady, PortsCooling, PortsQuarantined, PortsInUse int

	Created   uint64 // rooms handed out, warm or cold
	SeatsHeld uint64 // seats newly held by Join
	// SeatsDisplaced counts seats of Unproven JOINs given to proven ones.
	SeatsDisplaced uint64
	// SeatsOverQuota counts JOINs refused for their address's seats.
	SeatsOverQuota uint64
	// DoorRefused counts the datagrams the rooms' doors turned away:
	// their senders held no seat.
	DoorRefused   uint64
	WarmHits      uint64                // creates answered from the warm pool
	SpawnFailures uint64                // spawns that produced no instance
	Quarantines   uint64                // ports quarantined
	Reaped        map[room.Cause]uint64 // exits by cause (see room.Cause)
	WatchDrops    uint64                // events a slow watcher missed
	SpawnLatency  Histogram             // launch to ready, successful spawns
}

func newStats() Stats {
	return Stats{
		Reaped:       make(map[room.Cause]uint64),
		SpawnLatency: Histogram{Counts: make([]uint64, len(SpawnBuckets)+1)},
	}
}

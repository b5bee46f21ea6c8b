package lobby

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// listRecheck bounds how stale the cached list can get should a table
// change reach the lobby without an event (Watch drops events for slow
// readers).
const listRecheck = time.Second

// roomList is the room table at one version, as the lobby reads it for
// every LIST and JOIN until the next version: the snapshot's rooms, by ID.
// Each read loop encodes from it what it offers at each local address (see
// offers).
type roomList struct {
	version uint64
	built   time.Time
	rooms   []room.Room // shared with the snapshot: read only
	// codes indexes rooms by join code, and modes the rooms (their
	// places in rooms, in order) by mode, each built on first use.
	codesOnce sync.Once
	codes     map[string]int
	modesOnce sync.Once
	modes     map[string][]int
}

// ofMode returns the places in rl.rooms of the rooms of mode, in id
// order.
func (rl *roomList) ofMode(mode string) []int {
	rl.modesOnce.Do(func() {
		rl.modes = make(map[string][]int)
		for i, r := range rl.rooms {
			rl.modes[r.Mode] = append(rl.modes[r.Mode], i)
		}
	})
	return rl.modes[mode]
}

// findCode returns the room whose join code is code (rl's own: it must
// not be changed).
func (rl *roomList) findCode(code string) (*room.Room, bool) {
	rl.codesOnce.Do(func() {
		rl.codes = make(map[string]int, len(rl.rooms))
		for i, r := range rl.rooms {
			if r.Code != "" {
				rl.codes[r.Code] = i
			}
		}
	})
	i, ok := rl.codes[code]
	if !ok {
		return nil, false
	}
	return &rl.rooms[i], true
}

// find returns the room with id (rl's own: it must not be changed), by
// binary search over the rooms in place: a JOIN copies no room, where
// slices.BinarySearchFunc would hand each room it compares to its
// function by value.
func (rl *roomList) find(id uint32) (*room.Room, bool) {
	i := sort.Search(len(rl.rooms), func(i int) bool { return rl.rooms[i].ID >= id })
	if i == len(rl.rooms) || rl.rooms[i].ID != id {
		return nil, false
	}
	return &rl.rooms[i], true
}

// lists keeps the current roomList.
type lists struct {
	rooms   room.Table
	seen    atomic.Uint64 // newest version announced by Watch
	current atomic.Pointer[roomList]
	mu      sync.Mutex // one rebuild at a time
}

// get returns a roomList no older than the newest announced version (and
// rechecked within listRecheck).
func (ls *lists) get(now time.Time) *roomList {
	if cur := ls.current.Load(); cur != nil && cur.version >= ls.seen.Load() && now.Sub(cur.built) < listRecheck {
		return cur
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	cur := ls.current.Load()
	if cur != nil && cur.version >= ls.seen.Load() && now.Sub(cur.built) < listRecheck {
		return cur // another loop rebuilt it meanwhile
	}
	snap := ls.rooms.List()
	if cur != nil && snap.Version == cur.version {
		// The table did not change after all (changed was told of a
		// change that did not happen): take the hint back, or every
		// request would ask the table again.
		ls.seen.CompareAndSwap(cur.version+1, cur.version)
		next := &roomList{version: cur.version, built: now, rooms: cur.rooms}
		ls.current.Store(next)
		return next
	}
	next := &roomList{version: snap.Version, built: now, rooms: snap.Rooms}
	ls.current.Store(next)
	return next
}

// watch records the versions the supervisor announces until its channel
// closes.
func (ls *lists) watch(events <-chan room.Event) {
	for ev := range events {
		ls.atLeast(ev.Version)
	}
}

// changed says the table changed after the current list was built, by a
// CREATE or JOIN this lobby ran: the next LIST, which may come from the
// same client as soon as it has the answer, must not wait for the change's
// event to reach watch.
func (ls *lists) changed() {
	if cur := ls.current.Load(); cur != nil {
		ls.atLeast(cur.version + 1)
	}
}

// atLeast raises the newest version known to v.
func (ls *lists) atLeast(v uint64) {
	for {
		old := ls.seen.Load()
		if v <= old || ls.seen.CompareAndSwap(old, v) {
			return
		}
	}
}

// appendReply appends the list in h's framing with h's sequence and tick.
func (o *offer) appendReply(b []byte, h packet.Header) []byte {
	start := len(b)
	f := packet.Compact
	if h.Framing == packet.Legacy {
		f = packet.Legacy
	}
	b = append(b, o.frames[f]...)
	packet.SetSeqTick(b[start:], h.Seq, h.Tick)
	return b
}

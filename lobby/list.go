package lobby

import (
	"cmp"
	"slices"
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

// roomList is ROOM_LIST encoded once per version of the room table, in
// both framings with sequence 0 and tick 0; replies copy it and patch the
// sequence (and tick) in.
type roomList struct {
	version uint64
	built   time.Time
	frames  [2][]byte // by packet.Framing
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
	if cur != nil && cur.version == snap.Version {
		next := *cur
		next.built = now
		ls.current.Store(&next)
		return &next
	}
	next := &roomList{version: snap.Version, built: now}
	rooms := listed(snap.Rooms)
	for f := range next.frames {
		m := packet.Message{Header: packet.Header{Framing: packet.Framing(f), Type: packet.RoomList}, Rooms: rooms}
		b, err := m.Append(nil)
		if err != nil {
			// Cannot happen with at most MaxRooms rooms; an empty list
			// is still a truthful answer to send.
			m.Rooms = nil
			b, _ = m.Append(nil)
		}
		next.frames[f] = b
	}
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

// listed converts the room table to list entries. A datagram holds at
// most packet.MaxRooms rooms; beyond that the joinable ones come first,
// because those are the ones a client can do something with.
func listed(rooms []room.Room) []packet.Room {
	if len(rooms) > packet.MaxRooms {
		rooms = slices.Clone(rooms)
		slices.SortStableFunc(rooms, func(a, b room.Room) int {
			return cmp.Compare(rank(a), rank(b))
		})
		rooms = rooms[:packet.MaxRooms]
	}
	out := make([]packet.Room, len(rooms))
	for i, r := range rooms {
		out[i] = packet.Room{
			ID:         r.ID,
			Players:    uint16(min(r.Occupied(), 0xFFFF)),
			MaxPlayers: uint16(min(r.MaxPlayers, 0xFFFF)),
			Port:       r.Port,
			State:      r.State,
		}
	}
	return out
}

// rank orders joinable rooms before the others.
func rank(r room.Room) int {
	if r.Joinable() {
		return 0
	}
	return 1
}

// appendReply appends the list in h's framing with h's sequence and tick.
func (rl *roomList) appendReply(b []byte, h packet.Header) []byte {
	start := len(b)
	f := packet.Compact
	if h.Framing == packet.Legacy {
		f = packet.Legacy
	}
	b = append(b, rl.frames[f]...)
	packet.SetSeqTick(b[start:], h.Seq, h.Tick)
	return b
}

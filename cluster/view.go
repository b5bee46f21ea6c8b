package cluster

import (
	"cmp"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/foyerlobby/foyer/room"
)

// view is this host's copy of the cluster bucket: every other host, alive
// or not, and its rooms. The rooms of live hosts are the visible ones;
// List merges them with the local table. It also keeps what the bucket
// says of this host's own rooms, which a (re)connecting host compares its
// table with. Every method is quick and in memory.
//
// What another host writes is taken at its word only as far as it can be
// checked: a host lists only the rooms of the range of ids it holds (its
// heartbeat names it, and a range held by a live host is not taken by a
// second: first seen, first served), so no host can list, or take JOINs
// for, another's rooms; and placement counts it as able to run no more
// than maxRooms rooms, those it lists included, whatever free capacity it
// claims.
type view struct {
	me       string
	addr     netip.Addr // this host's public address
	ttl      time.Duration
	maxRooms int // the rooms a host may run, as placement counts them; 0: unbounded

	mu    sync.Mutex
	ver   uint64 // bumped on every change of the visible rooms
	gen   uint64 // the watch generation (one per connection)
	hosts map[string]*hostState
	// ranges are the ranges of room ids of the live hosts, by range.
	ranges map[int]string
	rooms  map[uint32]*roomState // other hosts' rooms
	own    map[uint32]ownRoom    // this host's rooms, as stored
	// arrivals are closed when a room placed elsewhere by this host
	// arrives.
	arrivals map[uint32][]chan struct{}
	// sorted is the visible rooms by id, rebuilt when stale.
	sorted   []room.Room
	sortedOK bool
}

type hostState struct {
	rec   hostRecord
	seen  time.Time // when its last heartbeat arrived
	alive bool
	gen   uint64
	rooms map[uint32]struct{}
}

type roomState struct {
	host string
	rec  roomRecord
	gen  uint64
}

type ownRoom struct {
	value []byte
	gen   uint64
}

func newView(me string, addr netip.Addr, ttl time.Duration, maxRooms int) *view {
	return &view{me: me, addr: addr, ttl: ttl, maxRooms: maxRooms,
		hosts: make(map[string]*hostState), ranges: make(map[int]string), rooms: make(map[uint32]*roomState),
		own: make(map[uint32]ownRoom), arrivals: make(map[uint32][]chan struct{})}
}

// shows reports whether room id is one host h lists: h is alive and id is
// in its range.
func (h *hostState) shows(id uint32) bool {
	return h != nil && h.alive && int(id>>rangeBits) == h.rec.Range
}

// begin starts a new watch generation: what the coming replay does not
// repeat is gone from the bucket.
func (v *view) begin() {
	v.mu.Lock()
	v.gen++
	v.mu.Unlock()
}

// apply takes one entry of the watch into the view and returns the
// events it makes; malformed reports an entry that could not be read.
// Entries of a replay count as heartbeats as old as they are (at most
// the TTL), so a host dead for long does not come back for a moment.
func (v *view) apply(e jetstream.KeyValueEntry, now time.Time, replay bool) (evs []room.Event, malformed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	del := e.Operation() != jetstream.KeyValuePut
	if name, ok := cutHostKey(e.Key()); ok {
		if name == v.me {
			return nil, false
		}
		if del {
			return v.dropHost(name), false
		}
		var rec hostRecord
		if json.Unmarshal(e.Value(), &rec) != nil || !rec.valid() {
			return nil, true
		}
		seen := now
		if replay {
			seen = now.Add(-min(max(now.Sub(e.Created()), 0), v.ttl))
		}
		return v.heartbeat(name, rec.withAddr(), seen)
	}
	host, id, ok := parseRoomKey(e.Key())
	if !ok {
		return nil, true
	}
	if host == v.me {
		if del {
			delete(v.own, id)
		} else {
			v.own[id] = ownRoom{value: e.Value(), gen: v.gen}
		}
		return nil, false
	}
	if del {
		return v.dropRoom(id, host, ""), false
	}
	rec, err := decodeRoom(e.Value())
	if err != nil || rec.ID != id {
		return nil, true
	}
	return v.putRoom(host, rec)
}

// withAddr is h with its address unmapped, as compared with others.
func (h hostRecord) withAddr() hostRecord {
	h.Addr = h.Addr.Unmap()
	return h
}

func cutHostKey(key string) (string, bool) {
	name, ok := strings.CutPrefix(key, hostsPrefix)
	return name, ok && CheckHost(name) == nil
}

// host returns the state of host name, made if new. v.mu is held.
func (v *view) host(name string) *hostState {
	h := v.hosts[name]
	if h == nil {
		h = &hostState{rooms: make(map[uint32]struct{})}
		v.hosts[name] = h
	}
	return h
}

// heartbeat records a heartbeat of host name seen at seen; refused, when
// it claims a range of ids another live host holds. v.mu is held.
func (v *view) heartbeat(name string, rec hostRecord, seen time.Time) (evs []room.Event, refused bool) {
	if holder, ok := v.ranges[rec.Range]; ok && holder != name && v.hosts[holder].alive {
		return nil, true
	}
	h := v.host(name)
	if h.alive && h.rec.Range != rec.Range {
		evs = v.dropHost(name) // its rooms were those of another range
	}
	h.gen = v.gen
	moved := h.rec.Addr != rec.Addr
	h.rec = rec
	if seen.After(h.seen) {
		h.seen = seen
	}
	switch {
	case !h.alive && seen.Add(v.ttl).After(time.Now()):
		h.alive = true
		v.ranges[rec.Range] = name
		return append(evs, v.hostEvents(name, h, room.Created, "")...), false
	case h.alive && moved:
		return v.hostEvents(name, h, room.Changed, ""), false
	}
	return evs, false
}

// dropHost marks host name gone: it said goodbye, or its heartbeat key
// went. v.mu is held.
func (v *view) dropHost(name string) []room.Event {
	h := v.hosts[name]
	if h == nil || !h.alive {
		return nil
	}
	evs := v.hostEvents(name, h, room.Reaped, room.Lost)
	h.alive = false
	if v.ranges[h.rec.Range] == name {
		delete(v.ranges, h.rec.Range)
	}
	return evs
}

// hostEvents makes one event of kind for each room of h, which became
// visible or not, and marks the view changed. v.mu is held.
func (v *view) hostEvents(name string, h *hostState, kind room.EventKind, cause room.Cause) []room.Event {
	v.changed()
	evs := make([]room.Event, 0, len(h.rooms))
	for id := range h.rooms {
		if h.shows(id) {
			evs = append(evs, room.Event{Kind: kind, Room: v.rooms[id].rec.row(name, v.at(h)), Cause: cause})
		}
	}
	return evs
}

// at is where h's rooms are listed: no address when players reach them
// where they reach this host (see the package doc).
func (v *view) at(h *hostState) netip.Addr {
	if h.rec.Addr == v.addr {
		return netip.Addr{}
	}
	return h.rec.Addr
}

func (v *view) changed() {
	v.ver++
	v.sortedOK = false
}

// putRoom records a room of host; an id another host held moves to this
// one, unless that host lists it (it is alive, and the id in its range):
// then the record is refused. v.mu is held.
func (v *view) putRoom(host string, rec roomRecord) (evs []room.Event, refused bool) {
	kind := room.Created
	if old := v.rooms[rec.ID]; old != nil {
		if old.host != host {
			if v.hosts[old.host].shows(rec.ID) {
				return nil, true
			}
			v.dropRoom(rec.ID, old.host, "")
		} else {
			kind = room.Changed
			if old.rec.equal(rec) {
				old.gen = v.gen
				return nil, false
			}
		}
	}
	h := v.host(host)
	h.rooms[rec.ID] = struct{}{}
	v.rooms[rec.ID] = &roomState{host: host, rec: rec, gen: v.gen}
	if !h.shows(rec.ID) {
		return nil, h.alive // a live host's room outside its range is refused, and kept out of every list
	}
	for _, ch := range v.arrivals[rec.ID] {
		close(ch)
	}
	delete(v.arrivals, rec.ID)
	v.changed()
	return []room.Event{{Kind: kind, Room: rec.row(host, v.at(h))}}, false
}

// dropRoom forgets room id of host. v.mu is held.
func (v *view) dropRoom(id uint32, host string, cause room.Cause) []room.Event {
	r := v.rooms[id]
	if r == nil || r.host != host {
		return nil
	}
	delete(v.rooms, id)
	h := v.hosts[host]
	delete(h.rooms, id)
	if !h.shows(id) {
		return nil
	}
	v.changed()
	return []room.Event{{Kind: room.Reaped, Room: r.rec.row(host, v.at(h)), Cause: cause}}
}

// replayed ends the replay of the current generation: hosts and rooms it
// did not repeat are no longer in the bucket.
func (v *view) replayed() []room.Event {
	v.mu.Lock()
	defer v.mu.Unlock()
	var evs []room.Event
	for id, r := range v.rooms {
		if r.gen < v.gen {
			evs = append(evs, v.dropRoom(id, r.host, "")...)
		}
	}
	for name, h := range v.hosts {
		if h.gen < v.gen {
			evs = append(evs, v.dropHost(name)...)
		}
	}
	for id, r := range v.own {
		if r.gen < v.gen {
			delete(v.own, id)
		}
	}
	return evs
}

// expire marks hosts silent for the TTL gone.
func (v *view) expire(now time.Time) []room.Event {
	v.mu.Lock()
	defer v.mu.Unlock()
	var evs []room.Event
	for name, h := range v.hosts {
		if h.alive && now.Sub(h.seen) > v.ttl {
			evs = append(evs, v.dropHost(name)...)
		}
	}
	return evs
}

// version is the view's version.
func (v *view) version() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ver
}

// visible returns the view's version and the rooms of live hosts by id;
// the slice is shared and must not be modified.
func (v *view) visible() (uint64, []room.Room) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.sortedOK {
		v.sorted = make([]room.Room, 0, len(v.rooms))
		for name, h := range v.hosts {
			if !h.alive {
				continue
			}
			at := v.at(h)
			for id := range h.rooms {
				if h.shows(id) {
					v.sorted = append(v.sorted, v.rooms[id].rec.row(name, at))
				}
			}
		}
		slices.SortFunc(v.sorted, func(a, b room.Room) int { return cmp.Compare(a.ID, b.ID) })
		v.sortedOK = true
	}
	return v.ver, v.sorted
}

// owner returns the live host of room id, if it is another host's.
func (v *view) owner(id uint32) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.rooms[id]
	if r == nil || !v.hosts[r.host].shows(id) {
		return "", false
	}
	return r.host, true
}

// codeOwner returns the host of the room whose join code is code, if a
// live host lists one. It walks the rooms: codes are looked up per JOIN
// by code and per new code, not per datagram.
func (v *view) codeOwner(code string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, r := range v.rooms {
		if r.rec.Code == code && v.hosts[r.host].shows(id) {
			return r.host, true
		}
	}
	return "", false
}

// candidate is a host a room could be placed on.
type candidate struct {
	host string
	free int
}

// candidates returns the live hosts with free capacity, as much as each
// can really hold (see free).
func (v *view) candidates() []candidate {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []candidate
	for name, h := range v.hosts {
		if free := v.free(h); h.alive && free > 0 {
			out = append(out, candidate{name, free})
		}
	}
	return out
}

// free is the capacity placement counts h as having: what it claims,
// but no more than maxRooms less the rooms of its own it lists (the ones
// it runs: registered servers take no room). v.mu is held.
func (v *view) free(h *hostState) int {
	if v.maxRooms <= 0 {
		return h.rec.Free
	}
	runs := 0
	for id := range h.rooms {
		if h.shows(id) && v.rooms[id].rec.Source.Own() {
			runs++
		}
	}
	return max(0, min(h.rec.Free, v.maxRooms-runs))
}

// took counts a room placed on host until its next heartbeat says how
// free it is, so a burst of CREATEs does not all go to one host.
func (v *view) took(host string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if h := v.hosts[host]; h != nil && h.rec.Free > 0 {
		h.rec.Free--
	}
}

// ownStored returns a copy of what the bucket holds of this host's rooms.
func (v *view) ownStored() map[uint32][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[uint32][]byte, len(v.own))
	for id, r := range v.own {
		out[id] = r.value
	}
	return out
}

// counts returns how many other hosts are alive and how many rooms they
// list.
func (v *view) counts() (hosts, rooms int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, h := range v.hosts {
		if h.alive {
			hosts++
			for id := range h.rooms {
				if h.shows(id) {
					rooms++
				}
			}
		}
	}
	return hosts, rooms
}

// row is rec as a room of host, listed here.
func (v *view) row(host string, rec roomRecord) room.Room {
	v.mu.Lock()
	defer v.mu.Unlock()
	at := netip.Addr{}
	if h := v.hosts[host]; h != nil {
		at = v.at(h)
	}
	return rec.row(host, at)
}

// arrival returns a channel closed once room id of another host is in
// the view (at once if it is). A placing host waits on it so that the
// room it hands out is in its own listings too.
func (v *view) arrival(id uint32) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	ch := make(chan struct{})
	if v.rooms[id] != nil {
		close(ch)
		return ch
	}
	v.arrivals[id] = append(v.arrivals[id], ch)
	return ch
}

// forget drops the waiters for room id that gave up.
func (v *view) forget(id uint32) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.arrivals, id)
}

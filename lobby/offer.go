package lobby

import (
	"cmp"
	"hash/maphash"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// offered reports whether a client that reached the lobby at local can
// play in r: the native protocol hands out a port, not an address, so the
// client goes to local at r's port. That holds for the host's own rooms
// (no Host) and for rooms whose Host is local; every other room stays in
// the listings that carry addresses (GG2, GunZ, Teeworlds). A registered
// room whose address nothing proved (Unchecked) is never offered: a
// datagram may carry any source, the lobby's own address included.
// Private rooms are joined by code (package ext) and listed nowhere.
func offered(r *room.Room, local netip.Addr) bool {
	return !r.Private && reachable(r, local)
}

// reachable reports whether a client at local plays in r at local's
// address: offered, private or not.
func reachable(r *room.Room, local netip.Addr) bool {
	if r.Unchecked {
		return false
	}
	return !r.Host.IsValid() || (local.IsValid() && r.Host.Unmap() == local)
}

// maxLocals bounds the lists a read loop keeps, one per local address its
// datagrams were sent to: one for a socket bound to an address, the host's
// addresses (and broadcast ones) for a wildcard socket. Past it the lists
// are dropped and rebuilt as asked for.
const maxLocals = 16

// offers are one read loop's encoded lists, by local address, for one
// version of the table. Only its loop uses it.
type offers struct {
	version uint64
	byLocal map[netip.Addr]*offer
	// last is the offer get returned last, at lastLocal: a socket bound
	// to one address asks for the same one every time.
	last      *offer
	lastLocal netip.Addr
	keyed     []packet.Room // scratch for lists under guard
	page      []ext.Entry   // scratch for EXT_ROOMS pages
}

// offer is ROOM_LIST as a client at one local address sees it: the rooms
// offered there, at most packet.MaxRooms (packet.MaxLegacyListRooms in
// the original game's framing), joinable first when there are more,
// encoded once in both framings with sequence and tick 0.
type offer struct {
	rooms  []packet.Room
	frames [2][]byte // by packet.Framing
}

// in returns the rooms o lists in framing f.
func (o *offer) in(f packet.Framing) []packet.Room {
	if f == packet.Legacy {
		return o.rooms[:min(len(o.rooms), packet.MaxLegacyListRooms)]
	}
	return o.rooms
}

// get returns the offer of table rl at local, built on first use.
func (os *offers) get(rl *roomList, local netip.Addr) *offer {
	if os.last != nil && os.version == rl.version && os.lastLocal == local {
		return os.last
	}
	if os.version != rl.version || os.byLocal == nil || len(os.byLocal) >= maxLocals {
		os.version, os.byLocal = rl.version, make(map[netip.Addr]*offer)
	}
	if o := os.byLocal[local]; o != nil {
		os.last, os.lastLocal = o, local
		return o
	}
	o := &offer{rooms: listed(rl.rooms, local)}
	for f := range o.frames {
		o.frames[f] = appendList(nil, packet.Header{Framing: packet.Framing(f)}, o.in(packet.Framing(f)))
	}
	os.byLocal[local] = o
	os.last, os.lastLocal = o, local
	return o
}

// appendList appends ROOM_LIST of rooms with h's framing, sequence and
// tick.
func appendList(b []byte, h packet.Header, rooms []packet.Room) []byte {
	h.Type = packet.RoomList
	m := packet.Message{Header: h, Rooms: rooms}
	out, err := m.Append(b)
	if err != nil {
		// Cannot happen with at most MaxRooms rooms; an empty list is
		// still a truthful answer.
		m.Rooms = nil
		out, _ = m.Append(b)
	}
	return out
}

// appendReply appends o as the answer to a LIST with header h. With a
// non-zero mask (the seat guard is on) every room id is masked for this
// client alone (see cookies), which costs an encoding per reply.
func (os *offers) appendReply(b []byte, o *offer, h packet.Header, mask uint32) []byte {
	if mask == 0 {
		return o.appendReply(b, h)
	}
	os.keyed = append(os.keyed[:0], o.in(h.Framing)...)
	for i := range os.keyed {
		os.keyed[i].ID ^= mask
	}
	return appendList(b, h, os.keyed)
}

// listed converts the rooms offered at local to list entries. A datagram
// holds at most packet.MaxRooms rooms, and the original client reads at
// most packet.MaxLegacyListRooms; beyond that the joinable ones come first,
// because those are the ones a client can do something with.
func listed(rooms []room.Room, local netip.Addr) []packet.Room {
	var here []room.Room
	for i := range rooms {
		if offered(&rooms[i], local) {
			here = append(here, rooms[i])
		}
	}
	if len(here) > packet.MaxLegacyListRooms {
		slices.SortStableFunc(here, func(a, b room.Room) int { return cmp.Compare(rank(a), rank(b)) })
		here = here[:min(len(here), packet.MaxRooms)]
	}
	out := make([]packet.Room, len(here))
	for i, r := range here {
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

// Seat guard. A JOIN_SUCCESS holds a seat for seat_ttl whether or not its
// requester ever receives it, so JOINs from forged addresses can keep a
// room full for next to nothing. The lobby cannot tell a forged source
// from a real one by anything a JOIN says, except one thing: a room id it
// could only have learnt from a listing sent to its address. So while the
// guard is on (a JOIN was refused for a room full of held seats, or the
// lobby is flooded) every list shows each client its room ids masked with
// a secret function of the client's IP, and a JOIN naming a masked id
// proves its sender saw that list (room.SawListing): it may take the seat
// of a JOIN that proved nothing. Unmasked ids are still accepted, as
// proving nothing; masked ids are accepted whether or not the guard is
// still on. Clients that learn ids from ROOM_LIST and join with them, like
// the original game's, never notice; an id read off one client's list
// means nothing to another client while the guard is on.
type cookies struct {
	seed  maphash.Seed
	until atomic.Int64 // Unix ns until which the guard is on
}

// guardHold is how long the seat guard stays on after its last trigger.
const guardHold = time.Minute

func newCookies() *cookies { return &cookies{seed: maphash.MakeSeed()} }

// trigger turns the guard on, or keeps it on, from now.
func (c *cookies) trigger(now time.Time) {
	until := now.Add(guardHold).UnixNano()
	if c.until.Load() < until {
		c.until.Store(until)
	}
}

// on reports whether the guard is on at now.
func (c *cookies) on(now time.Time) bool { return now.UnixNano() < c.until.Load() }

// mask is the client at ip's mask of room ids: never 0, so that a masked
// list never shows the real ids.
func (c *cookies) mask(ip netip.Addr) uint32 {
	a := ip.Unmap().As16()
	return uint32(maphash.Bytes(c.seed, a[:])) | 1<<31
}

// resolve finds the room a JOIN from src, sent to local, names by id: as
// listed, proving nothing, or masked for src, proving src saw a list. The
// room is rl's own: it must not be changed.
func (c *cookies) resolve(rl *roomList, id uint32, src, local netip.Addr) (*room.Room, room.Proof, bool) {
	if r, ok := rl.find(id); ok && offered(r, local) {
		return r, room.Unproven, true
	}
	if r, ok := rl.find(id ^ c.mask(src)); ok && offered(r, local) {
		return r, room.SawListing, true
	}
	return nil, room.Unproven, false
}

package roomtable

import (
	"net/netip"
	"slices"
	"time"

	"github.com/foyerlobby/foyer/room"
)

// seats are the places held in one room for players on their way in.
// Every seat lives SeatTTL from when it was last taken or refreshed, so the
// order of those moments is the order of expiry: the seats are kept in it,
// in a list, and expiring them, turning the oldest into players or the
// oldest of one IP into its player are all O(1) per seat concerned, however
// many seats a room holds. seats are guarded by Table.mu.
type seats struct {
	byPlayer map[netip.AddrPort]*seat
	all      chain                // every seat, oldest first
	byIP     map[netip.Addr]chain // the seats of each IP, oldest first
	unproven chain                // the seats of Unproven JOINs, oldest first
	serials  uint32               // the last seat number given out
}

// seat is one held place, linked into the room's chain and its IP's.
type seat struct {
	player    netip.AddrPort
	ip        netip.Addr // player's, unmapped: how a connecting player is matched
	expires   time.Time
	proven    bool   // held by a JOIN that proved its sender real
	creator   bool   // held by the CREATE that made the room: never displaced
	serial    uint32 // the seat's number in its room, which its token names
	all, mine links
	doubt     links // in unproven, while neither proven nor the creator's
}

type links struct{ prev, next *seat }

// chain is a doubly linked list of seats threaded through one of their
// links fields (which one, the caller says).
type chain struct {
	head, tail *seat
	n          int
}

func (c *chain) push(s *seat, l func(*seat) *links) {
	c.n++
	*l(s) = links{prev: c.tail}
	if c.tail != nil {
		l(c.tail).next = s
	} else {
		c.head = s
	}
	c.tail = s
}

func (c *chain) remove(s *seat, l func(*seat) *links) {
	c.n--
	ls := l(s)
	if ls.prev != nil {
		l(ls.prev).next = ls.next
	} else {
		c.head = ls.next
	}
	if ls.next != nil {
		l(ls.next).prev = ls.prev
	} else {
		c.tail = ls.prev
	}
	*ls = links{}
}

func allLinks(s *seat) *links   { return &s.all }
func mineLinks(s *seat) *links  { return &s.mine }
func doubtLinks(s *seat) *links { return &s.doubt }

// len is the number of seats held.
func (ss *seats) len() int { return len(ss.byPlayer) }

// find returns the seat player holds, or nil.
func (ss *seats) find(player netip.AddrPort) *seat { return ss.byPlayer[player] }

// refreshBy is when the room's process must know of a JOIN (proven or
// not) of the player holding s (nil for none) at the latest: the expiry of
// its seat, if the JOIN only refreshes it, and the zero time (at once) if
// it takes a seat or proves one.
func refreshBy(s *seat, proven bool) time.Time {
	if s != nil && (s.proven || !proven) {
		return s.expires
	}
	return time.Time{}
}

// refreshStep is how much of a seat's time may pass before a JOIN that
// changes nothing else refreshes it (capped at a tenth of the seat's
// time): one repeated sooner finds the seat as it is, so that a flood of
// repeated JOINs costs a table lookup each, not the relinking of a seat.
const refreshStep = time.Second

// current reports whether a JOIN (proven or not) at now would change
// nothing of s, a seat held for ttl: taken or refreshed less than
// refreshStep ago, and proven if the JOIN is.
func (s *seat) current(now time.Time, ttl time.Duration, proven bool) bool {
	return s.expires.Sub(now) > ttl-min(refreshStep, ttl/10) && (s.proven || !proven)
}

// ofIP is how many seats ip holds.
func (ss *seats) ofIP(ip netip.Addr) int { return ss.byIP[ip.Unmap()].n }

// holdsCreator reports whether the creator's seat is held still.
func (ss *seats) holdsCreator() bool {
	_, ok := ss.creator()
	return ok
}

// creator returns the player of the creator's seat, if it is held still.
// It walks the seats, which SeatsPerAddress and the room's size bound.
func (ss *seats) creator() (netip.AddrPort, bool) {
	for s := ss.all.head; s != nil; s = s.all.next {
		if s.creator {
			return s.player, true
		}
	}
	return netip.AddrPort{}, false
}

// seatKind says what kind of JOIN holds a seat.
type seatKind struct {
	proven  bool   // the sender proved it is real
	creator bool   // the CREATE that made the room
	serial  uint32 // the seat's number, kept (an adopted seat, a player away); 0: a new one
}

// hold takes a seat for player until expires, or refreshes the one it
// holds (moving it to the young end), and reports whether it is new. A
// seat once proven, or the creator's, stays so.
func (ss *seats) hold(player netip.AddrPort, expires time.Time, k seatKind) bool {
	if ss.byPlayer == nil {
		ss.byPlayer = make(map[netip.AddrPort]*seat)
		ss.byIP = make(map[netip.Addr]chain)
	}
	s, ok := ss.byPlayer[player]
	if ok {
		ss.unlink(s)
	} else {
		s = &seat{player: player, ip: player.Addr().Unmap(), serial: k.serial}
		if s.serial == 0 {
			ss.serials++
			s.serial = ss.serials
		}
		ss.serials = max(ss.serials, s.serial)
		ss.byPlayer[player] = s
	}
	s.expires = expires
	s.proven = s.proven || k.proven
	s.creator = s.creator || k.creator
	ss.all.push(s, allLinks)
	mine := ss.byIP[s.ip]
	mine.push(s, mineLinks)
	ss.byIP[s.ip] = mine
	if s.doubtful() {
		ss.unproven.push(s, doubtLinks)
	}
	return !ok
}

// doubtful reports whether s may be displaced by a proven JOIN.
func (s *seat) doubtful() bool { return !s.proven && !s.creator }

// unlink takes s out of its chains, keeping it in byPlayer.
func (ss *seats) unlink(s *seat) {
	if s.doubtful() {
		ss.unproven.remove(s, doubtLinks)
	}
	ss.all.remove(s, allLinks)
	mine := ss.byIP[s.ip]
	mine.remove(s, mineLinks)
	if mine.head == nil {
		delete(ss.byIP, s.ip)
	} else {
		ss.byIP[s.ip] = mine
	}
}

func (ss *seats) drop(s *seat) {
	ss.unlink(s)
	delete(ss.byPlayer, s.player)
}

// dropOldest drops up to n seats, the oldest first, and says how many.
func (ss *seats) dropOldest(n int) int {
	dropped := 0
	for ; dropped < n && ss.all.head != nil; dropped++ {
		ss.drop(ss.all.head)
	}
	return dropped
}

// dropOldestUnproven drops the oldest seat an Unproven JOIN holds, if any:
// never a proven one, nor the creator's.
func (ss *seats) dropOldestUnproven() bool {
	if ss.unproven.head == nil {
		return false
	}
	ss.drop(ss.unproven.head)
	return true
}

// dropOldestOf drops the oldest seat held from ip, if any.
func (ss *seats) dropOldestOf(ip netip.Addr) bool {
	mine, ok := ss.byIP[ip.Unmap()]
	if !ok {
		return false
	}
	ss.drop(mine.head)
	return true
}

// dropSerial drops the seat numbered serial, if it is held, and says so.
// It walks the seats, which SeatsPerAddress and the room's size bound.
func (ss *seats) dropSerial(serial uint32) bool {
	for s := ss.all.head; s != nil; s = s.all.next {
		if s.serial == serial {
			ss.drop(s)
			return true
		}
	}
	return false
}

// serialOf is the number of the seat player holds; 0 if none.
func (ss *seats) serialOf(player netip.AddrPort) uint32 {
	if s, ok := ss.byPlayer[player]; ok {
		return s.serial
	}
	return 0
}

// expire drops the seats expired at now and says how many.
func (ss *seats) expire(now time.Time) int {
	n := 0
	for ss.all.head != nil && now.After(ss.all.head.expires) {
		ss.drop(ss.all.head)
		n++
	}
	return n
}

// list returns the seats, oldest first, for the room's instance to keep.
func (ss *seats) list() []room.Seat {
	out := make([]room.Seat, 0, len(ss.byPlayer))
	for s := ss.all.head; s != nil; s = s.all.next {
		out = append(out, room.Seat{Player: s.player, Expires: s.expires, Proven: s.proven, Creator: s.creator, Serial: s.serial})
	}
	return out
}

// restore holds the seats a room's instance kept, as list returned them,
// except those expired at now.
func (ss *seats) restore(kept []room.Seat, now time.Time) {
	slices.SortStableFunc(kept, func(a, b room.Seat) int { return a.Expires.Compare(b.Expires) })
	for _, s := range kept {
		if s.Expires.After(now) {
			ss.hold(s.Player, s.Expires, seatKind{proven: s.Proven, creator: s.Creator, serial: s.Serial})
		}
	}
}

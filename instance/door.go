package instance

import (
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/instance/instancepb"
)

// A room admits only the players its lobby seated. The host keeps the
// room's seats in the instance (Keep, on every change); the door stands
// between the room's socket and the game: a datagram from an address the
// door has not admitted reaches the game only if its IP holds an unexpired
// seat, and admitting it takes that seat up. Everything else is dropped
// unanswered (counted): no slot, no reply, whatever the game would have
// made of it. A game cannot forget the door, since it never sees the
// socket without it.
//
// A seat is bound to the IP its JOIN came from, the most a seed client
// carries; a seat record keeps the player's whole address and expiry, so
// that what a client can carry beyond that (a token) has a place to be
// checked.
//
// The lobby answers a JOIN as soon as its table holds the seat, and the
// seat reaches the room a moment later: a player fast enough to knock
// first would be turned away until it tries again. So the door keeps the
// last few refused datagrams (knocks) for a moment, and when a seat for
// one of their senders arrives, hands the knock to the game as if it had
// just come, and wakes the game's read to take it.

// Bounds of the door's memory, whatever is sent to the room's port.
const (
	// maxKnocks refused datagrams are kept, one per sender, the newest
	// replacing the oldest.
	maxKnocks = 8
	// maxKnockBytes of each are kept: enough for a game's first message
	// (a seed HELLO is 8 or 17 bytes), not for a flood's payload.
	maxKnockBytes = 256
	// knockTTL is how long a knock waits for its sender's seat.
	knockTTL = 2 * time.Second
	// guestTTL is how long an admitted address may stay unclaimed by
	// the game (no PlayerConnected from its IP) before the door forgets
	// it; the seat it took is gone for good.
	guestTTL = 10 * time.Second
)

// door is a room's door. It is safe for concurrent use.
type door struct {
	mu     sync.Mutex
	seats  map[netip.Addr][]heldSeat // held seats by IP, oldest expiry first
	taken  map[heldSeat]struct{}     // seats this door took up, until the host drops them
	guests map[netip.AddrPort]*guest // admitted addresses
	knocks []knock                   // refused lately, oldest first
	wake   func()                    // wakes a blocked read to take a knock
	// refused counts datagrams turned away; admitted, the seats taken.
	refused, admitted uint64
}

// heldSeat is one seat the host keeps for a player on the way in.
type heldSeat struct {
	player  netip.AddrPort // where the JOIN came from
	expires int64          // Unix ms, as the host keeps it
}

// guest is an admitted address.
type guest struct {
	ip      netip.Addr
	since   time.Time // admitted
	last    time.Time // last heard from
	playing bool      // the game reported a player from ip since it came
}

// knock is a refused datagram, kept for a moment.
type knock struct {
	from netip.AddrPort
	at   time.Time
	n    int // bytes in b the datagram had (at most maxKnockBytes kept)
	b    [maxKnockBytes]byte
}

func newDoor() *door {
	return &door{
		seats:  make(map[netip.Addr][]heldSeat),
		taken:  make(map[heldSeat]struct{}),
		guests: make(map[netip.AddrPort]*guest),
	}
}

// admit reports whether a datagram from from may reach the game at now:
// from is admitted already, or its IP holds a seat, which it takes up.
// A refused datagram b is kept as a knock.
func (d *door) admit(from netip.AddrPort, b []byte, now time.Time) bool {
	from = unmapPort(from)
	d.mu.Lock()
	defer d.mu.Unlock()
	if g, ok := d.guests[from]; ok {
		g.last = now
		return true
	}
	if d.takeSeat(from, now) {
		return true
	}
	d.refused++
	d.keepKnock(from, b, now)
	return false
}

// takeSeat admits from if its IP holds an unexpired seat, taking up the
// oldest. d.mu is held.
func (d *door) takeSeat(from netip.AddrPort, now time.Time) bool {
	ip := from.Addr()
	held := d.seats[ip]
	ms := now.UnixMilli()
	for len(held) > 0 && held[0].expires <= ms {
		held = held[1:]
	}
	if len(held) == 0 {
		delete(d.seats, ip)
		return false
	}
	d.taken[held[0]] = struct{}{}
	if held = held[1:]; len(held) == 0 {
		delete(d.seats, ip)
	} else {
		d.seats[ip] = held
	}
	d.expireGuests(now)
	d.guests[from] = &guest{ip: ip, since: now, last: now}
	d.admitted++
	return true
}

// expireGuests forgets the admitted addresses the game never claimed. d.mu
// is held; it runs on admissions only, which seats bound.
func (d *door) expireGuests(now time.Time) {
	for a, g := range d.guests {
		if !g.playing && now.Sub(g.since) > guestTTL {
			delete(d.guests, a)
		}
	}
}

// keepKnock keeps b from from, one knock per sender. d.mu is held.
func (d *door) keepKnock(from netip.AddrPort, b []byte, now time.Time) {
	for i := range d.knocks {
		if d.knocks[i].from == from {
			d.knocks = append(d.knocks[:i], d.knocks[i+1:]...)
			break
		}
	}
	if len(d.knocks) == maxKnocks {
		d.knocks = d.knocks[1:]
	}
	k := knock{from: from, at: now}
	k.n = copy(k.b[:], b)
	d.knocks = append(d.knocks, k)
}

// seat takes the seats the host keeps for the room, as it sends them on
// every change, and reports whether a kept knock's sender holds one now.
// Seats the door took up stay taken until the host no longer lists them.
func (d *door) seat(seats []*instancepb.Seat, now time.Time) bool {
	held := make(map[netip.Addr][]heldSeat, len(seats))
	still := make(map[heldSeat]struct{}, len(d.taken))
	ms := now.UnixMilli()
	for _, s := range seats {
		player, err := netip.ParseAddrPort(s.GetPlayer())
		if err != nil || s.GetExpiresUnixMs() <= ms {
			continue
		}
		h := heldSeat{player: unmapPort(player), expires: s.GetExpiresUnixMs()}
		if _, ok := d.taken[h]; ok {
			still[h] = struct{}{}
			continue
		}
		ip := h.player.Addr()
		held[ip] = append(held[ip], h) // the host sends them oldest first
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seats, d.taken = held, still
	for _, k := range d.knocks {
		if _, ok := held[k.from.Addr()]; ok && now.Sub(k.at) < knockTTL {
			return true
		}
	}
	return false
}

// held reports whether ip holds an unexpired seat not taken up at now, and
// until when (its latest seat).
func (d *door) held(ip netip.Addr, now time.Time) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	held := d.seats[ip.Unmap()]
	if len(held) == 0 || held[len(held)-1].expires <= now.UnixMilli() {
		return time.Time{}, false
	}
	return time.UnixMilli(held[len(held)-1].expires), true
}

// knocked returns a kept knock whose sender holds a seat now, admitting
// it: its bytes copied into p, their length and its sender.
func (d *door) knocked(p []byte, now time.Time) (int, netip.AddrPort, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := 0; i < len(d.knocks); i++ {
		k := &d.knocks[i]
		if now.Sub(k.at) >= knockTTL {
			continue
		}
		if !d.takeSeat(k.from, now) {
			continue
		}
		from, n := k.from, copy(p, k.b[:min(k.n, maxKnockBytes)])
		d.knocks = append(d.knocks[:i], d.knocks[i+1:]...)
		return n, from, true
	}
	return 0, netip.AddrPort{}, false
}

// player hears of the game's players coming (delta 1) and going (-1) from
// ip. A coming player claims the address of its IP admitted last and not
// claimed yet; a going one gives back the claimed address of its IP heard
// from least lately (the player that left stopped sending), which must be
// seated again to come back.
func (d *door) player(ip netip.Addr, delta int) {
	ip = ip.Unmap()
	d.mu.Lock()
	defer d.mu.Unlock()
	var pick *guest
	var at netip.AddrPort
	for a, g := range d.guests {
		switch {
		case g.ip != ip || g.playing != (delta < 0):
		case pick == nil, delta > 0 && g.since.After(pick.since), delta < 0 && g.last.Before(pick.last):
			pick, at = g, a
		}
	}
	switch {
	case pick == nil:
	case delta > 0:
		pick.playing = true
	default:
		delete(d.guests, at)
	}
}

// refusedCount is how many datagrams the door turned away so far.
func (d *door) refusedCount() uint64 {
	refused, _ := d.counts()
	return refused
}

// counts returns the datagrams refused and the seats taken up so far.
func (d *door) counts() (refused, admitted uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refused, d.admitted
}

// unmapPort is ap with an IPv4-mapped address unmapped, so that one
// player is one key however its datagrams arrived.
func unmapPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

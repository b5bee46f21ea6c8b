package instance

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/packet/ext"
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
// carries. A client of the extension carries more: the seat's token, which
// the host signed with this room's key. It presents it (EXT_PRESENT)
// before its first game message, and the door checks it offline: the key,
// the room, the expiry, and that no one else holds the seat. A token seats
// its holder wherever it comes from, and seats it again when it comes back
// from another address (a new NAT port, another network): while the game
// still has it, the game is told to follow it (Reconnecter); once the game
// has let it go, within reconnect_grace.
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

// maxSeatKeys is how many of the host's keys a room keeps: its epochs, the
// newest first, so that the tokens of a host that ran before an upgrade
// still hold.
const maxSeatKeys = 4

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

	// The seat tokens': the room, its keys by epoch (newest first), how
	// long a lost token holder's seat is kept.
	room  uint32
	keys  []seatKey
	grace time.Duration
	// bySeat are the admitted guests by seat number; used, the numbers
	// ever admitted; away, the seats of token holders the game let go.
	bySeat map[uint32]*guest
	used   map[uint32]struct{}
	away   map[uint32]awaySeat
}

// seatKey is one of the room's token keys.
type seatKey struct {
	epoch  uint32
	signer *ext.Signer // used under door.mu only
}

// awaySeat is the seat of a token holder the game let go: kept until.
type awaySeat struct {
	last  netip.AddrPort
	until time.Time
}

// heldSeat is one seat the host keeps for a player on the way in.
type heldSeat struct {
	player  netip.AddrPort // where the JOIN came from
	expires int64          // Unix ms, as the host keeps it
	serial  uint32         // its number, which its token names
}

// guest is an admitted address.
type guest struct {
	ip      netip.Addr
	since   time.Time // admitted
	last    time.Time // last heard from
	playing bool      // the game reported a player from ip since it came
	serial  uint32    // the seat it took; 0 if unknown (a host that numbers none)
	token   bool      // it showed the seat's token: its seat is kept when it goes
	// local is the room's address it last sent to, where the game's
	// replies to it leave from (invalid: the socket's own, by the routes).
	local netip.Addr
}

// knock is a refused datagram, kept for a moment.
type knock struct {
	from  netip.AddrPort
	local netip.Addr // the room's address it was sent to
	at    time.Time
	n     int // bytes in b the datagram had (at most maxKnockBytes kept)
	b     [maxKnockBytes]byte
}

func newDoor() *door {
	return &door{
		seats:  make(map[netip.Addr][]heldSeat),
		taken:  make(map[heldSeat]struct{}),
		guests: make(map[netip.AddrPort]*guest),
		bySeat: make(map[uint32]*guest),
		used:   make(map[uint32]struct{}),
		away:   make(map[uint32]awaySeat),
	}
}

// setRoom tells the door its room and how long it keeps a lost token
// holder's seat.
func (d *door) setRoom(id uint32, grace time.Duration) {
	d.mu.Lock()
	d.room, d.grace = id, grace
	d.mu.Unlock()
}

// addKeys takes the host's keys for this room, newest first, keeping
// maxSeatKeys epochs in all.
func (d *door) addKeys(keys []*instancepb.SeatKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if len(k.GetKey()) == 0 || slices.ContainsFunc(d.keys, func(s seatKey) bool { return s.epoch == k.GetEpoch() }) {
			continue
		}
		d.keys = append([]seatKey{{epoch: k.GetEpoch(), signer: ext.NewSigner(k.GetKey())}}, d.keys...)
	}
	d.keys = d.keys[:min(len(d.keys), maxSeatKeys)]
}

// Admission is what the door made of an EXT_PRESENT: the seat's guest is
// at To now; From is where it was before, when it moved (zero otherwise).
type admission struct {
	From, To netip.AddrPort
	room     uint32
}

// present checks the seat token b (an EXT_PRESENT datagram) from from to
// the room's address local at now, and seats its holder: ok is false when
// the token is not this room's, not signed by a key of its host, expired,
// or for a seat given up. A holder that was seated at another address
// moves: From says where.
func (d *door) present(from netip.AddrPort, local netip.Addr, b []byte, now time.Time) (admission, bool) {
	from = unmapPort(from)
	m, err := ext.ParseRequest(b)
	if err != nil || m.Type != ext.Present {
		return d.refuse()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	tok, ok := d.valid(m.SeatToken, now)
	if !ok {
		d.refused++
		return admission{}, false
	}
	a := admission{To: from, room: d.room}
	if g := d.bySeat[tok.Seat]; g != nil {
		g.token = true
		for at, h := range d.guests {
			if h == g && at != from {
				a.From = at
				delete(d.guests, at)
			}
		}
		g.ip, g.last, g.local = from.Addr(), now, local
		d.guests[from] = g
		return a, true
	}
	if w, ok := d.away[tok.Seat]; ok && now.Before(w.until) {
		delete(d.away, tok.Seat)
		a.From = w.last
	} else if _, gone := d.used[tok.Seat]; gone {
		d.refused++
		return admission{}, false
	}
	d.dropHeld(tok.Seat)
	g := d.seatGuest(from, tok.Seat, now)
	g.token, g.local = true, local
	return a, true
}

// refuse counts a datagram turned away.
func (d *door) refuse() (admission, bool) {
	d.mu.Lock()
	d.refused++
	d.mu.Unlock()
	return admission{}, false
}

// verify reports whether a key of epoch signed tok. d.mu is held.
// valid reads seat token b and reports whether it is one of this room's
// seats, signed by a key of its host and unexpired at now. d.mu is held.
func (d *door) valid(b []byte, now time.Time) (ext.SeatToken, bool) {
	tok, ok := ext.ReadToken(b)
	return tok, ok && tok.Room == d.room && int64(tok.Expires) > now.Unix() && tok.Seat != 0 && d.verify(tok.Epoch, b)
}

// checkToken reports whether b is a valid seat token of this room at now
// (valid), and its seat and expiry; it seats no one.
func (d *door) checkToken(b []byte, now time.Time) (uint32, time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tok, ok := d.valid(b, now)
	if !ok {
		return 0, time.Time{}, false
	}
	return tok.Seat, time.Unix(int64(tok.Expires), 0), true
}

func (d *door) verify(epoch uint32, tok []byte) bool {
	for _, k := range d.keys {
		if k.epoch == epoch {
			return k.signer.Verify(tok)
		}
	}
	return false
}

// dropHeld takes seat serial out of the seats held by address: its token
// takes it. d.mu is held.
func (d *door) dropHeld(serial uint32) {
	for ip, held := range d.seats {
		for i, h := range held {
			if h.serial == serial {
				d.taken[h] = struct{}{}
				if held = slices.Delete(held, i, i+1); len(held) == 0 {
					delete(d.seats, ip)
				} else {
					d.seats[ip] = held
				}
				return
			}
		}
	}
}

// seatGuest makes from a guest in seat serial (0: unnumbered) and
// returns it. d.mu is held.
func (d *door) seatGuest(from netip.AddrPort, serial uint32, now time.Time) *guest {
	d.expireGuests(now)
	g := &guest{ip: from.Addr(), since: now, last: now, serial: serial}
	d.guests[from] = g
	if serial != 0 {
		d.bySeat[serial] = g
		d.used[serial] = struct{}{}
	}
	d.admitted++
	return g
}

// admit reports whether a datagram from from to the room's address local
// may reach the game at now: from is admitted already, or its IP holds a
// seat, which it takes up. A refused datagram b is kept as a knock.
func (d *door) admit(from netip.AddrPort, local netip.Addr, b []byte, now time.Time) bool {
	from = unmapPort(from)
	d.mu.Lock()
	defer d.mu.Unlock()
	if g, ok := d.guests[from]; ok {
		g.last, g.local = now, local
		return true
	}
	if d.takeSeat(from, local, now) {
		return true
	}
	d.refused++
	d.keepKnock(from, local, b, now)
	return false
}

// replyFrom returns the room's address to's datagrams were last sent to,
// where a reply to it leaves from: invalid when to is no guest, or the
// socket does not tell.
func (d *door) replyFrom(to netip.AddrPort) netip.Addr {
	to = unmapPort(to)
	d.mu.Lock()
	defer d.mu.Unlock()
	if g, ok := d.guests[to]; ok {
		return g.local
	}
	return netip.Addr{}
}

// takeSeat admits from, which sent to local, if its IP holds an unexpired
// seat, taking up the oldest. d.mu is held.
func (d *door) takeSeat(from netip.AddrPort, local netip.Addr, now time.Time) bool {
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
	h := held[0]
	d.taken[h] = struct{}{}
	if held = held[1:]; len(held) == 0 {
		delete(d.seats, ip)
	} else {
		d.seats[ip] = held
	}
	d.seatGuest(from, h.serial, now).local = local
	return true
}

// expireGuests forgets the admitted addresses the game never claimed, and
// the away seats past their grace. d.mu is held; it runs on admissions
// only, which seats bound.
func (d *door) expireGuests(now time.Time) {
	for a, g := range d.guests {
		if !g.playing && now.Sub(g.since) > guestTTL {
			delete(d.guests, a)
			if d.bySeat[g.serial] == g {
				delete(d.bySeat, g.serial)
			}
		}
	}
	for s, w := range d.away {
		if !now.Before(w.until) {
			delete(d.away, s)
		}
	}
}

// keepKnock keeps b from from to local, one knock per sender. d.mu is
// held.
func (d *door) keepKnock(from netip.AddrPort, local netip.Addr, b []byte, now time.Time) {
	for i := range d.knocks {
		if d.knocks[i].from == from {
			d.knocks = append(d.knocks[:i], d.knocks[i+1:]...)
			break
		}
	}
	if len(d.knocks) == maxKnocks {
		d.knocks = d.knocks[1:]
	}
	k := knock{from: from, local: local, at: now}
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
		h := heldSeat{player: unmapPort(player), expires: s.GetExpiresUnixMs(), serial: s.GetSerial()}
		if _, ok := d.taken[h]; ok {
			still[h] = struct{}{}
			continue
		}
		if _, ok := d.used[h.serial]; ok && h.serial != 0 {
			continue // a token took it (or a player away keeps it): not the address's
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
		if !d.takeSeat(k.from, k.local, now) {
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
// seated again to come back, or, for a token holder, is kept away for the
// grace. It returns the seat of the guest claimed or given back (0: none
// known) and its address.
func (d *door) player(ip netip.Addr, delta int, now time.Time) (uint32, netip.AddrPort) {
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
		return 0, netip.AddrPort{}
	case delta > 0:
		pick.playing = true
	default:
		delete(d.guests, at)
		if d.bySeat[pick.serial] == pick {
			delete(d.bySeat, pick.serial)
		}
		if !pick.token {
			// Admitted by its address: gone, as a seed client's seat
			// goes; nothing is kept for it.
			return 0, at
		}
		d.away[pick.serial] = awaySeat{last: at, until: now.Add(d.grace)}
	}
	return pick.serial, at
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

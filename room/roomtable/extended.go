package roomtable

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// This file is the table's side of the extended lobby protocol: rooms
// with metadata, private rooms and their codes, passwords, quick join and
// the seat tokens a room's door checks.

var _ room.Extended = (*Table)(nil)

// TokenTTL is how long a seat token is good for: longer than any match, so
// that a player who drops late in one still comes back with it. What
// bounds a reconnection is the seat: the room keeps it ReconnectGrace.
const TokenTTL = 12 * time.Hour

// Keys is this host's seat-token key: one random key per start of the
// host (its epoch), which every room it runs or adopts gets (Start, Keep),
// so that a room checks a token offline. A room keeps the keys of the
// last few epochs, so that tokens of an earlier run still hold after an
// upgrade.
type Keys struct {
	Epoch uint32
	Key   []byte
}

// NewKeys draws a new epoch and key.
func NewKeys() (*Keys, error) {
	k := &Keys{Key: make([]byte, ext.KeyLen)}
	var e [4]byte
	if _, err := rand.Read(k.Key); err != nil {
		return nil, fmt.Errorf("room table: seat key: %w", err)
	}
	if _, err := rand.Read(e[:]); err != nil {
		return nil, fmt.Errorf("room table: seat key: %w", err)
	}
	k.Epoch = binary.BigEndian.Uint32(e[:]) | 1 // never 0
	return k, nil
}

// SeatKeys returns the key this table signs seat tokens with; a room gets
// the key derived from it for its id alone (ext.RoomKey).
func (t *Table) SeatKeys() Keys { return *t.keys }

// sign makes the seat token of seat serial in room id for client. It
// allocates a signer: HMAC state is not safe to share.
func (t *Table) sign(id, serial uint32, client [8]byte) []byte {
	return ext.NewSigner(ext.RoomKey(t.keys.Key, id)).Sign(make([]byte, 0, ext.TokenLen), ext.SeatToken{
		Epoch: t.keys.Epoch, Room: id, Seat: serial, Client: client,
		Expires: uint32(time.Now().Add(TokenTTL).Unix()),
	})
}

// Handout is what an extended CREATE asks of the room it is handed:
// metadata, privacy and the password's hash. The zero value is a seed
// CREATE's.
type Handout struct {
	Meta    room.Meta
	Private bool
	hash    []byte
}

// Password hashing: argon2id, salted, with the parameters OWASP gives as
// a floor (19 MiB, 2 passes, 1 lane), which costs tens of milliseconds: at
// most maxHashing run at once, whatever the requests, so that memory stays
// bounded; callers run them off every read loop.
const (
	saltLen    = 16
	hashLen    = 32
	argonTime  = 2
	argonMem   = 19 * 1024 // KiB
	maxHashing = 2
)

// hashPassword returns salt||hash of pw, within ctx.
func (t *Table) hashPassword(ctx context.Context, pw string, salt []byte) ([]byte, error) {
	select {
	case t.hashing <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-t.hashing }()
	h := argon2.IDKey([]byte(pw), salt, argonTime, argonMem, 1, hashLen)
	return append(append(make([]byte, 0, saltLen+hashLen), salt...), h...), nil
}

// checkPassword reports whether pw is the password stored as salt||hash,
// comparing in constant time.
func (t *Table) checkPassword(ctx context.Context, stored []byte, pw string) (bool, error) {
	got, err := t.hashPassword(ctx, pw, stored[:saltLen])
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, stored) == 1, nil
}

// CreateWith is Create for an extended CREATE: the room is handed out
// with o's metadata, private or not, with o's password (hashed here,
// before the room is started), and the creator's seat comes with its
// token.
func (t *Table) CreateWith(ctx context.Context, creator netip.AddrPort, o room.CreateOptions) (room.Grant, error) {
	h := Handout{Meta: o.Meta, Private: o.Private}
	if o.Password != "" {
		salt := make([]byte, saltLen)
		if _, err := rand.Read(salt); err != nil {
			return room.Grant{}, fmt.Errorf("%w: salt: %v", room.ErrSpawn, err)
		}
		var err error
		if h.hash, err = t.hashPassword(ctx, o.Password, salt); err != nil {
			return room.Grant{}, err
		}
	}
	net := limit.PrefixOf(creator.Addr())
	t.mu.Lock()
	switch {
	case t.closed || t.held:
		t.mu.Unlock()
		return room.Grant{}, room.ErrClosed
	case t.nets[net] >= t.cfg.RoomsPerNetwork:
		t.mu.Unlock()
		return room.Grant{}, fmt.Errorf("%w: network %v", room.ErrQuota, net)
	}
	t.nets[net]++
	t.mu.Unlock()
	defer t.uncount(net)
	row, err := t.spawn.Spawn(ctx, creator, h)
	if err != nil {
		return room.Grant{}, err
	}
	return t.granted(row, creator, o.Client), nil
}

// granted is the grant of the seat player holds in row's room, with its
// token; the row alone if the seat is gone meanwhile.
func (t *Table) granted(row room.Room, player netip.AddrPort, client [8]byte) room.Grant {
	t.mu.Lock()
	var serial uint32
	if e := t.rooms[row.ID]; e != nil {
		serial = e.seats.serialOf(player)
	}
	t.mu.Unlock()
	g := room.Grant{Room: row}
	if serial != 0 {
		g.Token = t.sign(row.ID, serial, client)
	}
	return g
}

// JoinWith holds a seat for req.Player in the room req names: by id a
// public room only, by code any room. A room with a password wants it:
// the check hashes (off the table's lock), so JoinWith waits for that
// when req carries a password; otherwise it never waits.
func (t *Table) JoinWith(ctx context.Context, req room.JoinRequest) (room.Grant, error) {
	t.mu.Lock()
	e, err := t.named(req.ID, req.Code)
	if err != nil {
		t.mu.Unlock()
		return room.Grant{}, err
	}
	stored := e.password
	if stored != nil && req.Password == "" {
		t.mu.Unlock()
		return room.Grant{}, room.ErrWrongPassword
	}
	if stored == nil {
		defer t.mu.Unlock()
		return t.holdGrant(e, req)
	}
	t.mu.Unlock()
	ok, err := t.checkPassword(ctx, stored, req.Password)
	if err != nil {
		return room.Grant{}, err
	}
	if !ok {
		return room.Grant{}, room.ErrWrongPassword
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	again, err := t.named(req.ID, req.Code)
	if err != nil {
		return room.Grant{}, err
	}
	if again != e {
		return room.Grant{}, room.ErrNoRoom // gone, and the code went to another
	}
	return t.holdGrant(e, req)
}

// named finds the listed room of id or code. t.mu is held.
func (t *Table) named(id uint32, code string) (*entry, error) {
	if t.closed || t.held {
		return nil, room.ErrClosed
	}
	byCode := code != ""
	if byCode {
		id = t.codes[code]
	}
	e := t.rooms[id]
	if id == 0 || e == nil || !e.listed || e.row.Private && !byCode {
		return nil, room.ErrNoRoom
	}
	return e, nil
}

// holdGrant holds req's seat in e and signs its token. t.mu is held.
func (t *Table) holdGrant(e *entry, req room.JoinRequest) (room.Grant, error) {
	serial, err := t.hold(e, req.Player, req.Proof, time.Now())
	if err != nil {
		return room.Grant{}, err
	}
	return room.Grant{Room: e.view(), Token: t.sign(e.row.ID, serial, req.Client)}, nil
}

// pending is a room a quick join is starting, for the quick joins that
// find nothing meanwhile: they wait for it rather than start rooms of
// their own, so that racing quick joins fill rooms exactly.
type pending struct {
	filter  room.Filter
	max     int              // places of the room to be (the creator's included)
	waiters []netip.AddrPort // quick joins waiting for it, the creator not among them
	serials map[netip.AddrPort]uint32
	row     room.Room
	err     error
	done    chan struct{}
}

// QuickJoin holds a seat for player in the fullest joinable public room
// without a password that f matches, ties going to the oldest. When none
// has a free place it waits for a room another quick join of the same
// filter is starting, if that room will have a place; else it starts one,
// described by f's mode, map and tags, once mayCreate says it may. Picking
// and holding happen under the table's one lock, so that racing quick
// joins get exactly the free places.
func (t *Table) QuickJoin(ctx context.Context, f room.Filter, player netip.AddrPort, client [8]byte, mayCreate func() error) (room.Grant, error) {
	t.mu.Lock()
	if t.closed || t.held {
		t.mu.Unlock()
		return room.Grant{}, room.ErrClosed
	}
	for _, e := range t.fullestFirst(&f) {
		serial, err := t.hold(e, player, room.Unproven, time.Now())
		if err == nil {
			g := room.Grant{Room: e.view(), Token: t.sign(e.row.ID, serial, client)}
			t.mu.Unlock()
			return g, nil
		}
		if err == room.ErrQuota {
			t.mu.Unlock()
			return room.Grant{}, err
		}
	}
	for _, p := range t.quick {
		if sameFilter(&p.filter, &f) && len(p.waiters)+1 < p.max {
			p.waiters = append(p.waiters, player)
			t.mu.Unlock()
			return t.awaitQuick(ctx, p, player, client, mayCreate)
		}
	}
	p := &pending{filter: f, max: t.spawn.RoomSize(), done: make(chan struct{})}
	t.quick = append(t.quick, p)
	t.mu.Unlock()

	var g room.Grant
	err := mayCreate()
	if err == nil {
		g, err = t.CreateWith(ctx, player, room.CreateOptions{Client: client,
			Meta: room.Meta{Mode: f.Mode, Map: f.Map, Tags: room.TagsOf(f.Tags)}})
	}
	t.mu.Lock()
	t.quick = deletePending(t.quick, p)
	p.row, p.err = g.Room, err
	if e := t.rooms[g.Room.ID]; err == nil && e != nil {
		// The waiters' seats, held before anyone else may take them.
		p.serials = make(map[netip.AddrPort]uint32, len(p.waiters))
		for _, w := range p.waiters {
			if serial, err := t.hold(e, w, room.Unproven, time.Now()); err == nil {
				p.row, p.serials[w] = e.view(), serial
			}
		}
	}
	t.mu.Unlock()
	close(p.done)
	return g, err
}

// awaitQuick waits for p's room and returns the seat held in it for
// player.
func (t *Table) awaitQuick(ctx context.Context, p *pending, player netip.AddrPort, client [8]byte, mayCreate func() error) (room.Grant, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return room.Grant{}, ctx.Err()
	}
	if p.err != nil {
		return room.Grant{}, p.err
	}
	serial, ok := p.serials[player]
	if !ok {
		// Others took the room's places first: look again, as if the
		// quick join had just come.
		return t.QuickJoin(ctx, p.filter, player, client, mayCreate)
	}
	return room.Grant{Room: p.row, Token: t.sign(p.row.ID, serial, client)}, nil
}

func deletePending(ps []*pending, p *pending) []*pending {
	for i, q := range ps {
		if q == p {
			return append(ps[:i], ps[i+1:]...)
		}
	}
	return ps
}

// fullestFirst returns the listed rooms quick join may pick for f:
// public, without a password, of the host itself, joinable, matched by
// f; the fullest first, then the oldest. t.mu is held.
func (t *Table) fullestFirst(f *room.Filter) []*entry {
	var out []*entry
	for _, e := range t.rooms {
		row := e.current()
		if e.listed && !e.stopping && e.key == "" && !row.Private && e.password == nil && row.Joinable() && f.Match(row) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *entry) int {
		if c := cmp.Compare(b.current().Occupied(), a.current().Occupied()); c != 0 {
			return c
		}
		return cmp.Compare(a.row.ID, b.row.ID)
	})
	return out
}

// sameFilter reports whether two quick joins ask for the same rooms.
func sameFilter(a, b *room.Filter) bool {
	if a.States != b.States || a.MinFree != b.MinFree || a.Mode != b.Mode || a.Map != b.Map ||
		a.NamePrefix != b.NamePrefix || len(a.Tags) != len(b.Tags) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i] != b.Tags[i] {
			return false
		}
	}
	return true
}

// newCode draws a join code no room of the table (nor, with CodeTaken, of
// the cluster) has. t.mu is held.
func (t *Table) newCode() string {
	var b [ext.CodeLen]byte
	for {
		var r [ext.CodeLen]byte
		_, _ = rand.Read(r[:]) // crypto/rand does not fail
		for i := range b {
			// 23 letters: the bias of a byte mod 23 is 1 in 256, which
			// does not make a code guessable.
			b[i] = ext.CodeAlphabet[int(r[i])%len(ext.CodeAlphabet)]
		}
		code := string(b[:])
		if _, taken := t.codes[code]; !taken && (t.cfg.CodeTaken == nil || !t.cfg.CodeTaken(code)) {
			return code
		}
	}
}

// FindCode returns the id of the listed room whose code is code.
func (t *Table) FindCode(code string) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.codes[code]
	if e := t.rooms[id]; !ok || e == nil || !e.listed {
		return 0, false
	}
	return id, true
}

package gg2server

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// maxKeys bounds the keys kept per server besides MaxKVBytes: a key's
// bookkeeping costs more than its bytes on the wire, so many tiny keys
// would otherwise cost far more memory than the byte cap suggests.
const maxKeys = 32

// table holds the registered servers. Its lock is held around calls to
// the Registry, which never calls back into the front-end.
type table struct {
	s       *Server
	mu      sync.Mutex
	byKey   map[string]*entry
	byID    map[gg2.UUID]*entry
	byRoom  map[uint32]*entry // servers in the room table, by room id
	perIP   map[netip.Addr]int
	reach   reach
	gen     uint64        // bumped on every change a list shows
	scratch gg2.KeyValues // the table being applied, cut to size
}

// entry is one registered server. Its key/values and the strings derived
// from them are replaced, never modified, so readers may keep them.
type entry struct {
	key       string
	id        gg2.UUID
	hasID     bool // legacy servers have none and cannot be unregistered
	lobby     gg2.UUID
	addr      netip.AddrPort
	transport gg2.Transport
	bots      uint16
	flags     uint16
	kv        gg2.KeyValues // owned copy: the datagram's buffer is reused
	listing   room.Listing
	// gameVersion and gameURL are the game_ver and game_url values.
	gameVersion, gameURL string
	// protocol is the protocol_id value, when it is a 16-byte UUID.
	protocol    gg2.UUID
	hasProtocol bool
	expires     time.Time
	room        uint32 // 0 until the server is in the room table
	checking    bool
}

// update is what one registration says, in either protocol.
type update struct {
	lobby                       gg2.UUID
	id                          gg2.UUID
	hasID                       bool
	transport                   gg2.Transport
	port                        uint16
	slots, players, bots, flags uint16
	kv                          gg2.KeyValues // may alias a reused buffer
}

func (t *table) init(s *Server) {
	t.s = s
	t.byKey = make(map[string]*entry)
	t.byID = make(map[gg2.UUID]*entry)
	t.byRoom = make(map[uint32]*entry)
	t.perIP = make(map[netip.Addr]int)
	t.reach.init(s.cfg)
}

// key is the Registry key of a server: its source IP, port and transport,
// so that a server that restarts (new ID) replaces its old entry, and a
// legacy registration and a new-style TCP one of one server are one entry.
func key(addr netip.AddrPort, tr gg2.Transport) string {
	return "gg2 " + addr.String() + "/" + tr.String()
}

// wireLen is an entry's size on the wire.
func wireLen(e gg2.KeyValue) int { return 1 + len(e.Key) + 2 + len(e.Value) }

// fit returns kv cut to MaxKVBytes and maxKeys, in t.scratch (aliasing
// kv's values): the name first, then the other keys in order while they
// fit. It returns how many keys were dropped, and false when the name
// alone does not fit. t.mu is held.
func (t *table) fit(kv gg2.KeyValues) (gg2.KeyValues, int, bool) {
	budget, keys := t.s.cfg.MaxKVBytes, maxKeys
	for _, e := range kv {
		if e.Key == "name" {
			budget -= wireLen(e)
			keys--
		}
	}
	if budget < 0 {
		return nil, 0, false
	}
	out, dropped := t.scratch[:0], 0
	for _, e := range kv {
		switch n := wireLen(e); {
		case e.Key == "name":
		case n <= budget && keys > 0:
			budget -= n
			keys--
		default:
			dropped++
			continue
		}
		out = append(out, e)
	}
	t.scratch = out
	return out, dropped, true
}

// own copies a table out of the datagram buffer: one allocation for the
// entries, one for the values.
func own(kv gg2.KeyValues) gg2.KeyValues {
	n := 0
	for _, e := range kv {
		n += len(e.Value)
	}
	buf := make([]byte, 0, n)
	out := make(gg2.KeyValues, len(kv))
	for i, e := range kv {
		start := len(buf)
		buf = append(buf, e.Value...)
		out[i] = gg2.KeyValue{Key: e.Key, Value: buf[start:len(buf):len(buf)]}
	}
	return out
}

func str(kv gg2.KeyValues, k string) string {
	v, _ := kv.Get(k)
	return string(v)
}

// setKV gives e a new table and what is derived from it.
func (e *entry) setKV(kv gg2.KeyValues) {
	e.kv = own(kv)
	e.listing.Name, e.listing.Game, e.listing.Map = str(e.kv, "name"), str(e.kv, "game"), str(e.kv, "map")
	e.gameVersion, e.gameURL = str(e.kv, "game_ver"), str(e.kv, "game_url")
	p, ok := e.kv.Get("protocol_id")
	e.hasProtocol = ok && len(p) == len(e.protocol)
	e.protocol = gg2.UUID{}
	if e.hasProtocol {
		e.protocol = gg2.UUID(p)
	}
}

// apply adds or refreshes the server u describes, from ip. A UDP server,
// or a TCP server whose port answered a check less than a TTL ago, goes to
// the room table at once; a new TCP server waits for a check, and a listed
// one is checked again once a TTL. The list caches are invalidated only
// when something a list shows changed.
func (t *table) apply(ctx context.Context, ip netip.Addr, u *update, now time.Time) {
	addr := netip.AddrPortFrom(ip, u.port)
	k := key(addr, u.transport)
	t.mu.Lock()
	defer t.mu.Unlock()
	kv, dropped, ok := t.fit(u.kv)
	if !ok {
		t.s.drops.Add("name_too_long")
		return
	}
	if dropped > 0 {
		t.s.drops.Counter("kv_dropped").Add(uint64(dropped))
	}
	e, found := t.byKey[k]
	if !found {
		switch {
		case len(t.byKey) >= t.s.cfg.MaxServers:
			t.s.drops.Add("table_full")
			return
		case t.perIP[ip] >= t.s.cfg.MaxServersPerIP:
			t.s.drops.Add("source_full")
			return
		}
		e = &entry{key: k, addr: addr, transport: u.transport}
		t.byKey[k] = e
		t.perIP[ip]++
	}
	t.setID(e, u)
	changed := !found || !kv.Equal(e.kv)
	if changed {
		e.setKV(kv)
	}
	listing := e.listing
	listing.Addr = addr
	listing.MaxPlayers = min(int(u.slots), t.s.cfg.MaxPlayers)
	listing.Players = min(int(u.players), t.s.cfg.MaxPlayers)
	listing.Password = u.flags&gg2.FlagPassword != 0
	if listing != e.listing || e.lobby != u.lobby || e.bots != u.bots || e.flags != u.flags {
		changed = true
	}
	e.listing, e.lobby, e.bots, e.flags = listing, u.lobby, u.bots, u.flags
	if changed && e.room != 0 {
		t.gen++
	}
	switch {
	case u.transport == gg2.UDP:
		e.expires = now.Add(t.s.cfg.TTL)
		if e.room == 0 || changed {
			t.publish(e)
		}
	case e.room == 0:
		e.expires = now.Add(t.s.cfg.TTL)
		if t.startCheck(ctx, e, now) == reachable {
			t.publish(e)
		}
	default:
		// A listed TCP server stays listed while its port answers: it is
		// refreshed on a check less than a TTL old that worked, or when no
		// check can run now (it passed one before), and otherwise left to
		// expire a TTL after its last refresh, as when its port stopped
		// answering. A check that runs refreshes it if it works.
		switch t.startCheck(ctx, e, now) {
		case reachable, skipped:
			e.expires = now.Add(t.s.cfg.TTL)
			if changed {
				t.publish(e)
			}
		}
	}
}

// setID records the server ID u carries (legacy registrations carry none);
// t.mu is held.
func (t *table) setID(e *entry, u *update) {
	if e.hasID && (!u.hasID || e.id != u.id) && t.byID[e.id] == e {
		delete(t.byID, e.id)
	}
	e.id, e.hasID = u.id, u.hasID
	if u.hasID {
		t.byID[u.id] = e
	}
}

// publish puts e in the room table, or updates it there; t.mu is held.
func (t *table) publish(e *entry) {
	room, err := t.s.reg.Register(e.key, e.listing)
	if err != nil {
		t.s.drops.Add("register_error")
		t.s.log.Debug().Str("key", e.key).Err(err).Msg("registry refused server")
		return
	}
	if e.room == 0 {
		t.s.log.Info().Str("key", e.key).Uint32("room", room.ID).Str("name", e.listing.Name).Msg("server registered")
		t.gen++
	}
	e.room = room.ID
	t.byRoom[room.ID] = e
}

// unregister removes the server registered with id, if any.
func (t *table) unregister(id gg2.UUID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if ok {
		t.remove(e, "unregistered")
	}
	return ok
}

// remove drops e; t.mu is held.
func (t *table) remove(e *entry, why string) {
	delete(t.byKey, e.key)
	if t.perIP[e.addr.Addr()]--; t.perIP[e.addr.Addr()] == 0 {
		delete(t.perIP, e.addr.Addr())
	}
	if e.hasID && t.byID[e.id] == e {
		delete(t.byID, e.id)
	}
	if e.room != 0 {
		delete(t.byRoom, e.room)
		t.s.reg.Unregister(e.key)
		ev := t.s.log.Info()
		if why == "stopped" { // one summary line at shutdown instead
			ev = t.s.log.Debug()
		}
		ev.Str("key", e.key).Uint32("room", e.room).Str("cause", why).Msg("server removed")
		t.gen++
	}
}

// expireLoop removes servers TTL after their last registration. It looks
// a few times per TTL, so a server outlives its TTL by at most a quarter
// of it (or a second).
func (t *table) expireLoop(ctx context.Context) {
	tick := time.NewTicker(min(t.s.cfg.TTL/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.expire(now)
		}
	}
}

func (t *table) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.byKey {
		if now.After(e.expires) {
			t.remove(e, "expired")
		}
	}
	t.reach.expire(now)
}

// clear removes every server, at shutdown, and says how many were listed.
func (t *table) clear() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.byRoom)
	for _, e := range t.byKey {
		t.remove(e, "stopped")
	}
	return n
}

// counts returns the servers listed and those waiting for a check.
func (t *table) counts() (registered, pending int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byRoom), len(t.byKey) - len(t.byRoom)
}

// view runs f with the servers in the room table, by room id, and the
// table's generation; f must not keep the map.
func (t *table) view(f func(byRoom map[uint32]*entry, gen uint64)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t.byRoom, t.gen)
}

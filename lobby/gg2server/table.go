package gg2server

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// maxKeys bounds the keys kept per server besides MaxKVBytes: a key's
// bookkeeping costs more than its bytes on the wire, so many tiny keys
// would otherwise cost far more memory than the byte cap suggests.
const maxKeys = 32

// table holds the registered servers. Its lock is held around calls to
// the Registry, which never calls back into the front-end.
//
// An entry belongs to whoever registered its key first: the server ID of
// a new-style registration, or the legacy protocol, which has none. Only
// the same owner updates it (another owner's registration is ignored until
// the entry expires, "owned"), and only its server ID, sent from its IP,
// unregisters it. The seed calls the ID a secret between server and lobby,
// and this is what the secret protects.
type table struct {
	s       *Server
	mu      sync.Mutex
	byKey   map[string]*entry
	byID    map[gg2.UUID][]*entry // new-style entries, by the server ID that owns them
	byRoom  map[uint32]*entry     // servers in the room table, by room id
	perIP   map[netip.Addr]int
	perNet  map[netip.Prefix]int // by limit.PrefixOf: /24, /56
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
	net       netip.Prefix // addr's network, as quotas and checks count it
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
	checking    bool   // a TCP check of it runs
	queued      bool   // it waits for its first TCP check
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

// ownedBy reports whether u comes from e's owner: the same server ID, or
// both legacy.
func (e *entry) ownedBy(u *update) bool {
	return e.hasID == u.hasID && (!u.hasID || e.id == u.id)
}

func (t *table) init(s *Server) {
	t.s = s
	t.byKey = make(map[string]*entry)
	t.byID = make(map[gg2.UUID][]*entry)
	t.byRoom = make(map[uint32]*entry)
	t.perIP = make(map[netip.Addr]int)
	t.perNet = make(map[netip.Prefix]int)
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

// apply adds or refreshes the server u describes, from ip. A registration
// for a key another owner holds is ignored. A new UDP server (let in by
// Config.UDPTransport) goes to the room table at once, unchecked; a new
// TCP server whose port answered a check less than a TTL ago too; any
// other new TCP server waits for a check in its network's queue, and one
// whose port did not answer a recent check is not kept at all. A listed
// TCP server is checked again once a TTL. The list caches are invalidated
// only when something a list shows changed.
func (t *table) apply(ctx context.Context, ip netip.Addr, u *update, now time.Time) {
	addr := netip.AddrPortFrom(ip, u.port)
	k := key(addr, u.transport)
	t.mu.Lock()
	defer t.mu.Unlock()
	e, found := t.byKey[k]
	if found && !e.ownedBy(u) {
		t.s.drops.Add("owned")
		return
	}
	kv, dropped, ok := t.fit(u.kv)
	if !ok {
		t.s.drops.Add("name_too_long")
		return
	}
	if dropped > 0 {
		t.s.drops.Counter("kv_dropped").Add(uint64(dropped))
	}
	if !found {
		t.add(ctx, k, addr, u, kv, now)
		return
	}
	changed := e.set(u, kv, t.s.cfg.MaxPlayers)
	if changed && e.room != 0 {
		t.gen++
	}
	switch {
	case e.room == 0:
		// Waiting for its first check, or being checked: the check lists
		// what was registered last.
		e.expires = now.Add(t.s.cfg.TTL)
	case u.transport == gg2.UDP:
		e.expires = now.Add(t.s.cfg.TTL)
		if changed {
			t.publish(e)
		}
	default:
		// A listed TCP server stays listed while its port answers: it is
		// refreshed on a check less than a TTL old that worked, or when no
		// check can run now (it passed one before), and otherwise left to
		// expire a TTL after its last refresh, as when its port stopped
		// answering. A check that runs refreshes it if it works.
		switch t.recheck(ctx, e, now) {
		case reachable, skipped:
			e.expires = now.Add(t.s.cfg.TTL)
			if changed {
				t.publish(e)
			}
		}
	}
}

// add makes the entry of a new key, within the quotas, and lists it or
// queues its check; t.mu is held.
func (t *table) add(ctx context.Context, k string, addr netip.AddrPort, u *update, kv gg2.KeyValues, now time.Time) {
	ip, network := addr.Addr(), limit.PrefixOf(addr.Addr())
	listNow := u.transport == gg2.UDP
	if !listNow {
		switch t.reach.cached(addr, now) {
		case reachable:
			listNow = true
		case unreachable:
			t.s.drops.Add("unreachable_cached")
			return
		}
	}
	switch {
	case t.perIP[ip] >= t.s.cfg.MaxServersPerIP:
		t.s.drops.Add("source_full")
		return
	case t.perNet[network] >= t.s.cfg.MaxServersPerNetwork:
		t.s.drops.Add("network_full")
		return
	case listNow && len(t.byRoom) >= t.s.cfg.MaxServers:
		t.s.drops.Add("table_full")
		return
	case !listNow:
		if why := t.reach.admit(ip, now); why != "" {
			t.s.drops.Add(why)
			return
		}
	}
	e := &entry{key: k, addr: addr, net: network, transport: u.transport, id: u.id, hasID: u.hasID,
		expires: now.Add(t.s.cfg.TTL)}
	e.set(u, kv, t.s.cfg.MaxPlayers)
	t.byKey[k] = e
	t.perIP[ip]++
	t.perNet[network]++
	if e.hasID {
		t.byID[e.id] = append(t.byID[e.id], e)
	}
	if listNow {
		t.publish(e)
		return
	}
	t.reach.push(e)
	t.dispatch(ctx)
}

// set records what u says of e, its table cut to kv, and reports whether
// anything a list shows changed.
func (e *entry) set(u *update, kv gg2.KeyValues, maxPlayers int) bool {
	changed := e.kv == nil || !kv.Equal(e.kv)
	if changed {
		e.setKV(kv)
	}
	listing := e.listing
	listing.Addr = e.addr
	listing.MaxPlayers = min(int(u.slots), maxPlayers)
	listing.Players = min(int(u.players), maxPlayers)
	listing.Password = u.flags&gg2.FlagPassword != 0
	listing.Unchecked = e.transport == gg2.UDP
	if listing != e.listing || e.lobby != u.lobby || e.bots != u.bots || e.flags != u.flags {
		changed = true
	}
	e.listing, e.lobby, e.bots, e.flags = listing, u.lobby, u.bots, u.flags
	return changed
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

// unregister removes the servers registered with id from ip, and says
// why nothing was removed: "unknown_id", or "wrong_source" when id holds
// servers of other addresses only.
func (t *table) unregister(id gg2.UUID, ip netip.Addr) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	owned := t.byID[id]
	if len(owned) == 0 {
		return "unknown_id"
	}
	removed := 0
	for _, e := range slices.Clone(owned) {
		if e.addr.Addr() == ip {
			t.remove(e, "unregistered")
			removed++
		}
	}
	if removed == 0 {
		return "wrong_source"
	}
	return ""
}

// remove drops e; t.mu is held.
func (t *table) remove(e *entry, why string) {
	delete(t.byKey, e.key)
	ip := e.addr.Addr()
	if t.perIP[ip]--; t.perIP[ip] <= 0 {
		delete(t.perIP, ip)
	}
	if t.perNet[e.net]--; t.perNet[e.net] <= 0 {
		delete(t.perNet, e.net)
	}
	if e.hasID {
		owned := slices.DeleteFunc(t.byID[e.id], func(o *entry) bool { return o == e })
		if len(owned) == 0 {
			delete(t.byID, e.id)
		} else {
			t.byID[e.id] = owned
		}
	}
	t.reach.drop(e)
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

// counts returns the servers listed and those waiting for, or in, their
// first check.
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

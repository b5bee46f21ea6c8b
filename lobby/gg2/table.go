package gg2

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// table holds the registered servers. Its lock is held around calls to
// the Registry, which never calls back into the front-end.
type table struct {
	s      *Server
	mu     sync.Mutex
	byKey  map[string]*entry
	byID   map[gg2wire.UUID]*entry
	byRoom map[uint32]*entry // servers in the room table, by room id
	perIP  map[netip.Addr]int
	checks chan struct{} // semaphore of running TCP checks
	gen    uint64        // bumped on every change the list shows
}

// entry is one registered server.
type entry struct {
	key       string
	id        gg2wire.UUID
	addr      netip.AddrPort
	transport gg2wire.Transport
	bots      uint16
	flags     uint16
	kv        gg2wire.KeyValues // owned copy: the datagram's buffer is reused
	listing   room.Listing
	expires   time.Time
	room      uint32 // 0 until the server is in the room table
	checking  bool
}

func (t *table) init(s *Server) {
	t.s = s
	t.byKey = make(map[string]*entry)
	t.byID = make(map[gg2wire.UUID]*entry)
	t.byRoom = make(map[uint32]*entry)
	t.perIP = make(map[netip.Addr]int)
	t.checks = make(chan struct{}, s.cfg.MaxChecks)
}

// key is the Registry key of a server: its source IP, port and transport,
// so that a server that restarts (new ID) replaces its old entry.
func key(addr netip.AddrPort, tr gg2wire.Transport) string {
	return "gg2 " + addr.String() + "/" + tr.String()
}

// copyKV copies a table out of the datagram buffer.
func copyKV(kv gg2wire.KeyValues) gg2wire.KeyValues {
	out := make(gg2wire.KeyValues, len(kv))
	for i, e := range kv {
		out[i] = gg2wire.KeyValue{Key: e.Key, Value: append([]byte(nil), e.Value...)}
	}
	return out
}

func str(kv gg2wire.KeyValues, k string) string {
	v, _ := kv.Get(k)
	return string(v)
}

// register adds or refreshes the server r describes. A UDP server, or a
// TCP server that already passed its check, goes to the room table at
// once; a new TCP server waits for a check.
func (t *table) register(ctx context.Context, ip netip.Addr, r *gg2wire.Registration, now time.Time) {
	addr := netip.AddrPortFrom(ip, r.Port)
	k := key(addr, r.Transport)
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byKey[k]
	if !ok {
		switch {
		case len(t.byKey) >= t.s.cfg.MaxServers:
			t.s.drops.Add("table_full")
			return
		case t.perIP[ip] >= t.s.cfg.MaxServersPerIP:
			t.s.drops.Add("source_full")
			return
		}
		e = &entry{key: k, addr: addr, transport: r.Transport}
		t.byKey[k] = e
		t.perIP[ip]++
	}
	if e.id != r.ServerID || !ok {
		if t.byID[e.id] == e {
			delete(t.byID, e.id)
		}
		e.id = r.ServerID
		t.byID[e.id] = e
	}
	e.bots, e.flags, e.kv = r.Bots, r.Flags, copyKV(r.KeyValues)
	e.listing = room.Listing{
		Addr: addr, Players: int(r.Players), MaxPlayers: int(r.Slots),
		Name: str(e.kv, "name"), Game: str(e.kv, "game"), Map: str(e.kv, "map"),
		Password: r.Password(),
	}
	e.expires = now.Add(t.s.cfg.TTL)
	t.gen++
	switch {
	case r.Transport == gg2wire.UDP || e.room != 0:
		t.publish(e)
	case !e.checking:
		select {
		case t.checks <- struct{}{}:
			e.checking = true
			t.s.work.Go(func() { t.check(ctx, e) })
		default:
			t.s.drops.Add("check_busy")
		}
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
	}
	e.room = room.ID
	t.byRoom[room.ID] = e
}

// check lists a TCP server once a TCP connect to it works; until then it
// is kept (and expires) unlisted, and its next registration checks again.
func (t *table) check(ctx context.Context, e *entry) {
	d := net.Dialer{Timeout: t.s.cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", e.addr.String())
	if err == nil {
		c.Close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	<-t.checks
	e.checking = false
	switch {
	case t.byKey[e.key] != e: // expired or unregistered meanwhile
	case err != nil:
		t.s.drops.Add("unreachable")
		t.s.log.Debug().Str("key", e.key).Err(err).Msg("server unreachable")
	default:
		t.gen++
		t.publish(e)
	}
}

// unregister removes the server registered with id, if any.
func (t *table) unregister(id gg2wire.UUID) bool {
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
	if t.byID[e.id] == e {
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
	}
	t.gen++
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

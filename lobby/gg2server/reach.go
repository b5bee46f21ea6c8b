package gg2server

import (
	"context"
	"net"
	"net/netip"
	"time"

	"golang.org/x/time/rate"

	"github.com/foyerlobby/foyer/internal/limit"
)

// A registration's source address can be forged, and a TCP server is
// checked with a connect to that address: without bounds, forged
// registrations would make Foyer a connect-scanner, and forged
// registrations aimed at hosts that drop SYNs would hold every check for
// its whole dial timeout. So:
//
//   - the outcome of a check is kept per target (a success for TTL, a
//     failure for a third of it and at most failedFor, so that a server
//     whose port is fixed is listed at its next registration: GG2 servers
//     register every 30 s);
//   - each target network (limit.PrefixOf: /24, /56) gets checkBurst
//     checks of servers not listed, then one per checkEvery; a listed
//     server is checked again once per TTL at most, outside that budget:
//     its target proved to be a server;
//   - new servers wait for their check in a queue per network, and the
//     queues are served in turn, at most checksPerNetwork checks of one
//     network running at once: a flood from many networks takes its turns
//     like any network, and a server of another network waits for one
//     turn of each, not for the flood;
//   - at most queuedPerCheck × MaxChecks servers wait; past that a new
//     server is refused and tries again at its next registration.
const (
	checkBurst       = 8
	checkEvery       = 10 * time.Second
	failedFor        = 20 * time.Second
	checksPerNetwork = 2
	queuedPerCheck   = 4
)

// checkOutcome is what a look at the checks of a target found or did.
type checkOutcome int

const (
	reachable   checkOutcome = iota // a check less than a TTL old worked
	unreachable                     // a recent check failed
	started                         // a check runs
	skipped                         // no check now: too many run
	unknown                         // no recent check
)

// reach remembers the outcomes of TCP checks and schedules new ones. It is
// guarded by the table's lock.
type reach struct {
	ttl     time.Duration
	max     int // outcomes kept
	results map[netip.AddrPort]reachResult
	order   []reachItem // outcomes in the order recorded, oldest from head
	head    int
	budget  *limit.Budget // checks per target network

	checks    int                  // Config.MaxChecks: checks running at once
	running   int                  // checks running
	perNet    map[netip.Prefix]int // checks running, by target network
	waiting   map[netip.Prefix][]*entry
	ring      []netip.Prefix // networks with servers waiting, in the order they are served
	queued    int            // servers waiting (entries whose queued is set)
	maxQueued int
}

type reachResult struct {
	ok      bool
	expires time.Time
}

type reachItem struct {
	target  netip.AddrPort
	expires time.Time
}

func (r *reach) init(cfg Config) {
	r.ttl = cfg.TTL
	r.max = 2 * cfg.MaxServers
	r.results = make(map[netip.AddrPort]reachResult)
	r.budget = limit.NewNetworkLimit(rate.Every(checkEvery), checkBurst, max(cfg.MaxServers, 1024))
	r.checks = cfg.MaxChecks
	r.perNet = make(map[netip.Prefix]int)
	r.waiting = make(map[netip.Prefix][]*entry)
	r.maxQueued = queuedPerCheck * cfg.MaxChecks
}

// cached says what a check of target less than its time ago found, or
// unknown.
func (r *reach) cached(target netip.AddrPort, now time.Time) checkOutcome {
	res, ok := r.results[target]
	switch {
	case !ok || !now.Before(res.expires):
		return unknown
	case res.ok:
		return reachable
	}
	return unreachable
}

// admit decides whether a new server of ip may wait for a check, spending
// one of its network's checks; it returns the reason it may not, or "".
func (r *reach) admit(ip netip.Addr, now time.Time) string {
	if r.queued >= r.maxQueued {
		return "check_queue_full"
	}
	if !r.budget.Allow(ip, 1, now) {
		return "check_limited"
	}
	return ""
}

// push queues e's first check behind its network's others.
func (r *reach) push(e *entry) {
	q, ok := r.waiting[e.net]
	if !ok {
		r.ring = append(r.ring, e.net)
	}
	r.waiting[e.net] = append(q, e)
	e.queued = true
	r.queued++
}

// drop takes e out of the queue, if it waits there (it is skipped when its
// turn comes).
func (r *reach) drop(e *entry) {
	if e.queued {
		e.queued = false
		r.queued--
	}
}

// next returns the server to check next, taking it out of the queue: the
// oldest of the next network in turn that runs fewer than
// checksPerNetwork checks; nil when none may run.
func (r *reach) next() *entry {
	for n := len(r.ring); n > 0; n-- {
		p := r.ring[0]
		r.ring = r.ring[1:]
		q := r.waiting[p]
		for len(q) > 0 && !q[0].queued {
			q[0] = nil
			q = q[1:]
		}
		if len(q) == 0 {
			delete(r.waiting, p)
			continue
		}
		if r.perNet[p] >= checksPerNetwork {
			r.waiting[p] = q
			r.ring = append(r.ring, p)
			continue
		}
		e := q[0]
		q[0] = nil
		q = q[1:]
		if len(q) == 0 {
			delete(r.waiting, p)
		} else {
			r.waiting[p] = q
			r.ring = append(r.ring, p)
		}
		r.drop(e)
		return e
	}
	return nil
}

// dispatch starts the checks of waiting servers while checks are free;
// t.mu is held.
func (t *table) dispatch(ctx context.Context) {
	r := &t.reach
	for ctx.Err() == nil && r.running < r.checks {
		e := r.next()
		if e == nil {
			return
		}
		t.start(ctx, e)
	}
}

// recheck says what a recent check of listed server e's target found or,
// without one, checks it again if a check is free; t.mu is held.
func (t *table) recheck(ctx context.Context, e *entry, now time.Time) checkOutcome {
	r := &t.reach
	if e.checking {
		return started
	}
	switch o := r.cached(e.addr, now); o {
	case reachable:
		return o
	case unreachable:
		t.s.drops.Add("unreachable_cached")
		return o
	}
	if r.running >= r.checks || r.perNet[e.net] >= checksPerNetwork {
		t.s.drops.Add("check_busy")
		return skipped
	}
	t.start(ctx, e)
	return started
}

// start checks e; t.mu is held.
func (t *table) start(ctx context.Context, e *entry) {
	r := &t.reach
	r.running++
	r.perNet[e.net]++
	e.checking = true
	t.s.work.Go(func() { t.check(ctx, e) })
}

// check lists or refreshes a TCP server when a TCP connect to it works.
// A new server whose check fails is forgotten (the failure is kept, so its
// next registrations are decided without a connect for a while); a listed
// one stays listed until it expires.
func (t *table) check(ctx context.Context, e *entry) {
	d := net.Dialer{Timeout: t.s.cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", e.addr.String())
	if err == nil {
		c.Close()
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &t.reach
	r.running--
	if r.perNet[e.net]--; r.perNet[e.net] <= 0 {
		delete(r.perNet, e.net)
	}
	e.checking = false
	if ctx.Err() == nil { // a check cut by shutdown says nothing of the target
		r.record(e.addr, err == nil, now)
	}
	if err == nil { // it answered a SYN: its address receives
		t.s.guard.Received(e.addr.Addr(), now)
	}
	switch {
	case t.byKey[e.key] != e: // expired or unregistered meanwhile
	case err != nil:
		t.s.drops.Add("unreachable")
		t.s.log.Debug().Str("key", e.key).Err(err).Msg("server unreachable")
		if e.room == 0 {
			t.remove(e, "unreachable")
		}
	case e.room == 0 && len(t.byRoom) >= t.s.cfg.MaxServers:
		t.s.drops.Add("table_full")
		t.remove(e, "table_full")
	default:
		e.expires = now.Add(t.s.cfg.TTL)
		t.publish(e)
	}
	t.dispatch(ctx)
}

// record keeps the outcome of a check of target (a failure for less
// long), forgetting the oldest outcomes beyond max.
func (r *reach) record(target netip.AddrPort, ok bool, now time.Time) {
	exp := now.Add(r.ttl)
	if !ok {
		exp = now.Add(min(r.ttl/3, failedFor))
	}
	r.results[target] = reachResult{ok: ok, expires: exp}
	r.order = append(r.order, reachItem{target, exp})
	for len(r.results) > r.max || len(r.order)-r.head > 2*r.max {
		r.pop()
	}
}

// expire forgets the outcomes past their time, from the oldest recorded
// (a failure recorded after a success may wait for it: lookups check the
// time anyway).
func (r *reach) expire(now time.Time) {
	for r.head < len(r.order) && now.After(r.order[r.head].expires) {
		r.pop()
	}
}

// pop forgets the oldest recorded outcome, unless its target was checked
// again since.
func (r *reach) pop() {
	it := r.order[r.head]
	r.order[r.head] = reachItem{}
	r.head++
	if res, ok := r.results[it.target]; ok && res.expires.Equal(it.expires) {
		delete(r.results, it.target)
	}
	if r.head > len(r.order)/2 { // keep the queue's memory in step with its length
		r.order = append(r.order[:0], r.order[r.head:]...)
		r.head = 0
	}
}

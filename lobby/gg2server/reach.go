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
// registrations would make Foyer a connect-scanner. So the outcome of a
// check is kept per target (a success for TTL, a failure for a third of
// it and at most failedFor, so that a server whose port is fixed is listed
// at its next registration: GG2 servers register every 30 s), and each target network (/24, or /56 for IPv6) gets
// checkBurst checks of servers not listed, then one per checkEvery. A
// listed server is checked again once per TTL at most, outside that budget:
// its target proved to be a server.
const (
	checkBurst = 8
	checkEvery = 10 * time.Second
	failedFor  = 20 * time.Second
)

// checkOutcome is what startCheck found or did.
type checkOutcome int

const (
	reachable   checkOutcome = iota // a check less than a TTL old worked
	unreachable                     // a recent check failed
	started                         // a check runs
	skipped                         // no check now: too many run, or the target network's budget is spent
)

// reach remembers the outcomes of TCP checks and bounds new ones. It is
// guarded by the table's lock.
type reach struct {
	ttl     time.Duration
	max     int // outcomes kept
	results map[netip.AddrPort]reachResult
	order   []reachItem // outcomes in the order recorded, oldest from head
	head    int
	budget  *limit.Budget // checks per target network
	running chan struct{} // semaphore of running checks
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
	r.running = make(chan struct{}, cfg.MaxChecks)
}

// startCheck says what a recent check of e's target found or, without
// one, starts a check within the bounds; t.mu is held.
func (t *table) startCheck(ctx context.Context, e *entry, now time.Time) checkOutcome {
	r := &t.reach
	if e.checking {
		return started
	}
	if res, ok := r.results[e.addr]; ok && now.Before(res.expires) {
		if res.ok {
			return reachable
		}
		t.s.drops.Add("unreachable_cached")
		return unreachable
	}
	select {
	case r.running <- struct{}{}:
	default:
		t.s.drops.Add("check_busy")
		return skipped
	}
	if e.room == 0 && !r.budget.Allow(e.addr.Addr(), 1, now) {
		<-r.running
		t.s.drops.Add("check_limited")
		return skipped
	}
	e.checking = true
	t.s.work.Go(func() { t.check(ctx, e) })
	return started
}

// check lists or refreshes a TCP server when a TCP connect to it works;
// else it is kept (and expires) unlisted, or listed until it expires.
func (t *table) check(ctx context.Context, e *entry) {
	d := net.Dialer{Timeout: t.s.cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", e.addr.String())
	if err == nil {
		c.Close()
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	<-t.reach.running
	e.checking = false
	if ctx.Err() == nil { // a check cut by shutdown says nothing of the target
		t.reach.record(e.addr, err == nil, now)
	}
	switch {
	case t.byKey[e.key] != e: // expired or unregistered meanwhile
	case err != nil:
		t.s.drops.Add("unreachable")
		t.s.log.Debug().Str("key", e.key).Err(err).Msg("server unreachable")
	default:
		e.expires = now.Add(t.s.cfg.TTL)
		t.publish(e)
	}
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

package cluster

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/foyerlobby/foyer/room"
)

// sessions runs one session per connection to NATS until Close: watch the
// bucket, write what differs from the table, then keep both current. A
// session ends when the connection drops or a write fails; the next
// starts once the client has reconnected (it retries by itself), or a
// second later.
func (c *Cluster) sessions() {
	for {
		start := time.Now()
		err := c.session()
		c.up.Store(false)
		if errors.Is(err, errLeft) {
			return // Close: a clean stop, not a loss
		}
		select { // a session that fails at once is not retried at once
		case <-c.ctx.Done():
			return
		case <-time.After(time.Until(start.Add(time.Second))):
		}
		c.log.Warn().Err(err).Msg("cluster session ended: serving this host's rooms alone until NATS is back")
		if !c.awaitLink() {
			return
		}
		c.stats.reconnects.Add(1)
	}
}

// awaitLink waits for the connection to come back, checking at least
// every second; false once the cluster is closed.
func (c *Cluster) awaitLink() bool {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if c.nc.IsConnected() {
			return true
		}
		select {
		case <-c.ctx.Done():
			return false
		case <-c.links:
		case <-t.C:
		}
	}
}

// errLinkDown ends a session whose connection dropped.
var errLinkDown = errors.New("NATS connection lost")

// session is one connected period.
func (c *Cluster) session() error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	for drained := false; !drained; { // ups and downs before this session are old news
		select {
		case <-c.links:
		default:
			drained = true
		}
	}
	if !c.nc.IsConnected() {
		return errLinkDown
	}
	octx, ocancel := context.WithTimeout(ctx, opTimeout)
	err := c.buckets(octx) // a restarted server may have lost them
	ocancel()
	if err != nil {
		return fmt.Errorf("buckets: %w", err)
	}
	kv, err := c.js.KeyValue(ctx, clusterBucket)
	if err != nil {
		return err
	}
	c.view.begin()
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	replayed := make(chan struct{})
	watchDone := make(chan error, 1)
	go func() { watchDone <- c.watch(w, replayed) }()
	ids, err := c.js.KeyValue(ctx, idsBucket)
	if err != nil {
		return err
	}
	p := &publisher{c: c, kv: kv, ids: ids}
	pubDone := make(chan error, 1)
	go func() { pubDone <- p.run(ctx, replayed) }()
	select {
	case err = <-watchDone:
		cancel()
		<-pubDone
	case err = <-pubDone:
		cancel()
		w.Stop()
		<-watchDone
	case <-c.linkDown(ctx):
		err = errLinkDown
		cancel()
		w.Stop()
		<-watchDone
		<-pubDone
	}
	return err
}

// linkDown returns a channel closed when the connection drops during ctx.
func (c *Cluster) linkDown(ctx context.Context) <-chan struct{} {
	down := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case up := <-c.links:
				if !up {
					close(down)
					return
				}
			}
		}
	}()
	return down
}

// watch applies the bucket's entries to the view until the watcher
// stops, closing replayed once the entries present at the start are in.
func (c *Cluster) watch(w jetstream.KeyWatcher, replayed chan<- struct{}) error {
	replay := true
	for e := range w.Updates() {
		if e == nil {
			if replay {
				replay = false
				c.emitAll(c.view.replayed())
				close(replayed)
			}
			continue
		}
		evs, bad := c.view.apply(e, time.Now(), replay)
		if bad {
			c.stats.malformed.Add(1)
		}
		c.emitAll(evs)
	}
	return errors.New("watch ended")
}

// publisher writes this host's table to the bucket during one session.
type publisher struct {
	c         *Cluster
	kv        jetstream.KeyValue   // the cluster bucket
	ids       jetstream.KeyValue   // the ids bucket
	stored    map[uint32][]byte    // this host's rooms as the bucket holds them
	written   map[uint32]room.Room // the rooms as last written
	version   uint64               // local version last written
	beat      time.Time            // last heartbeat
	free      int                  // free capacity in it
	refreshed time.Time            // last rewrite of unchanged rooms
}

// minBeat is the shortest time between two heartbeats: a change of free
// capacity is told at once, a burst of them at this rate.
const minBeat = 250 * time.Millisecond

// run writes the table once the replay is in, then keeps it and the
// heartbeat current.
func (p *publisher) run(ctx context.Context, replayed <-chan struct{}) error {
	c := p.c
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-replayed:
	}
	p.stored, p.written = c.view.ownStored(), make(map[uint32]room.Room)
	p.refreshed = time.Now()
	if err := p.reclaim(ctx); err != nil {
		return err
	}
	if err := p.sync(ctx, true); err != nil {
		return err
	}
	c.up.Store(true)
	c.log.Info().Int("rooms", len(p.stored)).Msg("cluster table written")
	select {
	case <-c.firstSync:
	default:
		close(c.firstSync)
	}
	tick := time.NewTicker(min(c.cfg.Heartbeat, minBeat))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case done := <-c.leaving:
			done <- p.leave(ctx)
			return errLeft
		case <-c.changed:
		case <-tick.C:
		}
		if err := p.sync(ctx, false); err != nil {
			return err
		}
	}
}

// sync writes what differs between the local table and the bucket, then
// the heartbeat when it is due (Heartbeat since the last, or minBeat when
// the free capacity changed, or now when force). Rooms unchanged for
// keyTTL/3 are rewritten so that the bucket keeps them.
func (p *publisher) sync(ctx context.Context, force bool) error {
	c := p.c
	snap := c.local.List()
	now := time.Now()
	refresh := now.Sub(p.refreshed) > keyTTL/3
	if c.held.Load() {
		// Handing over: the new process writes the rooms.
	} else if snap.Version != p.version || force || refresh {
		if err := p.writeRooms(ctx, snap.Rooms, refresh); err != nil {
			return err
		}
		p.version = snap.Version
		if refresh {
			p.refreshed = now
		}
	}
	free := c.local.Capacity()
	if !force && now.Sub(p.beat) < c.cfg.Heartbeat && (free == p.free || now.Sub(p.beat) < minBeat) {
		return nil
	}
	b, _ := json.Marshal(hostRecord{Addr: c.addr, Free: free, Range: c.ids.n})
	if err := p.op(ctx, func(ctx context.Context) error {
		_, err := p.kv.Put(ctx, hostKey(c.me), b)
		return err
	}); err != nil {
		return err
	}
	p.beat, p.free = now, free
	return nil
}

// writeRooms writes the rooms (sorted by id) that differ from what the
// bucket holds, or all of them on refresh, and deletes the keys of the
// rooms no longer there. A room equal to the one last written costs a
// comparison, not an encoding.
func (p *publisher) writeRooms(ctx context.Context, rooms []room.Room, refresh bool) error {
	c := p.c
	for _, r := range rooms {
		if w, ok := p.written[r.ID]; ok && w == r && !refresh {
			continue
		}
		b, _ := json.Marshal(recordOf(r)) // plain values: cannot fail
		old, ok := p.stored[r.ID]
		if !ok {
			if err := p.advance(ctx, r.ID); err != nil {
				return err
			}
		}
		if !ok || !bytes.Equal(old, b) || refresh {
			if err := p.op(ctx, func(ctx context.Context) error {
				_, err := p.kv.Put(ctx, roomKey(c.me, r.ID), b)
				return err
			}); err != nil {
				return err
			}
			p.stored[r.ID] = b
		}
		p.written[r.ID] = r
	}
	for id := range p.stored {
		if _, ok := slices.BinarySearchFunc(rooms, id, func(r room.Room, id uint32) int { return cmp.Compare(r.ID, id) }); ok {
			continue
		}
		if err := p.op(ctx, func(ctx context.Context) error { return p.kv.Delete(ctx, roomKey(c.me, id)) }); err != nil {
			return err
		}
		delete(p.stored, id)
		delete(p.written, id)
	}
	return nil
}

// op runs one write with a deadline.
func (p *publisher) op(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return f(ctx)
}

// errLeft ends the session of a host leaving the cluster.
var errLeft = errors.New("left the cluster")

// leave writes the table a last time, then deletes this host's heartbeat
// when its table is empty, so that the others stop placing rooms here at
// once. A host leaving rooms running (for its next lobby to adopt) leaves
// them listed instead: its heartbeat expires by itself if no lobby takes
// them over within HostTTL.
func (p *publisher) leave(ctx context.Context) error {
	if err := p.sync(ctx, false); err != nil {
		return err
	}
	if n := len(p.stored); n > 0 {
		p.c.log.Info().Int("rooms", n).Dur("ttl", p.c.cfg.HostTTL).
			Msg("cluster: rooms still running stay listed for the next lobby to adopt")
		return nil
	}
	return p.op(ctx, func(ctx context.Context) error { return p.kv.Delete(ctx, hostKey(p.c.me)) })
}

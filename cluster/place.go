package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/foyerlobby/foyer/room"
)

// maxRemoteCreates bounds the CREATEs other hosts may have this host run
// at once; past it they are refused as over capacity, and placed
// elsewhere.
const maxRemoteCreates = 64

// Create places a room on the host with the most free capacity, this one
// on ties, and holds a seat in it for creator. A host that does not take
// the request within AckTimeout, or refuses it for want of capacity, is
// skipped for the next; the room is returned once it runs. While this
// host is cut off from NATS it places rooms on itself only.
func (c *Cluster) Create(ctx context.Context, creator netip.AddrPort) (room.Room, error) {
	cands := []candidate{{c.me, c.local.Capacity()}}
	if c.nc.IsConnected() {
		cands = append(cands, c.view.candidates()...)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if n := cmp.Compare(b.free, a.free); n != 0 {
			return n
		}
		switch c.me {
		case a.host:
			return -1
		case b.host:
			return 1
		}
		return cmp.Compare(a.host, b.host)
	})
	var err error
	for _, cand := range cands {
		var r room.Room
		if cand.host == c.me {
			r, err = c.local.Create(ctx, creator)
			r.Node = c.me
		} else {
			r, err = c.createOn(ctx, cand.host, creator)
		}
		if err == nil {
			if cand.host == c.me {
				c.stats.placedLocal.Add(1)
			} else {
				c.stats.placedRemote.Add(1)
				c.view.took(cand.host)
				c.awaitArrival(ctx, r.ID)
			}
			return r, nil
		}
		if ctx.Err() != nil || !placeElsewhere(err) {
			return room.Room{}, err
		}
		c.stats.skipped.Add(1)
		c.log.Debug().Err(err).Str("to", cand.host).Msg("cluster: placement skipped a host")
	}
	return room.Room{}, err
}

// placeElsewhere reports whether a CREATE refused with err may succeed on
// another host.
func placeElsewhere(err error) bool {
	for _, e := range []error{room.ErrCapacity, room.ErrNoPorts, room.ErrSpawn, room.ErrUnreachable, room.ErrClosed, room.ErrDraining} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// createOn asks host to start a room: it must take the request within
// AckTimeout and answer within CreateTimeout after that.
func (c *Cluster) createOn(ctx context.Context, host string, creator netip.AddrPort) (room.Room, error) {
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return room.Room{}, fmt.Errorf("%w: %s: %v", room.ErrUnreachable, host, err)
	}
	defer sub.Unsubscribe()
	req, _ := json.Marshal(createRequest{Creator: creator}) // plain values: cannot fail
	if err := c.nc.PublishMsg(&nats.Msg{Subject: subjectPrefix + host + ".create", Reply: inbox, Data: req}); err != nil {
		return room.Room{}, fmt.Errorf("%w: %s: %v", room.ErrUnreachable, host, err)
	}
	rep, err := c.next(ctx, sub, host, c.cfg.AckTimeout)
	if err == nil && rep.Ack {
		rep, err = c.next(ctx, sub, host, c.cfg.CreateTimeout)
	}
	if err != nil {
		return room.Room{}, err
	}
	return c.outcome(host, rep)
}

// next waits up to wait for the next answer of host on sub.
func (c *Cluster) next(ctx context.Context, sub *nats.Subscription, host string, wait time.Duration) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m, err := sub.NextMsgWithContext(ctx)
	switch {
	case err != nil:
		return reply{}, fmt.Errorf("%w: %s within %v: %v", room.ErrUnreachable, host, wait, err)
	case len(m.Data) == 0 && m.Header.Get("Status") == "503":
		return reply{}, fmt.Errorf("%w: %s is not listening", room.ErrUnreachable, host)
	}
	rep, err := decodeReply(m.Data)
	if err != nil {
		c.stats.malformed.Add(1)
		return reply{}, fmt.Errorf("%w: %s answered garbage: %v", room.ErrUnreachable, host, err)
	}
	return rep, nil
}

// outcome turns host's final answer into a room or a refusal.
func (c *Cluster) outcome(host string, rep reply) (room.Room, error) {
	if rep.Room == nil {
		if rep.Err == "" {
			return room.Room{}, fmt.Errorf("%w: %s answered without a room", room.ErrUnreachable, host)
		}
		return room.Room{}, rep.refusal()
	}
	return c.view.row(host, *rep.Room), nil
}

// Join holds a seat for player: in a room of this host, or by a request
// to the host that runs it, which alone knows its seats. The lobby runs
// it off its read loop (the Cluster is no room.JoinNeverWaiter). A host
// that does not answer within JoinTimeout fails the JOIN with
// room.ErrUnreachable.
func (c *Cluster) Join(ctx context.Context, id uint32, player netip.AddrPort, proof room.Proof) (room.Room, error) {
	host, ok := c.view.owner(id)
	if !ok {
		r, err := c.local.Join(ctx, id, player, proof)
		if err == nil {
			r.Node = c.me
		}
		return r, err
	}
	c.stats.forwarded.Add(1)
	req, _ := json.Marshal(joinRequest{ID: id, Player: player, Proof: proof}) // plain values: cannot fail
	ctx, cancel := context.WithTimeout(ctx, c.cfg.JoinTimeout)
	defer cancel()
	m, err := c.nc.RequestWithContext(ctx, subjectPrefix+host+".join", req)
	if err != nil {
		c.stats.forwardRefused.Add(1)
		return room.Room{}, fmt.Errorf("%w: %s: %v", room.ErrUnreachable, host, err)
	}
	rep, err := decodeReply(m.Data)
	if err != nil {
		c.stats.malformed.Add(1)
		c.stats.forwardRefused.Add(1)
		return room.Room{}, fmt.Errorf("%w: %s answered garbage: %v", room.ErrUnreachable, host, err)
	}
	r, err := c.outcome(host, rep)
	if err != nil {
		c.stats.forwardRefused.Add(1)
	}
	return r, err
}

// serveCreate runs a CREATE another host placed here: it takes it at once
// (or refuses it past maxRemoteCreates), and answers once the room runs.
func (c *Cluster) serveCreate(m *nats.Msg) {
	var req createRequest
	if json.Unmarshal(m.Data, &req) != nil || !req.Creator.IsValid() || m.Reply == "" {
		c.stats.malformed.Add(1)
		return
	}
	select {
	case c.creates <- struct{}{}:
	default:
		m.Respond(encodeReply(room.Room{}, fmt.Errorf("%w: %d CREATEs of other hosts running here", room.ErrCapacity, maxRemoteCreates)))
		return
	}
	m.Respond(ackReply)
	c.wg.Go(func() {
		defer func() { <-c.creates }()
		r, err := c.local.Create(c.ctx, req.Creator)
		c.stats.servedCreates.Add(1)
		if err := m.Respond(encodeReply(r, err)); err != nil {
			c.log.Warn().Err(err).Uint32("id", r.ID).Msg("cluster: a placed room's answer was not sent")
		}
	})
}

// ackReply tells the placing host that the CREATE is being run.
var ackReply, _ = json.Marshal(reply{Ack: true})

// serveJoin holds a seat for a JOIN another host forwarded. The local
// Join never waits, so it runs on the subscription's goroutine.
func (c *Cluster) serveJoin(m *nats.Msg) {
	var req joinRequest
	if json.Unmarshal(m.Data, &req) != nil || req.ID == 0 || !req.Player.IsValid() || req.Proof > room.SawListing || m.Reply == "" {
		c.stats.malformed.Add(1)
		return
	}
	r, err := c.local.Join(c.ctx, req.ID, req.Player, req.Proof)
	c.stats.served.Add(1)
	m.Respond(encodeReply(r, err))
}

// arrivalWait bounds the wait for a room placed elsewhere to reach this
// host's view: its host writes it as it answers, so it comes within a
// millisecond or so unless the bucket is in trouble, and then the room
// is handed out anyway.
const arrivalWait = 500 * time.Millisecond

// awaitArrival waits until room id, just placed on another host, is in
// the view, so that the creator's next LIST here shows it. The room is
// not put in the view from the answer: only the bucket says what is
// there, so nothing is ever listed that the bucket no longer holds.
func (c *Cluster) awaitArrival(ctx context.Context, id uint32) {
	t := time.NewTimer(arrivalWait)
	defer t.Stop()
	select {
	case <-c.view.arrival(id):
	case <-t.C:
		c.view.forget(id)
	case <-ctx.Done():
		c.view.forget(id)
	}
}

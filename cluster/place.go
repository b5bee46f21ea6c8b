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
	g, err := c.place(ctx, createRequest{Creator: creator})
	return g.Room, err
}

// CreateWith is Create for an extended CREATE: the host the room is
// placed on hashes its password, and signs its creator's seat token.
func (c *Cluster) CreateWith(ctx context.Context, creator netip.AddrPort, o room.CreateOptions) (room.Grant, error) {
	return c.place(ctx, createRequest{Creator: creator, Ext: true, Name: o.Meta.Name, Mode: o.Meta.Mode,
		Map: o.Meta.Map, Tags: o.Meta.Tags.Slice(), Private: o.Private, Password: o.Password, Client: o.Client})
}

// place runs req on the host with the most free capacity, as Create says.
func (c *Cluster) place(ctx context.Context, req createRequest) (room.Grant, error) {
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
		var g room.Grant
		if cand.host == c.me {
			g, err = c.createHere(ctx, req)
			g.Room.Node = c.me
		} else {
			g, err = c.createOn(ctx, cand.host, req)
		}
		if err == nil {
			if cand.host == c.me {
				c.stats.placedLocal.Add(1)
			} else {
				c.stats.placedRemote.Add(1)
				c.view.took(cand.host)
				c.awaitArrival(ctx, g.Room.ID)
			}
			return g, nil
		}
		if ctx.Err() != nil || !placeElsewhere(err) {
			return room.Grant{}, err
		}
		c.stats.skipped.Add(1)
		c.log.Debug().Err(err).Str("to", cand.host).Msg("cluster: placement skipped a host")
	}
	return room.Grant{}, err
}

// createHere runs req on this host.
func (c *Cluster) createHere(ctx context.Context, req createRequest) (room.Grant, error) {
	if req.Ext {
		return c.local.CreateWith(ctx, req.Creator, req.options())
	}
	r, err := c.local.Create(ctx, req.Creator)
	return room.Grant{Room: r}, err
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
func (c *Cluster) createOn(ctx context.Context, host string, cr createRequest) (room.Grant, error) {
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return room.Grant{}, fmt.Errorf("%w: %s: %v", room.ErrUnreachable, host, err)
	}
	defer sub.Unsubscribe()
	req, _ := json.Marshal(cr) // plain values: cannot fail
	if err := c.nc.PublishMsg(&nats.Msg{Subject: subjectPrefix + host + ".create", Reply: inbox, Data: req}); err != nil {
		return room.Grant{}, fmt.Errorf("%w: %s: %v", room.ErrUnreachable, host, err)
	}
	rep, err := c.next(ctx, sub, host, c.cfg.AckTimeout)
	if err == nil && rep.Ack {
		rep, err = c.next(ctx, sub, host, c.cfg.CreateTimeout)
	}
	if err != nil {
		return room.Grant{}, err
	}
	r, err := c.outcome(host, rep)
	return room.Grant{Room: r, Token: rep.Token}, err
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
	g, err := c.join(ctx, joinRequest{ID: id, Player: player, Proof: proof})
	return g.Room, err
}

// JoinWith holds a seat for an extended JOIN: by id, or by a code that
// joins the room on whichever host runs it; that host checks the
// password and signs the seat's token.
func (c *Cluster) JoinWith(ctx context.Context, req room.JoinRequest) (room.Grant, error) {
	return c.join(ctx, joinRequest{ID: req.ID, Code: req.Code, Player: req.Player, Proof: req.Proof, Ext: true,
		Password: req.Password, Client: req.Client})
}

// join runs req here, or on the host whose room it names.
func (c *Cluster) join(ctx context.Context, jr joinRequest) (room.Grant, error) {
	host, ok := "", false
	if jr.Code != "" {
		host, ok = c.view.codeOwner(jr.Code)
	} else {
		host, ok = c.view.owner(jr.ID)
	}
	if !ok {
		g, err := c.joinHere(ctx, jr)
		if err == nil {
			g.Room.Node = c.me
		}
		return g, err
	}
	c.stats.forwarded.Add(1)
	req, _ := json.Marshal(jr) // plain values: cannot fail
	ctx, cancel := context.WithTimeout(ctx, c.cfg.JoinTimeout)
	defer cancel()
	m, err := c.nc.RequestWithContext(ctx, subjectPrefix+host+".join", req)
	if err != nil {
		c.stats.forwardRefused.Add(1)
		return room.Grant{}, fmt.Errorf("%w: %s: %v", room.ErrUnreachable, host, err)
	}
	rep, err := decodeReply(m.Data)
	if err != nil {
		c.stats.malformed.Add(1)
		c.stats.forwardRefused.Add(1)
		return room.Grant{}, fmt.Errorf("%w: %s answered garbage: %v", room.ErrUnreachable, host, err)
	}
	r, err := c.outcome(host, rep)
	if err != nil {
		c.stats.forwardRefused.Add(1)
	}
	return room.Grant{Room: r, Token: rep.Token}, err
}

// joinHere runs req on this host.
func (c *Cluster) joinHere(ctx context.Context, jr joinRequest) (room.Grant, error) {
	if jr.Ext {
		return c.local.JoinWith(ctx, room.JoinRequest{ID: jr.ID, Code: jr.Code, Player: jr.Player, Proof: jr.Proof,
			Password: jr.Password, Client: jr.Client})
	}
	r, err := c.local.Join(ctx, jr.ID, jr.Player, jr.Proof)
	return room.Grant{Room: r}, err
}

// QuickJoin takes a seat in the fullest joinable public room without a
// password that f matches, on any host, or places a new one. A host's own
// pick and seat are one step under its table's lock; across hosts a
// quick join tries the fullest first and goes on to the next when that
// one filled meanwhile.
func (c *Cluster) QuickJoin(ctx context.Context, f room.Filter, player netip.AddrPort, client [8]byte, mayCreate func() error) (room.Grant, error) {
	var cands []room.Room
	for _, r := range c.List().Rooms {
		if r.Public() && !r.Password && r.Joinable() && r.Source.Own() && r.Code != "" && f.Match(&r) {
			cands = append(cands, r)
		}
	}
	slices.SortStableFunc(cands, func(a, b room.Room) int { return cmp.Compare(b.Occupied(), a.Occupied()) })
	for _, r := range cands {
		g, err := c.JoinWith(ctx, room.JoinRequest{ID: r.ID, Player: player, Proof: room.SawListing, Client: client})
		if err == nil || err == room.ErrQuota || ctx.Err() != nil {
			return g, err
		}
	}
	if err := mayCreate(); err != nil {
		return room.Grant{}, err
	}
	return c.CreateWith(ctx, player, room.CreateOptions{Client: client,
		Meta: room.Meta{Mode: f.Mode, Map: f.Map, Tags: room.TagsOf(f.Tags)}})
}

// CodeTaken reports whether a room of another host has join code code,
// for the local table to draw another. A nil Cluster has none.
func (c *Cluster) CodeTaken(code string) bool {
	if c == nil {
		return false
	}
	_, ok := c.view.codeOwner(code)
	return ok
}

// serveCreate runs a CREATE another host placed here: it takes it at once
// (or refuses it past maxRemoteCreates), and answers once the room runs.
func (c *Cluster) serveCreate(m *nats.Msg) {
	var req createRequest
	if json.Unmarshal(m.Data, &req) != nil || !req.valid() || m.Reply == "" {
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
		g, err := c.createHere(c.ctx, req)
		c.stats.servedCreates.Add(1)
		if err := m.Respond(encodeGrant(g, err)); err != nil {
			c.log.Warn().Err(err).Uint32("id", g.Room.ID).Msg("cluster: a placed room's answer was not sent")
		}
	})
}

// ackReply tells the placing host that the CREATE is being run.
var ackReply, _ = json.Marshal(reply{Ack: true})

// serveJoin holds a seat for a JOIN another host forwarded. The local
// Join never waits, so it runs on the subscription's goroutine; one with
// a password to check runs on its own, bounded with the CREATEs.
func (c *Cluster) serveJoin(m *nats.Msg) {
	var req joinRequest
	if json.Unmarshal(m.Data, &req) != nil || !req.valid() || m.Reply == "" {
		c.stats.malformed.Add(1)
		return
	}
	run := func() {
		g, err := c.joinHere(c.ctx, req)
		c.stats.served.Add(1)
		m.Respond(encodeGrant(g, err))
	}
	if req.Password == "" {
		run()
		return
	}
	select {
	case c.creates <- struct{}{}:
	default:
		m.Respond(encodeReply(room.Room{}, fmt.Errorf("%w: %d requests of other hosts running here", room.ErrCapacity, maxRemoteCreates)))
		return
	}
	c.wg.Go(func() {
		defer func() { <-c.creates }()
		run()
	})
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

// Package cluster makes several Foyer hosts look like one lobby. Each host
// runs its own rooms with its own supervisor, as a standalone Foyer does;
// a Cluster stands in front of it as the room.Table every edge uses, made
// of the local table and a live view of every other host's rooms.
//
// The hosts share nothing but a NATS server with JetStream. Two key-value
// buckets and two request subjects per host are the whole protocol:
//
//	bucket foyer-cluster (one stream: a watcher sees keys in write order)
//	  hosts.<host>         heartbeat: public address, free capacity, range of ids (every Heartbeat)
//	  rooms.<host>.<id>    one room of the host, written on every change
//	bucket foyer-ids (kept forever)
//	  ranges.<n>           the host holding room ids n<<20 .. n<<20|0xFFFFF, and its high-water mark
//	  owners.<host>        the range the host holds
//	subject foyer.host.<host>.create   place a room on the host (an ack, then the room)
//	subject foyer.host.<host>.join     hold a seat in one of the host's rooms
//
// Each host is a NATS user that may write only its own keys and read only
// its own requests (auth.go), and what it writes is checked: it is listed
// with the rooms of its own range of ids only, and counted as able to run
// no more than MaxHostRooms rooms (view.go).
//
// A host publishes its own rooms and watches the whole of foyer-cluster,
// so List, and every listing built from it, never waits on the network.
// A host is alive while its heartbeat keeps coming: HostTTL without one
// (the host died, or it or the NATS server was cut off) and its rooms
// leave the view. A host that connects (at start or after an outage) first
// reads the bucket, then writes what differs from its table (its rooms,
// and deletions of rooms it no longer has), and only then its heartbeat:
// in stream order, every other host sees its rooms right before it sees
// it alive, so nothing is listed that is not there. A lobby that restarts
// within HostTTL and finds its rooms still running (adopted) rewrites
// nothing that did not change, so its rooms never leave the lists.
//
// CREATE is placed on the live host with the most free capacity (the
// local host on ties), by a request to that host that is acknowledged at
// once and answered when the room runs; a host that does not acknowledge
// within AckTimeout is skipped for the next. JOIN of another host's room
// is a request to that host, whose supervisor holds the seats, so seats
// stay exact wherever the JOIN arrived.
//
// Public addresses: the native protocol names a port, not an address, so
// a native client plays where it reached the lobby. A room is listed with
// no Host (room.Room.Host zero: "where you reached me") when it runs on
// this host or on a host whose public address is this host's: behind one
// forwarder, every host's rooms are reached at the one public address.
// Rooms of hosts with another public address carry it as Host, which the
// listings with addresses (GG2, GunZ) show and the native one offers only
// to requests that arrived at that address.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/room"
)

// Config is the [cluster] section of config.toml, and the timings behind
// it.
type Config struct {
	// NATS lists the URLs of the NATS servers. With Embedded also empty
	// there is no cluster.
	NATS []string
	// Embedded, when set, is the address ("0.0.0.0:4222") of a NATS
	// server with JetStream that this process runs itself; with NATS
	// empty, the host uses it in-process.
	Embedded string
	// StoreDir is where the embedded server keeps JetStream (the command
	// gives it state_dir/nats); empty means a temporary directory removed
	// on Close.
	StoreDir string
	// Host is this host's name in the cluster: letters, digits, '-', '_'
	// and inner dots. New fills it from the machine's hostname when empty.
	Host string
	// PublicAddr is the IP players reach this host's rooms at.
	PublicAddr netip.Addr
	// NKey is the file of this host's nkey seed (see auth.go), which
	// the embedded server of another host wrote to its KeysDir, or
	// `foyer nats-user` made; Credentials is a NATS credentials file
	// (JWT and seed) instead; TLSCA, TLSCert and TLSKey are the client's
	// TLS settings. All optional: a host of the embedded server needs
	// none.
	NKey                   string
	Credentials            string
	TLSCA, TLSCert, TLSKey string
	// Members are the other hosts the embedded server lets in: it makes
	// a key for each (and one for this host) and writes their seeds to
	// KeysDir, where they are kept. Only with Embedded.
	Members []string
	// KeysDir is where the embedded server keeps the hosts' seeds (the
	// command gives it state_dir/cluster); empty, with no Members: this
	// host's key lives in memory.
	KeysDir string
	// ServerTLSCert and ServerTLSKey make the embedded server speak TLS
	// only; empty: plain TCP (authentication is by nkeys either way).
	ServerTLSCert, ServerTLSKey string
	// MaxHostRooms bounds the rooms placement counts any other host as
	// able to run: a host claiming more free capacity than this minus
	// the rooms it lists is counted as having only that. Zero: unbounded.
	MaxHostRooms int

	// Heartbeat is how often a host says it is alive (and how free).
	Heartbeat time.Duration
	// HostTTL is how long a host may stay silent before its rooms leave
	// the view; a restarting lobby that comes back within it keeps its
	// rooms listed throughout.
	HostTTL time.Duration
	// AckTimeout bounds the wait for another host to take a CREATE;
	// CreateTimeout the wait for its room to run, once taken.
	AckTimeout, CreateTimeout time.Duration
	// JoinTimeout bounds the wait for a JOIN forwarded to a room's host.
	JoinTimeout time.Duration
	// ConnectTimeout bounds the first connection and range claim at
	// start.
	ConnectTimeout time.Duration
}

// DefaultConfig is standalone (no NATS), with the cluster's timings.
func DefaultConfig() Config {
	return Config{
		Heartbeat:      time.Second,
		HostTTL:        6 * time.Second,
		AckTimeout:     time.Second,
		CreateTimeout:  10 * time.Second,
		JoinTimeout:    2 * time.Second,
		ConnectTimeout: 10 * time.Second,
	}
}

// Enabled reports whether c makes this host part of a cluster.
func (c Config) Enabled() bool { return len(c.NATS) > 0 || c.Embedded != "" }

// hostName is what a host name may be: a KV key token and a subject token
// sequence (no wildcards, no spaces, no empty tokens).
var hostName = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// CheckHost reports whether name can name a host in the cluster.
func CheckHost(name string) error {
	if len(name) > 64 || !hostName.MatchString(name) {
		return fmt.Errorf("host name %q: want at most 64 letters, digits, '-', '_' and inner dots", name)
	}
	return nil
}

// Local is this host's own room table: the supervisor.
type Local interface {
	room.Extended
	// Capacity is how many rooms Create could start now.
	Capacity() int
}

// Names of the buckets and the prefix of the request subjects.
const (
	clusterBucket = "foyer-cluster"
	idsBucket     = "foyer-ids"
	subjectPrefix = "foyer.host."
	// keyTTL is how long the cluster bucket keeps a key not rewritten:
	// what a host that left for good leaves behind goes away, delete
	// markers included. Hosts rewrite their rooms well within it.
	keyTTL = time.Hour
	// opTimeout bounds one JetStream operation.
	opTimeout = 3 * time.Second
	// watchBuffer is how many events a watcher may fall behind before it
	// misses some, as for the supervisor.
	watchBuffer = 256
)

// Cluster is this host's part of the cluster: a room.Table over its own
// rooms and everyone else's. It does not implement room.JoinNeverWaiter:
// a JOIN of another host's room waits on that host.
type Cluster struct {
	cfg  Config
	log  zerolog.Logger
	me   string
	addr netip.Addr

	srv      *server.Server // the embedded server, or nil
	storeTmp string         // its temporary store, removed on Close
	key      nkeys.KeyPair  // this host's user key; nil without one
	nc       *nats.Conn
	js       jetstream.JetStream
	ids      idRange

	local Local
	view  *view

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	subs   []*nats.Subscription
	// links carries the connection's ups and downs to the session loop.
	links chan bool
	// changed wakes the publisher: the local table changed.
	changed chan struct{}
	// firstSync is closed once the host has written its table the first
	// time.
	firstSync chan struct{}
	creates   chan struct{} // bounds the remote CREATEs run at once
	// leaving asks the publisher for a last write before Close.
	leaving chan chan error

	mu       sync.Mutex // the merged snapshot; emit holds it so events go out in version order
	snap     room.Snapshot
	snapL    uint64 // local version of snap
	snapR    uint64 // view version of snap
	snapOK   bool
	watchers room.Watchers

	up    atomic.Bool // connected, and the table written since
	held  atomic.Bool // see Hold
	stats counters
}

var _ room.Table = (*Cluster)(nil)

// Start joins the cluster: it starts the embedded server if configured,
// connects to NATS, makes the buckets and claims this host's range of
// room ids (IDs), all within ConnectTimeout. It returns nil and no error
// when cfg is not Enabled. Attach then puts the local table in.
func Start(cfg Config, log zerolog.Logger) (*Cluster, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if cfg.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("cluster: host name: %w", err)
		}
		cfg.Host = h
	}
	if err := CheckHost(cfg.Host); err != nil {
		return nil, fmt.Errorf("cluster: %w; set [cluster] host", err)
	}
	if !cfg.PublicAddr.IsValid() || cfg.PublicAddr.IsUnspecified() {
		return nil, errors.New("cluster: no public address")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cluster{
		cfg: cfg, me: cfg.Host, addr: cfg.PublicAddr.Unmap(),
		log:       log.With().Str("component", "cluster").Str("host", cfg.Host).Logger(),
		ctx:       ctx,
		cancel:    cancel,
		links:     make(chan bool, 16),
		changed:   make(chan struct{}, 1),
		firstSync: make(chan struct{}),
		creates:   make(chan struct{}, maxRemoteCreates),
		leaving:   make(chan chan error),
	}
	c.view = newView(c.me, c.addr, cfg.HostTTL, cfg.MaxHostRooms)
	if err := c.start(); err != nil {
		c.closeConn()
		cancel()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start() error {
	if c.cfg.NKey != "" {
		kp, err := ReadSeed(c.cfg.NKey)
		if err != nil {
			return fmt.Errorf("cluster: nkey: %w", err)
		}
		c.key = kp
	}
	if c.cfg.Embedded != "" {
		if err := c.startEmbedded(); err != nil {
			return err
		}
	}
	if err := c.connect(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.ConnectTimeout)
	defer cancel()
	if err := c.buckets(ctx); err != nil {
		return fmt.Errorf("cluster: buckets: %w", err)
	}
	ids, err := claimRange(ctx, c.js, c.me, time.Now())
	if err != nil {
		return fmt.Errorf("cluster: room id range: %w", err)
	}
	c.ids = ids
	c.log.Info().Uint32("first_id", ids.first).Uint32("last_id", ids.last).Uint32("next_id", ids.next).
		Stringer("public_addr", c.addr).Msg("cluster joined")
	return nil
}

// connect connects to the configured servers, waiting up to
// ConnectTimeout for the first connection; the client reconnects by
// itself for ever after.
func (c *Cluster) connect() error {
	opts := []nats.Option{
		nats.Name("foyer " + c.me),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, 100*time.Millisecond),
		nats.Timeout(2 * time.Second),
		// A link that went silent is found out within about 3 s.
		nats.PingInterval(time.Second),
		nats.MaxPingsOutstanding(2),
		// Nothing is queued while disconnected: a write then fails at
		// once, and the reconnect rewrites what differs.
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) { c.link(true) }),
		nats.ReconnectHandler(func(*nats.Conn) { c.link(true) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if c.ctx.Err() != nil {
				return // leaving
			}
			c.log.Warn().Err(err).Msg("cluster disconnected: serving this host's rooms alone")
			c.link(false)
		}),
	}
	// Replies come to subjects of this host's own (see Permissions).
	opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(c.me)))
	switch {
	case c.key != nil:
		pub, _ := c.key.PublicKey()
		opts = append(opts, nats.Nkey(pub, c.key.Sign))
	case c.cfg.Credentials != "":
		opts = append(opts, nats.UserCredentials(c.cfg.Credentials))
	}
	if c.cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.cfg.TLSCA))
	}
	if c.cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.cfg.TLSCert, c.cfg.TLSKey))
	}
	url := strings.Join(c.cfg.NATS, ",")
	if len(c.cfg.NATS) == 0 {
		opts = append(opts, nats.InProcessServer(c.srv))
		url = "in-process"
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("cluster: nats %s: %w", url, err)
	}
	c.nc = nc
	deadline := time.Now().Add(c.cfg.ConnectTimeout)
	for !nc.IsConnected() {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: nats %s: not reachable within %v", url, c.cfg.ConnectTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("cluster: jetstream: %w", err)
	}
	c.js = js
	return nil
}

// link tells the session loop the connection went up or down, without
// ever blocking the client's callback goroutine.
func (c *Cluster) link(up bool) {
	if !up {
		c.up.Store(false)
	}
	select {
	case c.links <- up:
	default:
	}
}

// buckets makes (or finds) both buckets. A host may create a bucket's
// stream as every host does, never change it (see Permissions): one that
// exists with another configuration is used as it is.
func (c *Cluster) buckets(ctx context.Context) error {
	for _, cfg := range []jetstream.KeyValueConfig{
		{Bucket: clusterBucket, Description: "Foyer hosts and their rooms", TTL: keyTTL},
		{Bucket: idsBucket, Description: "Foyer room-id ranges by host"},
	} {
		if _, err := c.js.CreateKeyValue(ctx, cfg); err != nil {
			if _, lerr := c.js.KeyValue(ctx, cfg.Bucket); lerr != nil {
				return err
			}
		}
	}
	return nil
}

// IDs is the range of room ids this host hands out, and the first to
// hand out.
func (c *Cluster) IDs() (first, last, next uint32) { return c.ids.first, c.ids.last, c.ids.next }

// Attach puts this host's own table in the cluster and starts publishing
// it, answering other hosts' requests and watching theirs. It returns
// once the table has been written the first time, or after
// ConnectTimeout. A nil Cluster (no cluster) does nothing.
func (c *Cluster) Attach(local Local) error {
	if c == nil {
		return nil
	}
	c.local = local
	for _, s := range []struct {
		what string
		h    nats.MsgHandler
	}{{"create", c.serveCreate}, {"join", c.serveJoin}} {
		sub, err := c.nc.Subscribe(subjectPrefix+c.me+"."+s.what, s.h)
		if err != nil {
			return fmt.Errorf("cluster: subscribe: %w", err)
		}
		c.subs = append(c.subs, sub)
	}
	events := local.Watch(c.ctx)
	c.wg.Go(func() { c.forward(events) })
	c.wg.Go(c.expire)
	c.wg.Go(c.sessions)
	select {
	case <-c.firstSync:
	case <-time.After(c.cfg.ConnectTimeout):
		c.log.Warn().Dur("after", c.cfg.ConnectTimeout).Msg("cluster: table not yet written; serving meanwhile")
	}
	return nil
}

// forward passes the local table's events on to the cluster's watchers
// and wakes the publisher.
func (c *Cluster) forward(events <-chan room.Event) {
	for ev := range events {
		ev.Room.Node = c.me
		c.emit(ev, ev.Version)
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

// expire drops hosts that went silent, a few times per TTL.
func (c *Cluster) expire() {
	t := time.NewTicker(max(c.cfg.HostTTL/24, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			c.emitAll(c.view.expire(now))
		}
	}
}

// Close leaves the cluster, after the local table has had its last say
// (call it once the rooms are stopped, so that their ends are written).
// Rooms the local table still lists stay published until HostTTL runs
// out, so that a lobby restarting with its rooms adopted keeps them
// listed; a host with no room left says goodbye at once. The embedded
// server stops last. Close is nil-safe and may be called twice.
func (c *Cluster) Close() {
	if c == nil {
		return
	}
	for _, s := range c.subs {
		s.Unsubscribe()
	}
	if c.up.Load() && !c.held.Load() {
		done := make(chan error, 1)
		select {
		case c.leaving <- done:
			if err := <-done; err != nil {
				c.log.Warn().Err(err).Msg("cluster: leaving")
			}
		case <-time.After(opTimeout):
		}
	}
	c.cancel()
	c.wg.Wait()
	c.closeConn()
	c.log.Info().Msg("cluster left")
}

func (c *Cluster) closeConn() {
	if c.nc != nil {
		c.nc.Close()
	}
	if c.srv != nil {
		c.srv.Shutdown()
		c.srv.WaitForShutdown()
	}
	if c.storeTmp != "" {
		os.RemoveAll(c.storeTmp)
	}
}

// Table returns the table the edges serve: the cluster, or local itself
// when c is nil (no cluster).
func (c *Cluster) Table(local Local) room.Table {
	if c == nil {
		return local
	}
	return c
}

// Watch delivers table changes, local and remote, until ctx is done. A
// watcher that falls watchBuffer events behind misses events.
func (c *Cluster) Watch(ctx context.Context) <-chan room.Event {
	return c.watchers.Watch(ctx, watchBuffer)
}

// emit hands ev to every watcher, with the version of the merged table:
// local plus view versions, both only ever growing. local is the local
// table's version at the event (or later).
func (c *Cluster) emit(ev room.Event, local uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev.Version = local + c.view.version()
	c.watchers.Send(ev)
}

// emitAll emits the view's events.
func (c *Cluster) emitAll(evs []room.Event) {
	if len(evs) == 0 || c.local == nil {
		return
	}
	v := c.local.List().Version
	for _, ev := range evs {
		c.emit(ev, v)
	}
}

// List returns the merged table: this host's rooms and the rooms of every
// live host, by id. Its version is the sum of the local table's and the
// view's; both are read under one lock, so two snapshots with one version
// hold the same rooms.
func (c *Cluster) List() room.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	local := c.local.List()
	rv, remote := c.view.visible()
	if c.snapOK && c.snapL == local.Version && c.snapR == rv {
		return c.snap
	}
	rooms := make([]room.Room, 0, len(local.Rooms)+len(remote))
	i, j := 0, 0
	for i < len(local.Rooms) || j < len(remote) {
		if j == len(remote) || (i < len(local.Rooms) && local.Rooms[i].ID <= remote[j].ID) {
			r := local.Rooms[i]
			r.Node = c.me
			rooms = append(rooms, r)
			i++
			continue
		}
		rooms = append(rooms, remote[j])
		j++
	}
	c.snap = room.Snapshot{Version: local.Version + rv, Rooms: rooms}
	c.snapL, c.snapR, c.snapOK = local.Version, rv, true
	return c.snap
}

// Stats are the cluster's counters and gauges.
type Stats struct {
	Host string
	// Up is false while this host is cut off from NATS, or connected but
	// not yet resynchronised: it then serves its own rooms alone.
	Up          bool
	Hosts       int // live hosts, this one included
	RemoteRooms int // rooms of other hosts in the view
	Reconnects  uint64
	// Placed counts CREATEs placed by this host: on itself, on another.
	PlacedLocal, PlacedRemote uint64
	// Skipped counts hosts passed over by a placement: full, silent or
	// refusing.
	Skipped uint64
	// JoinsForwarded and JoinsRefused count JOINs sent to other hosts,
	// and those refused (by the owner or for its silence).
	JoinsForwarded, JoinsRefused uint64
	// Served counts requests other hosts sent here: CREATE, JOIN.
	ServedCreates, ServedJoins uint64
	// Malformed counts keys, values and requests that could not be read.
	Malformed  uint64
	WatchDrops uint64
}

type counters struct {
	reconnects, placedLocal, placedRemote, skipped   atomic.Uint64
	forwarded, forwardRefused, servedCreates, served atomic.Uint64
	malformed                                        atomic.Uint64
}

// Stats returns the current counters; nil-safe (zero Stats).
func (c *Cluster) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	hosts, rooms := c.view.counts()
	return Stats{
		Host: c.me, Up: c.up.Load(), Hosts: hosts + 1, RemoteRooms: rooms,
		Reconnects: c.stats.reconnects.Load(), PlacedLocal: c.stats.placedLocal.Load(),
		PlacedRemote: c.stats.placedRemote.Load(), Skipped: c.stats.skipped.Load(),
		JoinsForwarded: c.stats.forwarded.Load(), JoinsRefused: c.stats.forwardRefused.Load(),
		ServedCreates: c.stats.servedCreates.Load(), ServedJoins: c.stats.served.Load(),
		Malformed: c.stats.malformed.Load(), WatchDrops: c.watchers.Drops(),
	}
}

// Hold stops (on) or resumes writing this host's rooms, for an upgrade:
// the lobby hands its rooms to a new process of the same host, which
// reads the bucket and writes what differs from then on, while this one
// must not delete what it no longer tracks. Heartbeats go on, so the
// rooms stay listed throughout; Close after a Hold leaves everything as
// it is for the new process. Nil-safe.
func (c *Cluster) Hold(on bool) {
	if c != nil {
		c.held.Store(on)
	}
}

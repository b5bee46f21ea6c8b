// Package roomtable is the room table of one Foyer host: every room it
// lists, the seats held in them, their ids, and the rooms that edges
// registered for servers that run elsewhere. It is the single source of
// truth behind every edge (room.Table, room.Registry), with one joinable
// rule and one player count (package room).
//
// It knows nothing of processes. A Spawner (the supervisor) starts the
// process behind a room and enters it here; what the process reports goes
// into the table through Report, and its end through Remove. So the edges,
// their tests and a cluster's view of this host all run on the same table
// and its seat rules, whatever stands behind the rooms.
//
// One mutex guards the table. Nothing under it blocks: List, Join and
// Register return after a short in-memory update, which is why a lobby may
// answer JOIN on its read loop (JoinNeverWaits). The table never calls a
// Spawner under its lock, and calls the SeatsChanged hook under it only to
// mark a room (the hook must not block nor call back).
package roomtable

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/room"
)

// watchBuffer is how many events a watcher may fall behind before it
// misses some.
const watchBuffer = 256

// Spawner starts the rooms a Table hands out on Create.
type Spawner interface {
	// Spawn readies a room for creator and hands it out: it enters the
	// room (Enter) if it was not there yet, then lists it with the
	// creator's seat (Hand), and returns the listed row. Errors wrap
	// room.ErrCapacity, room.ErrNoPorts, room.ErrSpawn or room.ErrClosed.
	Spawn(ctx context.Context, creator netip.AddrPort, h Handout) (room.Room, error)
	// Capacity is how many rooms Spawn could hand out now.
	Capacity() int
	// RoomSize is how many places the rooms Spawn starts have.
	RoomSize() int
}

// Config is what a Table needs. DefaultConfig has the defaults; New takes
// every field as given.
type Config struct {
	// SeatTTL is how long a seat held by Create or Join waits for its
	// player; default 10s.
	SeatTTL time.Duration
	// IDFile, when set, persists the room-id high-water mark so ids never
	// repeat across restarts, however fast rooms were created. Without it
	// ids start at the Unix time in seconds, which a restart repeats only
	// if the previous run created more than one room per second since its
	// start.
	IDFile string
	// IDs confines the room ids to one range, for a host of a cluster;
	// the zero value confines nothing.
	IDs IDRange
	// SeatsPerAddress bounds the seats one IP holds in one room at once,
	// proven or not: one address cannot take a room by asking from many
	// ports. A seat its player takes up frees its place, so players
	// behind one address (a LAN party behind a NAT) come in one after
	// another, this many at a time.
	SeatsPerAddress int
	// RoomsPerNetwork bounds the rooms handed out at once to the
	// creators of one network (an IPv4 /24, an IPv6 /56), so that no
	// network, forged or real, takes every room of the host.
	RoomsPerNetwork int
	// SeatsChanged, when set, is called with a room's id whenever the
	// seats held in it change (held, refreshed, taken, expired), or what
	// its instance keeps of it (its metadata, code and password), with the
	// table's lock held: it must only take note. by is when the room's
	// process must have the change at the latest: the zero time (at once)
	// for a change that admits or turns away someone, and for a seat
	// merely refreshed, the moment it would have expired, so that a flood
	// of repeated JOINs need not reach the room one by one.
	SeatsChanged func(id uint32, by time.Time)
	// ReconnectGrace is how long the seat of a player the room lost (and
	// who holds a seat token) is kept for it to come back; default 30s.
	ReconnectGrace time.Duration
	// CodeTaken, when set, reports whether a join code is used by a room
	// elsewhere (another host of a cluster), so that codes are unique
	// across the cluster. It is called with the table's lock held.
	CodeTaken func(code string) bool
}

// DefaultConfig returns the defaults: seats wait 10s, an address holds 2
// seats of a room at once, a network 16 rooms (a quarter of the
// supervisor's default max_instances), ids are not persisted nor confined.
func DefaultConfig() Config {
	return Config{SeatTTL: 10 * time.Second, SeatsPerAddress: 2, RoomsPerNetwork: 16, ReconnectGrace: 30 * time.Second}
}

// Table is the room table. It implements room.Table and room.Registry.
type Table struct {
	cfg   Config
	log   zerolog.Logger
	spawn Spawner
	ids   *roomIDs
	stop  chan struct{}  // ends the id writer and the seat lines' writer
	done  sync.WaitGroup // both
	// seatLines carries the "room joined" lines of the seats hold takes
	// under t.mu to the goroutine that writes them: a log write may
	// block, and never under the table's lock. Nil below debug level, the
	// only level those lines are written at; a line that finds the queue
	// full is dropped, counted in seatLinesDropped.
	seatLines        chan seatLine
	seatLinesDropped atomic.Uint64

	mu         sync.Mutex
	closed     bool // Close: nothing new, ever
	held       bool // Hold: no Create or Join for now
	rooms      map[uint32]*entry
	registered map[string]*entry // also in rooms
	// nets counts the rooms handed out to each creator network, and
	// those being spawned for it.
	nets     map[netip.Prefix]int
	version  uint64
	snap     room.Snapshot
	snapOK   bool
	watchers room.Watchers
	stats    Stats
	codes    map[string]uint32 // join code to room id
	quick    []*pending        // quick joins' rooms being started
	// keys sign seat tokens (this host's epoch); hashing bounds the
	// password hashes computed at once.
	keys    *Keys
	hashing chan struct{}
}

// entry is one room of the table; its fields are guarded by Table.mu.
type entry struct {
	row      room.Room
	listed   bool   // handed out; before that a room is kept ready
	stopping bool   // on its way out: no one joins any more
	key      string // registered rooms: the registration key
	seats    seats
	// net is the creator's network, counted in Table.nets while the
	// room is listed; arrived is set once a player came.
	net     netip.Prefix
	arrived bool
	// password is the salted hash of the room's password; nil for none.
	password []byte
}

// The edges answer JOIN on their read loops for a table whose Join never
// waits.
var (
	_ room.Table           = (*Table)(nil)
	_ room.Registry        = (*Table)(nil)
	_ room.JoinNeverWaiter = (*Table)(nil)
)

// New returns an empty table whose Create asks spawn for rooms. Rooms
// registered through it, and the room-id writer, live until Close.
func New(cfg Config, spawn Spawner, log zerolog.Logger) (*Table, error) {
	switch {
	case cfg.SeatTTL <= 0:
		return nil, fmt.Errorf("room table: seat_ttl %v is not above 0", cfg.SeatTTL)
	case cfg.SeatsPerAddress < 1 || cfg.RoomsPerNetwork < 1:
		return nil, fmt.Errorf("room table: seats_per_address %d and rooms_per_network %d must be 1 or more",
			cfg.SeatsPerAddress, cfg.RoomsPerNetwork)
	case cfg.ReconnectGrace <= 0:
		return nil, fmt.Errorf("room table: reconnect_grace %v is not above 0", cfg.ReconnectGrace)
	}
	keys, err := NewKeys()
	if err != nil {
		return nil, err
	}
	if cfg.IDs != (IDRange{}) && !cfg.IDs.valid() {
		return nil, fmt.Errorf("room table: id range %d-%d starting at %d", cfg.IDs.First, cfg.IDs.Last, cfg.IDs.Next)
	}
	ids, err := newRoomIDs(time.Now(), cfg.IDFile, log)
	if err != nil {
		return nil, err
	}
	if cfg.IDs != (IDRange{}) {
		ids.confine(cfg.IDs)
	}
	t := &Table{
		cfg: cfg, log: log, spawn: spawn, ids: ids,
		stop:       make(chan struct{}),
		rooms:      make(map[uint32]*entry),
		registered: make(map[string]*entry),
		nets:       make(map[netip.Prefix]int),
		stats:      Stats{Reaped: make(map[room.Cause]uint64)},
		codes:      make(map[string]uint32),
		keys:       keys,
		hashing:    make(chan struct{}, maxHashing),
	}
	t.done.Go(func() { ids.writer(t.stop) })
	if log.GetLevel() <= zerolog.DebugLevel && zerolog.GlobalLevel() <= zerolog.DebugLevel {
		t.seatLines = make(chan seatLine, seatLineQueue)
		t.done.Go(t.writeSeatLines)
	}
	return t, nil
}

// seatLine is what the "room joined" line of a seat says: the room and
// the player it was taken for, and the room's counts as it left them.
type seatLine struct {
	id                         uint32
	player                     netip.AddrPort
	players, seats, maxPlayers int
}

// seatLineQueue is how many "room joined" lines wait for their writer at
// most.
const seatLineQueue = 1024

// writeSeatLines writes the lines hold queues until Close, and those
// still queued then, each after a line saying how many were dropped
// since the last one written, if any were.
func (t *Table) writeSeatLines() {
	for {
		select {
		case l := <-t.seatLines:
			t.writeSeatLine(l)
		case <-t.stop:
			for {
				select {
				case l := <-t.seatLines:
					t.writeSeatLine(l)
				default:
					return
				}
			}
		}
	}
}

// writeSeatLine writes l. A line is dropped only while the queue is full,
// so the lines queued then say every drop.
func (t *Table) writeSeatLine(l seatLine) {
	if n := t.seatLinesDropped.Swap(0); n > 0 {
		t.log.Debug().Uint64("lines", n).Msg("room joined lines dropped")
	}
	t.log.Debug().Uint32("id", l.id).Stringer("player", l.player).Int("players", l.players).
		Int("seats", l.seats).Int("max_players", l.maxPlayers).Msg("room joined")
}

// SeatTTL is how long a seat waits for its player.
func (t *Table) SeatTTL() time.Duration { return t.cfg.SeatTTL }

// List returns the listed rooms, ordered by id. The Rooms slice is shared
// by every caller holding this version and must not be modified.
func (t *Table) List() room.Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.snapOK {
		rooms := make([]room.Room, 0, len(t.rooms))
		for _, e := range t.rooms {
			if e.listed {
				rooms = append(rooms, e.view())
			}
		}
		slices.SortFunc(rooms, func(a, b room.Room) int { return cmp.Compare(a.ID, b.ID) })
		t.snap = room.Snapshot{Version: t.version, Rooms: rooms}
		t.snapOK = true
	}
	return t.snap
}

// Watch delivers table changes until ctx is done, then closes the channel.
// A watcher that falls watchBuffer events behind misses events (counted in
// Stats.WatchDrops); it can catch up with List.
func (t *Table) Watch(ctx context.Context) <-chan room.Event {
	return t.watchers.Watch(ctx, watchBuffer)
}

// Create has the Spawner start a room and hold a seat in it for creator,
// unless creator's network holds RoomsPerNetwork rooms already. Errors
// wrap room.ErrClosed, room.ErrQuota, or what the Spawner returned.
func (t *Table) Create(ctx context.Context, creator netip.AddrPort) (room.Room, error) {
	net := limit.PrefixOf(creator.Addr())
	t.mu.Lock()
	switch {
	case t.closed || t.held:
		t.mu.Unlock()
		return room.Room{}, room.ErrClosed
	case t.nets[net] >= t.cfg.RoomsPerNetwork:
		n := t.nets[net]
		t.mu.Unlock()
		return room.Room{}, fmt.Errorf("%w: network %v has %d rooms", room.ErrQuota, net, n)
	}
	t.nets[net]++ // the spawn's, until Hand counts the room
	t.mu.Unlock()
	defer t.uncount(net)
	return t.spawn.Spawn(ctx, creator, Handout{})
}

// uncount takes one from net's count of rooms.
func (t *Table) uncount(net netip.Prefix) {
	t.mu.Lock()
	t.forget(net)
	t.mu.Unlock()
}

// forget takes one from net's count. t.mu is held.
func (t *Table) forget(net netip.Prefix) {
	if t.nets[net]--; t.nets[net] <= 0 {
		delete(t.nets, net)
	}
}

// Capacity is how many rooms Create could hand out now.
func (t *Table) Capacity() int {
	if !t.open() {
		return 0
	}
	return t.spawn.Capacity()
}

// open reports whether the table takes rooms and seats now.
func (t *Table) open() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.closed && !t.held
}

// JoinNeverWaits reports that Join only touches the table under its short
// lock, never a process or the network, so a lobby may call it on its read
// loop.
func (t *Table) JoinNeverWaits() bool { return true }

// Join holds a seat in room id for player. It succeeds only for a listed
// room that is joinable (room.Room.JoinError); a player already holding a
// seat there keeps it, refreshed, and takes no second one, even in a room
// that is full. A seat taken or refreshed less than a second ago (a tenth
// of SeatTTL, if that is less) keeps its time.
func (t *Table) Join(_ context.Context, id uint32, player netip.AddrPort, proof room.Proof) (room.Room, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.join(id, player, proof, time.Now())
	if err != nil {
		return room.Room{}, err
	}
	return e.view(), nil
}

// JoinAt is Join at now (room.JoinerAt): a seat it holds or refreshes
// expires SeatTTL after now.
func (t *Table) JoinAt(_ context.Context, id uint32, player netip.AddrPort, proof room.Proof, now time.Time) (room.Held, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.join(id, player, proof, now)
	if err != nil {
		return room.Held{}, err
	}
	row := e.current()
	return room.Held{Port: row.Port, Occupied: row.Occupied()}, nil
}

// join is Join at now, returning the room's entry as the JOIN left it.
// t.mu is held.
func (t *Table) join(id uint32, player netip.AddrPort, proof room.Proof, now time.Time) (*entry, error) {
	if t.closed || t.held {
		return nil, room.ErrClosed
	}
	e := t.rooms[id]
	if id == 0 || e == nil || !e.listed || e.row.Private {
		return nil, room.ErrNoRoom
	}
	if e.password != nil {
		return nil, room.ErrWrongPassword // a seed JOIN carries none
	}
	if _, err := t.hold(e, player, proof, now); err != nil {
		return nil, err
	}
	return e, nil
}

// hold holds a seat in e for player at now, as Join says, and returns
// the seat's number; e.view() is then the room as the JOIN left it. t.mu
// is held.
func (t *Table) hold(e *entry, player netip.AddrPort, proof room.Proof, now time.Time) (uint32, error) {
	if e.stopping {
		return 0, room.ErrNotJoinable
	}
	err := e.current().JoinError()
	if err == room.ErrNotJoinable {
		return 0, err
	}
	// A player already holding a seat keeps it, refreshed, even in a room
	// that is full: its seat is one of those that fill it. A proven player
	// may take the place of a seat held for a sender that may be forged.
	proven := proof == room.SawListing
	held := e.seats.find(player)
	seated := held != nil
	if !seated && e.seats.ofIP(player.Addr()) >= t.cfg.SeatsPerAddress {
		// Proven or not: a proof shows only that an IP read a list.
		t.stats.SeatsOverQuota++
		return 0, room.ErrQuota
	}
	if err != nil && !seated {
		if !proven || !e.seats.dropOldestUnproven() {
			return 0, err
		}
		t.stats.SeatsDisplaced++
	}
	if seated && held.current(now, t.cfg.SeatTTL, proven) {
		return held.serial, nil // nothing changes
	}
	t.seatsChanged(e, refreshBy(held, proven))
	if !e.seats.hold(player, now.Add(t.cfg.SeatTTL), seatKind{proven: proven}) {
		return e.seats.serialOf(player), nil
	}
	t.stats.SeatsHeld++
	row := e.view()
	t.emit(room.Event{Kind: room.Changed, Room: row})
	// Seats come from remote requests: one line each at debug level only,
	// counted in Stats.SeatsHeld, written off the lock (see seatLines).
	if t.seatLines != nil {
		select {
		case t.seatLines <- seatLine{row.ID, player, row.Players, row.Seats, row.MaxPlayers}:
		default:
			t.seatLinesDropped.Add(1)
		}
	}
	return e.seats.serialOf(player), nil
}

// Hold stops Create and Join (they fail with room.ErrClosed) while on,
// for a handover of the rooms to another process; List, Watch and what the
// rooms report go on.
func (t *Table) Hold(on bool) {
	t.mu.Lock()
	t.held = on
	t.mu.Unlock()
}

// Close ends the table's taking of rooms for good: Create, Join and
// Register fail with room.ErrClosed, every registered room is reaped with
// the cause "stopped", and the id writer ends. Rooms with a process stay
// until their Spawner removes them.
func (t *Table) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	var dropped []room.Room
	for _, e := range t.registered {
		dropped = append(dropped, t.drop(e, room.Stopped))
	}
	t.mu.Unlock()
	close(t.stop)
	t.done.Wait()
	for _, row := range dropped {
		t.log.Info().Uint32("id", row.ID).Str("cause", string(room.Stopped)).Str("source", string(row.Source)).Msg("room reaped")
	}
}

// current is e's row with its count of seats brought up to date, in
// place, for the row's own methods (JoinError, Occupied) to read there
// without a copy. t.mu is held.
func (e *entry) current() *room.Room {
	e.row.Seats = e.seats.len()
	return &e.row
}

// view is a copy of e's table row, as it is now. t.mu is held.
func (e *entry) view() room.Room { return *e.current() }

// emit records a change of the table and hands it to every watcher that
// keeps up. t.mu is held.
func (t *Table) emit(ev room.Event) {
	t.version++
	t.snapOK = false
	ev.Version = t.version
	t.watchers.Send(ev)
}

// seatsChanged tells the hook that e's seats change, for its process to
// know by by (see Config.SeatsChanged). t.mu is held.
func (t *Table) seatsChanged(e *entry, by time.Time) {
	if t.cfg.SeatsChanged != nil && e.key == "" {
		t.cfg.SeatsChanged(e.row.ID, by)
	}
}

// Stats is what the table counts.
type Stats struct {
	Version uint64 // the table version
	Rooms   int    // listed rooms, including ones being stopped and registered ones
	// Registered is how many of Rooms were registered by an edge
	// (room.Registry) rather than spawned here.
	Registered int
	Created    uint64 // rooms handed out
	SeatsHeld  uint64 // seats newly held by Join
	// SeatsDisplaced counts seats of Unproven JOINs given to proven ones.
	SeatsDisplaced uint64
	// SeatsOverQuota counts JOINs refused for their address's seats.
	SeatsOverQuota uint64
	Reaped         map[room.Cause]uint64 // rooms removed, by cause (see room.Cause)
	WatchDrops     uint64                // events a slow watcher missed
}

// Stats returns a copy of the table's counters.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stats
	st.Reaped = maps.Clone(t.stats.Reaped)
	st.WatchDrops = t.watchers.Drops()
	st.Version = t.version
	for _, e := range t.rooms {
		if e.listed {
			st.Rooms++
		}
	}
	st.Registered = len(t.registered)
	return st
}

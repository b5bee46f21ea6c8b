// Package room is Foyer's room model: the room table every edge lists and
// joins through, and the rules that make one room look the same wherever
// it is shown.
//
// It knows nothing of processes, plugins or networks. A supervisor that
// spawns rooms on this host implements Table; so can one that stands for
// rooms on other hosts, or rooms adopted after a restart. Edges (the
// native lobby, the GG2-style and GunZ front-ends, the admin pages) import
// only this package, so they never link the process manager.
//
// Two rules live here and nowhere else:
//
//   - a room's player count, as every listing shows it, is its connected
//     players plus the seats held for players on their way in (Occupied),
//     so a room looks full as soon as a JOIN would be refused;
//   - a room is joinable while it is Waiting or counting down and has a
//     free place (JoinError, Joinable).
package room

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// Table is everything an edge needs from a room table. It is small on
// purpose: a supervisor on another host stands behind the same interface.
type Table interface {
	// List returns the current room table. Snapshots with equal Version
	// hold equal rooms, so an edge can cache what it derives from one.
	List() Snapshot
	// Create starts a room and holds a seat in it for creator.
	Create(ctx context.Context, creator netip.AddrPort) (Room, error)
	// Join holds a seat in room id for player. A player that already holds
	// a seat there gets the room again without a second seat. A JOIN that
	// proved its sender saw a listing (SawListing) may take the place of
	// the oldest seat held by an Unproven one when the room is otherwise
	// full; Unproven JOINs never displace anyone.
	Join(ctx context.Context, id uint32, player netip.AddrPort, proof Proof) (Room, error)
	// Watch delivers table changes until ctx is done. Slow readers miss
	// events rather than stall the table; each event carries the snapshot
	// version it produced.
	Watch(ctx context.Context) <-chan Event
}

// JoinNeverWaiter is implemented by a Table whose Join waits for nothing
// but a short in-memory lock, the one List takes too: the in-process
// supervisor. An edge may then answer JOIN on its read loop. A Table that
// does not implement it, or says false (one on another host, say), gets
// its JOINs run off the loop, so that a slow answer cannot stall LIST.
type JoinNeverWaiter interface {
	// JoinNeverWaits reports whether Join returns without waiting for
	// I/O, a process or a lock held across either.
	JoinNeverWaits() bool
}

// JoinerAt is implemented by a Table that can hold a seat as of a time
// its caller read already, and answer with only what a JOIN's reply
// needs: an edge that reads the clock once for a batch of datagrams
// spares the table a clock read per JOIN, and the copy of a whole row.
type JoinerAt interface {
	// JoinAt is Join at now: a seat it holds or refreshes lasts from now.
	JoinAt(ctx context.Context, id uint32, player netip.AddrPort, proof Proof, now time.Time) (Held, error)
}

// Held is what a JOIN that held or refreshed a seat says of its room: its
// port, and its Occupied count after the JOIN.
type Held struct {
	Port     uint16
	Occupied int
}

// Proof says what a JOIN proved about its sender. UDP source addresses can
// be forged, and a seat held for a forged sender blocks a real player
// until it expires; an edge that can tell real senders from possibly
// forged ones says so, and the table lets the real ones through.
type Proof uint8

// The proofs a JOIN can carry.
const (
	// Unproven JOINs may come from a forged address.
	Unproven Proof = iota
	// SawListing JOINs carry something only a receiver of a listing sent
	// to their address could know (see lobby's room-id cookies): the
	// sender is real.
	SawListing
)

// Seat is a place held in a room for a player on the way in: the lobby
// holds it on CREATE and JOIN, and the player's first game message takes
// it up. It lives until Expires unless refreshed or taken.
type Seat struct {
	Player  netip.AddrPort
	Expires time.Time
	// Proven is set for a seat held by a JOIN that proved its sender
	// real (SawListing); a seat once proven stays so.
	Proven bool
	// Creator is set for the seat of the CREATE that made the room,
	// which no JOIN displaces.
	Creator bool
	// Serial is the seat's number in its room, which the seat's token
	// names: a player that shows the token takes this seat, wherever it
	// comes from.
	Serial uint32
}

// Source says where a room comes from.
type Source string

// The sources of rooms.
const (
	// Instance rooms are instance processes spawned on this host.
	Instance Source = "instance"
	// Exec rooms are foreign game servers spawned on this host.
	Exec Source = "exec"
	// GG2 rooms were registered through the GG2-style front-end and run
	// elsewhere.
	GG2 Source = "gg2"
)

// Own reports whether rooms of this source are spawned by this Foyer, as
// opposed to registered by a server that runs elsewhere.
func (s Source) Own() bool { return s == Instance || s == Exec }

// Room is one row of the room table.
type Room struct {
	ID         uint32
	Port       uint16
	State      packet.RoomState
	Players    int // connected players, as the room reports them
	Seats      int // seats held for players not yet connected
	MaxPlayers int
	PID        int
	StartedAt  time.Time
	Source     Source
	// Name, Game and Map describe the room to browsers that show them;
	// Mode is its game mode and Tags its labels (an extended CREATE's,
	// or what the room says of itself).
	Name, Game, Map string
	Mode            string
	Tags            Tags
	// Code is the room's join code (package ext's alphabet), unique
	// among the rooms of a host and of a cluster.
	Code string
	// Private rooms are listed nowhere (but on the host's admin pages)
	// and joined only by their code.
	Private bool
	// Host is where a room runs when players cannot reach it at the
	// address they reached the lobby at: a registered room's server, or a
	// room of another cluster host with another public address. It is zero
	// for rooms on the lobby's own host, and for rooms of cluster hosts
	// that share its public address (see package cluster).
	Host netip.Addr
	// Node names the cluster host that runs the room; empty outside a
	// cluster.
	Node string
	// Password is set for rooms that ask for one: registered ones that
	// say so, and rooms created with a password.
	Password bool
	// Unchecked is set for a registered room whose address nothing
	// proved (a GG2 registration for UDP, which an operator let in): the
	// listings that carry addresses may show it as registered, but no
	// edge offers it as a room of its own host (the native lobby never
	// does).
	Unchecked bool
	// Adopted is set for a room this table took over from an earlier run
	// of the lobby (after a crash or an upgrade), rather than started.
	Adopted bool
}

// Occupied is the room's player count as every listing shows it:
// connected players plus seats held for players still connecting.
func (r *Room) Occupied() int { return r.Players + r.Seats }

// JoinError says why a player could not join r now: ErrNotJoinable once
// the match has begun, ErrFull when every place is taken or held; nil if
// the player can. It returns the sentinels themselves, unwrapped, so that
// refusing costs no allocation whatever the JOIN traffic.
func (r *Room) JoinError() error {
	if r.begun() {
		return ErrNotJoinable
	}
	if r.Occupied() >= r.MaxPlayers {
		return ErrFull
	}
	return nil
}

// Joinable reports whether a player could join r now; JoinError says why
// not.
func (r *Room) Joinable() bool { return !r.begun() && r.Occupied() < r.MaxPlayers }

// begun reports whether r's match has begun (or ended): no one joins then.
func (r *Room) begun() bool { return r.State != packet.Waiting && r.State != packet.Countdown }

// Registry puts rooms that run elsewhere (GG2-style registrations) into the
// one room table, so every edge lists them and JOIN counts their seats like
// those of spawned rooms. Expiry is the registering edge's business.
type Registry interface {
	// Register adds the room registered under key, or updates it in place
	// (keeping its id) when key is already registered.
	Register(key string, l Listing) (Room, error)
	// Unregister removes the room registered under key, if any.
	Unregister(key string)
}

// Listing is what a registration says about a room.
type Listing struct {
	Addr                netip.AddrPort // where players connect
	Players, MaxPlayers int
	Name, Game, Map     string
	Password            bool
	// Unchecked: nothing proved that Addr receives (see Room.Unchecked).
	Unchecked bool
}

// Snapshot is the room table at one moment.
type Snapshot struct {
	Version uint64
	Rooms   []Room // ordered by ID
}

// EventKind says what happened to a room.
type EventKind uint8

// The kinds of table change.
const (
	Created EventKind = iota + 1
	Changed           // state or players changed
	Reaped
)

// Cause says why a room left the table.
type Cause string

// The causes of a room's end.
const (
	Exited       Cause = "exited"       // its process ended with status 0
	Crashed      Cause = "crashed"      // its process ended otherwise
	Finished     Cause = "finished"     // it reported Finished
	Unhealthy    Cause = "unhealthy"    // it was silent too long
	Stopped      Cause = "stopped"      // the host stopped it
	Retired      Cause = "retired"      // a warm room past its age
	OOM          Cause = "oom"          // the kernel killed it at its memory limit
	Unregistered Cause = "unregistered" // a registered room's server left
	Lost         Cause = "lost"         // its cluster host left or was cut off
	Abandoned    Cause = "abandoned"    // its creator did not come, nor anyone else
	WaitedOut    Cause = "waited_out"   // its match did not begin within max_waiting
	Idle         Cause = "idle"         // nobody was in it for empty_timeout
	Lifetime     Cause = "lifetime"     // it reached max_lifetime
	Operator     Cause = "operator"     // an operator stopped it (foyer stop, the admin listener)
)

// Event is one change of the room table.
type Event struct {
	Kind    EventKind
	Room    Room
	Version uint64
	// Cause says why a room was reaped; ExitCode is its process's exit
	// status, or -1 when it died of a signal (Signal names it).
	Cause    Cause
	ExitCode int
	Signal   string
}

// Errors returned by Create, Join and Register; edges answer them with a
// refusal and count them by Reason.
var (
	ErrNoRoom      = errors.New("no such room")
	ErrFull        = errors.New("room is full")
	ErrNotJoinable = errors.New("room is not waiting or counting down")
	ErrCapacity    = errors.New("max_instances reached")
	// ErrQuota refuses what would take a network or an address past its
	// share: rooms per creator network, seats per address in one room.
	ErrQuota   = errors.New("over quota")
	ErrNoPorts = errors.New("no free port in the pool")
	ErrSpawn   = errors.New("instance failed to start")
	ErrClosed  = errors.New("room table is shutting down")
	// ErrListing is returned by Register for a listing that cannot be a
	// room (no address or port, counts outside 0..65535).
	ErrListing = errors.New("invalid listing")
	// ErrUnreachable is returned by a Table that forwards a request to
	// another host when that host did not answer.
	ErrUnreachable = errors.New("the room's host did not answer")
	// ErrDraining refuses a CREATE on a host that an operator is
	// draining: its rooms play on, it starts no new one.
	ErrDraining = errors.New("the host is draining: it starts no new room")
)

// reasons names the errors above for counters, in matching order.
var reasons = []struct {
	err  error
	name string
}{
	{ErrNoRoom, "no_room"},
	{ErrFull, "full"},
	{ErrNotJoinable, "not_joinable"},
	{ErrCapacity, "capacity"},
	{ErrQuota, "quota"},
	{ErrNoPorts, "no_ports"},
	{ErrSpawn, "spawn"},
	{ErrClosed, "closed"},
	{ErrListing, "listing"},
	{ErrUnreachable, "unreachable"},
	{ErrWrongPassword, "wrong_password"},
	{ErrRateLimited, "rate_limited"},
	{ErrDenied, "denied"},
	{ErrDraining, "draining"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "canceled"},
}

// Reason is a short, fixed label for err, for counters and metrics:
// "no_room", "full", "not_joinable", "capacity", "quota", "no_ports", "spawn",
// "closed", "listing", "unreachable", "wrong_password", "rate_limited",
// "denied", "draining", "canceled", or "other".
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "other"
}

// ReasonError is the inverse of Reason for the errors above: the error
// whose Reason is name, so that a refusal sent between hosts by its name
// arrives as the same sentinel (callers compare some of them with ==).
// "canceled" gives context.Canceled; "other" and unknown names give nil.
func ReasonError(name string) error {
	for _, r := range reasons {
		if r.name == name {
			return r.err
		}
	}
	return nil
}

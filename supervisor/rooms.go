package supervisor

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// Rooms is everything a lobby edge needs from a supervisor. It is small on
// purpose: a supervisor on another host will stand behind the same
// interface.
type Rooms interface {
	// List returns the current room table. Snapshots with equal Version
	// hold equal rooms, so an edge can cache what it derives from one.
	List() Snapshot
	// Create starts a room and holds a seat in it for creator.
	Create(ctx context.Context, creator netip.AddrPort) (Room, error)
	// Join holds a seat in room id for player. A player that already holds a
	// seat there gets the room again without a second seat.
	Join(ctx context.Context, id uint32, player netip.AddrPort) (Room, error)
	// Watch delivers table changes until ctx is done. Slow readers miss
	// events rather than stall the supervisor; each event carries the
	// snapshot version it produced.
	Watch(ctx context.Context) <-chan Event
}

// Room is one row of the room table.
type Room struct {
	ID         uint32
	Port       uint16
	State      packet.RoomState
	Players    int // connected players, as reported by the instance
	Seats      int // seats held for players not yet connected
	MaxPlayers int
	PID        int
	StartedAt  time.Time
	// Source says where the room comes from: "instance" (spawned here),
	// "exec" (a foreign game server spawned here), "gg2" (registered).
	Source string
	// Name, Game and Map describe the room to browsers that show them.
	Name, Game, Map string
	// Host is where a registered room runs; zero for rooms on the lobby's
	// own host.
	Host netip.Addr
	// Password is set for registered rooms that ask for one.
	Password bool
}

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
}

// Snapshot is the room table at one moment.
type Snapshot struct {
	Version uint64
	Rooms   []Room // ordered by ID
}

// EventKind says what happened to a room.
type EventKind uint8

const (
	RoomCreated EventKind = iota + 1
	RoomChanged           // state or players changed
	RoomReaped
)

// Event is one change of the room table.
type Event struct {
	Kind    EventKind
	Room    Room
	Version uint64
	// Cause says why a room was reaped: "exited", "crashed", "finished",
	// "unhealthy", "stopped", or "unregistered" for a registered room; ExitCode is the process's exit status, or -1
	// when it died of a signal (Signal names it).
	Cause    string
	ExitCode int
	Signal   string
}

// Errors returned by Create and Join; the lobby logs them as the reason of
// a JOIN_FAILED.
var (
	ErrNoRoom      = errors.New("no such room")
	ErrFull        = errors.New("room is full")
	ErrNotJoinable = errors.New("room is not waiting or counting down")
	ErrCapacity    = errors.New("max_instances reached")
	ErrNoPorts     = errors.New("no free port in the pool")
	ErrSpawn       = errors.New("instance failed to start")
	ErrClosed      = errors.New("supervisor is shutting down")
	// ErrListing is returned by Register for a listing that cannot be a
	// room (no address or port, counts outside 0..65535).
	ErrListing = errors.New("invalid listing")
)

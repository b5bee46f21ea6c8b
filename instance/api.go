// Package instance is the SDK a game process uses to be a Foyer room: a Go
// game implements [Game] and its main calls [Serve].
//
// Every room is its own OS process. The host (package supervisor/host)
// starts it, runs the hashicorp/go-plugin handshake (gRPC over a unix
// socket) and hands it its room: a port, a room id, the players it may
// take and its settings. The instance pushes its status (state, player
// count, each player's arrival and departure) to the host on every change
// and as a heartbeat; the host never polls. The service is defined in
// instance/instancepb, so a room can be written in any language with gRPC. The
// SDK also answers Teeworlds/DDNet server-info requests on the room's UDP
// port, so every room shows up in Teeworlds-style browsers ([Describer]).
//
// This package holds only the game's side: a game that imports it does not
// link the host. The process is built to survive a careless host: it exits
// when its parent dies, or, when the host gave it a reattach grace, ends
// its match once no host has watched it for that long.
//
// A game that does not serve its port itself but runs another program that
// does (Foyer's keeper of foreign game servers) implements [Runner], and
// reports through [KeptReporter].
package instance

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// Assignment is what the host hands an instance in Start.
type Assignment struct {
	RoomID     uint32
	Port       uint16
	MaxPlayers int
	Settings   map[string]string
	// Bind is the address the game port is bound on; the zero value means
	// every address.
	Bind netip.Addr
	// SeatKeys are this room's keys of the host's seat tokens, newest
	// first, and ReconnectGrace how long a token holder the game lost
	// keeps its seat: the SDK's door checks the tokens players present.
	// A game has no use for them.
	SeatKeys       []SeatKey
	ReconnectGrace time.Duration
}

// SeatKey is a room's key of one epoch of its host's seat tokens.
type SeatKey struct {
	Epoch uint32
	Key   []byte
}

// HeartbeatInterval is how often an instance repeats its status on
// Watch, whatever else it sent meanwhile: the longest it stays silent. It
// is below the promised 2 s so a busy scheduler does not make a healthy
// room look late.
const HeartbeatInterval = 1900 * time.Millisecond

// ErrPortInUse is what a Game's Start returns (wrapped or not) when it
// cannot use its port because another socket holds it; the SDK returns it
// too when it cannot bind the port itself. The host then tries the room on
// another port with the same, still fresh, process.
var ErrPortInUse = errors.New("instance: port in use")

// ErrTryAgain is what a Runner's Run returns (wrapped or not) when the
// program it runs ended before it was ready, for a reason the port may or
// may not be part of: the host tries the room again on another port, a
// few times at most, with the same still fresh process, and holds nothing
// against this port.
var ErrTryAgain = errors.New("instance: the program ended before it was ready")

// Reporter is how a game tells the host about itself. Its methods are safe
// for concurrent use and never block on the host.
type Reporter interface {
	// SetState reports a state change. Reporting Finished ends the
	// instance: once the host has the final status, the process exits.
	SetState(packet.RoomState)
	PlayerConnected(ip netip.Addr)
	PlayerDisconnected(ip netip.Addr)
}

// Game is what a game process implements.
type Game interface {
	// Start starts the game on conn, the UDP socket the SDK has bound on
	// a.Port, and returns once the game is ready for players. The game
	// owns conn from then on, and runs until it reports Finished or ctx
	// ends. conn is not the bare socket: the SDK answers Teeworlds
	// server-browser queries on the same port before the game sees them
	// (see Describer).
	Start(ctx context.Context, a Assignment, conn net.PacketConn, r Reporter) error
	// Stop ends the game; ctx's deadline is the grace period.
	Stop(ctx context.Context) error
}

// Reconnecter is implemented by a Game that follows its players to a new
// address. A player that holds a seat token (a client of the lobby's
// extension) and comes back from another address (a new NAT port,
// another network) presents the token there; the SDK's door seats it and
// tells the game, which moves the player found at from, if it still has
// it, to to, and otherwise lets to back in as that player (within the
// host's reconnect_grace of its departure). It is called on the goroutine
// reading the room's socket, before any datagram from to reaches the game.
// A game that does not implement it sees a player that comes back as a
// new one.
type Reconnecter interface {
	PlayerReconnected(from, to netip.AddrPort)
}

// Labeler is implemented by the Reporter every game gets: a room says
// what describes it in the lobby's listings (as Agones' SetLabel), on top
// of what its CREATE asked. Texts are cut to what listings carry (name 32
// bytes, mode 16, map 32, tag values 32); a tag key is 1-16 bytes of
// a-z, 0-9, '_', '-' and '.', and a room has 4 tags at most: what does not
// fit is dropped.
type Labeler interface {
	Reporter
	SetName(name string)
	SetMode(mode string)
	SetMap(mapName string)
	// SetLabel sets tag key to value; an empty value removes it.
	SetLabel(key, value string)
}

// Runner is implemented by a Game that does not serve the room's port
// itself but runs another program that does, such as a foreign game
// server. For a Runner, Serve binds nothing and answers no server-browser
// queries: it calls Run where it would call Start (Start is never
// called), and the Reporter it hands over is a KeptReporter.
type Runner interface {
	// Run starts the program for a and returns once it is ready for
	// players; it runs until it exits or ctx ends. Errors are Start's,
	// plus ErrTryAgain.
	Run(ctx context.Context, a Assignment, r Reporter) error
}

// Details is what a program that counts its players without their
// addresses says of itself: a foreign server's info, as its keeper asks
// for it.
type Details struct {
	Players, MaxPlayers int
	Name, Game, Map     string
	Password            bool
}

// KeptReporter is the Reporter of a Runner: it reports what a kept
// program says of itself and how it ended. The Reporter every game gets
// implements it.
type KeptReporter interface {
	Reporter
	// SetDetails reports the program's own account of itself, its player
	// count included. Every call is a sign of life that reaches the host
	// (a change at once, the same account with the next heartbeat): a
	// room that reported details once is alive only while it keeps
	// reporting them (once a second is the keeper's pace).
	SetDetails(Details)
	// Exited reports how the program ended: its exit code, or -1 and the
	// signal's name ("SIGKILL"). The instance then ends as after
	// Finished, and the host reports the room's end with this status.
	Exited(code int, signal string)
	// Seated reports whether ip holds a seat the host keeps for the room
	// now, and until when: the door's answer, for a program that keeps
	// its own door (the keeper's endpoint asks it for its server).
	Seated(ip netip.Addr) (expires time.Time, ok bool)
	// SeatToken reports whether b is a seat token of the room a player
	// may present now (signed by a key of its host, unexpired), its seat
	// and until when: the door's check, for a program that keeps its own
	// door. It seats no one.
	SeatToken(b []byte) (seat uint32, expires time.Time, ok bool)
}

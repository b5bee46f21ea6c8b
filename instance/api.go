// Package instance is the SDK a game process uses to be a Foyer room, and
// the host side the supervisor uses to run one.
//
// Every room is its own OS process. The host starts it with [Launch], which
// runs the hashicorp/go-plugin handshake (gRPC over a unix socket), then
// hands it its room with [Process.Start]. The instance pushes its status
// (state, player count, each player's arrival and departure) on a
// server-streaming Watch call, on every change and as a heartbeat; the host
// never polls. The service is defined in instance/proto, so a room can be
// written in any language with gRPC; a Go game needs only [Serve]. The
// SDK also answers Teeworlds/DDNet server-info requests on the room's UDP
// port, so every room shows up in Teeworlds-style browsers ([Describer]).
//
// The process side is built to survive a careless host and the host side a
// careless process: the instance exits when its parent dies, and nothing an
// instance writes to stdout or stderr can crash or stall the host.
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
}

// PlayerEventKind says whether a player came or went.
type PlayerEventKind uint8

// The player events a Status can carry.
const (
	NoPlayerEvent PlayerEventKind = iota
	PlayerConnected
	PlayerDisconnected
)

// Status is one report from an instance: sent on every change and as a
// heartbeat at least every 2 s.
type Status struct {
	State   packet.RoomState
	Players int
	Event   PlayerEventKind // NoPlayerEvent for heartbeats and state changes
	IP      netip.Addr      // the player's IP when Event is set
}

// HeartbeatInterval is the longest an instance stays silent on Watch: it
// repeats its status when nothing else was sent for this long. It is below
// the promised 2 s so a busy scheduler does not make a healthy room look
// late.
const HeartbeatInterval = 1900 * time.Millisecond

// ErrPortInUse is matched (errors.Is) by the error [Process.Start] returns
// when the instance could not bind its UDP port because another socket
// holds it. The instance is still fresh: Start may be called again with
// another port.
var ErrPortInUse = errors.New("instance: port in use")

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

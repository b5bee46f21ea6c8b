// Package instance is the SDK a game process uses to be a Foyer room: a Go
// game implements [Game] and its main calls [Serve].
//
// Every room is its own OS process. The host (package supervisor/host)
// starts it, runs the hashicorp/go-plugin handshake (gRPC over a unix
// socket) and hands it its room: a port, a room id, the players it may
// take and its settings. The instance pushes its status (state, player
// count, each player's arrival and departure) to the host on every change
// and as a heartbeat; the host never polls. The service is defined in
// instance/proto, so a room can be written in any language with gRPC. The
// SDK also answers Teeworlds/DDNet server-info requests on the room's UDP
// port, so every room shows up in Teeworlds-style browsers ([Describer]).
//
// This package holds only the game's side: a game that imports it does not
// link the host. The process is built to survive a careless host: it exits
// when its parent dies.
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

// HeartbeatInterval is the longest an instance stays silent on Watch: it
// repeats its status when nothing else was sent for this long. It is below
// the promised 2 s so a busy scheduler does not make a healthy room look
// late.
const HeartbeatInterval = 1900 * time.Millisecond

// ErrPortInUse is what a Game's Start returns (wrapped or not) when it
// cannot use its port because another socket holds it; the SDK returns it
// too when it cannot bind the port itself. The host then tries the room on
// another port with the same, still fresh, process.
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

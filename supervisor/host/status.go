package host

import (
	"net/netip"

	"github.com/foyerlobby/foyer/packet"
)

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

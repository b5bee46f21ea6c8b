package nftdoor

import (
	"errors"
	"net/netip"
	"time"
)

// Errors of the door.
var (
	// ErrUnavailable: the host keeps no door (not root, no CAP_NET_ADMIN,
	// no nf_tables); Open's error says which.
	ErrUnavailable = errors.New("nftdoor: the host cannot keep a door")
	// ErrNoRoom: the room is not in the table.
	ErrNoRoom = errors.New("nftdoor: no such room")
	// ErrClosed: the door was released or removed.
	ErrClosed = errors.New("nftdoor: closed")
)

// Seat is one address that may pass a room's door, until Expires.
type Seat struct {
	IP      netip.Addr
	Expires time.Time
}

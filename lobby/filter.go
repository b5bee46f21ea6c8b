package lobby

import (
	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// The lobby's socket filter keeps, in either framing, a datagram with a
// request's packetType, the type of a request the lobby serves, and a
// length that matches its payloadSize, which is at most what such a
// request carries: 4 bytes for the native requests, ext.MaxPayload for
// the extension's. Everything else (replies, a room's EXT_PRESENT,
// unknown types, lengths that lie, oversized datagrams) the kernel drops
// before a read loop sees it: a flood of them costs the lobby no read, no
// parse, no wake-up. What passes is parsed in full as before.
//
// The kernel counts a datagram its filter drops where it counts one it
// had no room for (the socket's drop count, SO_MEMINFO), so with a filter
// the count alone no longer tells a flood: see flooded.

// nativeRequests and extRequests are the request types the lobby serves.
var (
	nativeRequests = []packet.Type{packet.ListRooms, packet.CreateRoom, packet.JoinRoom}
	extRequests    = []packet.Type{ext.List, ext.Create, ext.Join, ext.Quick}
)

// filter is the shapes of the lobby's socket filter: the native
// requests, and the extension's when the table serves it; none without
// Config.Filter.
func (l *Lobby) filter() []sockfilter.Shape {
	if !l.cfg.Filter {
		return nil
	}
	shapes := packet.RequestShapes(nativeRequests, packet.MaxRequestPayload)
	if l.ext != nil {
		shapes = append(shapes, packet.RequestShapes(extRequests, ext.MaxPayload)...)
	}
	return shapes
}

// flooded reports whether a read of n datagrams after which the kernel's
// drop count was seen to move is the sign of a flood: a receive buffer
// that ran over. Without a filter every drop is one. With a filter, a
// buffer can only have run over if the loop fell behind, and then the
// read that follows finds a full batch waiting: every datagram the filter
// lets through is short enough that a receive buffer holds many batches
// of them. A drop seen on a read that did not fill the batch is the
// filter's.
func (l *Lobby) flooded(n int) bool { return !l.cfg.Filter || n == batchSize }

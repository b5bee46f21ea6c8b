package packet

import "errors"

// Error is the type of every error this package returns. Each value is a
// sentinel: compare with errors.Is, label with [Reason].
type Error struct {
	reason string
	msg    string
}

func (e *Error) Error() string { return e.msg }

// The ways a datagram can be wrong, in the order [Parse] checks them.
var (
	// ErrShort: the datagram is shorter than its framing's header plus CRC.
	ErrShort = &Error{"short", "packet: too short for a header"}
	// ErrMagic: a datagram starting with 0xA3 lacks the legacy magic
	// A3 5F C8 1D, or its version byte's low seven bits are not 1.
	ErrMagic = &Error{"magic", "packet: bad legacy magic or version"}
	// ErrLength: the length is not header + payloadSize + 4.
	ErrLength = &Error{"length", "packet: length does not match payloadSize"}
	// ErrCRC: the trailing CRC-32 does not match header and payload.
	ErrCRC = &Error{"crc", "packet: CRC mismatch"}
	// ErrPacketType: the packetType byte is neither 1 nor 2.
	ErrPacketType = &Error{"packet_type", "packet: packetType is not 1 or 2"}
	// ErrUnknownType: the messageType is not one of 0x40-0x46.
	ErrUnknownType = &Error{"unknown_type", "packet: unknown message type"}
	// ErrDirection: the packetType does not match the message type's
	// direction (a reply sent as a request or the reverse).
	ErrDirection = &Error{"direction", "packet: packetType does not match message direction"}
	// ErrNotRequest: ParseRequest was given a well-framed message that
	// travels server to client.
	ErrNotRequest = &Error{"not_request", "packet: not a request"}
	// ErrCompression: originalSize < payloadSize, the legacy compressed
	// flag disagrees with originalSize > payloadSize, the LZ4 block is
	// corrupt, or it does not inflate to exactly originalSize bytes.
	ErrCompression = &Error{"compression", "packet: bad compressed payload"}
	// ErrPayloadSize: the (inflated) payload has the wrong size for its
	// message type.
	ErrPayloadSize = &Error{"payload_size", "packet: wrong payload size for message type"}
	// ErrRoomCount: a ROOM_LIST holds more than MaxRooms rooms.
	ErrRoomCount = &Error{"room_count", "packet: more than 5037 rooms"}
	// ErrRoomState: a room's state is not Waiting..Finished.
	ErrRoomState = &Error{"room_state", "packet: room state out of range"}
	// ErrFraming: an encoder was asked for a Framing other than Compact or
	// Legacy. Decoders never return it.
	ErrFraming = &Error{"framing", "packet: unknown framing"}
)

// Reason is a short, stable label for a decode error, for counters:
// "short", "magic", "length", "crc", "packet_type", "unknown_type",
// "direction", "compression", "payload_size", "room_count", "room_state"
// or "framing". It sees through wrapping, returns "" for nil and
// "unknown" for errors from elsewhere.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := err.(*Error); ok { // as Parse returns it; errors.As would allocate
		return e.reason
	}
	var e *Error
	if errors.As(err, &e) {
		return e.reason
	}
	return "unknown"
}

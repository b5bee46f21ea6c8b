package game

import (
	"errors"

	"github.com/foyerlobby/foyer/packet"
)

// Error is the type of the errors this package adds to package packet's.
// Each value is a sentinel: compare with errors.Is, label with [Reason].
type Error struct {
	reason string
	msg    string
}

// Error returns the error's message.
func (e *Error) Error() string { return e.msg }

// The ways a well-framed datagram can still be no game message, in the
// order [Parse] checks them. Framing errors are package packet's.
var (
	// ErrFraming: an encoder was asked for a framing other than Compact
	// and Legacy. Decoders never return it.
	ErrFraming = &Error{"framing", "game: unknown framing"}
	// ErrType: the messageType is not a game message of the datagram's
	// framing.
	ErrType = &Error{"type", "game: unknown message type"}
	// ErrDirection: the packetType does not match the message's direction.
	ErrDirection = &Error{"direction", "game: packetType does not match the message"}
	// ErrSize: the payload does not have a size the message allows, or a
	// legacy GAME_END counts player scores (Foyer's rooms send none).
	ErrSize = &Error{"size", "game: wrong payload size for the message"}
	// ErrValue: a legacy flag byte (a GAME_END's victory, a
	// CLIENT_JOIN_REQUEST's spectator) is neither 0 nor 1.
	ErrValue = &Error{"value", "game: flag is neither 0 nor 1"}
	// ErrRange: a field does not fit its wire size (encoding only).
	ErrRange = &Error{"range", "game: field out of range"}
)

// Reason is a short, stable label for a decode error, for counters:
// package packet's labels for framing errors, this package's otherwise.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.reason
	}
	return packet.Reason(err)
}

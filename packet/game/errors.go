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
	// ErrFraming: the datagram uses the legacy framing.
	ErrFraming = &Error{"framing", "game: not the compact framing"}
	// ErrType: the messageType is not a game message.
	ErrType = &Error{"type", "game: unknown message type"}
	// ErrDirection: the packetType does not match the message's direction.
	ErrDirection = &Error{"direction", "game: packetType does not match the message"}
	// ErrSize: the payload does not have the size the message requires.
	ErrSize = &Error{"size", "game: wrong payload size for the message"}
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

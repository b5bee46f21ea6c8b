package ext

import (
	"errors"

	"github.com/foyerlobby/foyer/packet"
)

// Error is the type of the errors this package returns beside those of
// the framing (package packet). Each value is a sentinel: compare with
// errors.Is, label with [Reason].
type Error struct {
	reason string
	msg    string
}

func (e *Error) Error() string { return e.msg }

// The ways an extension payload can be wrong, in the order Parse finds
// them.
var (
	// ErrType: the message type is not an extension message.
	ErrType = &Error{"ext_type", "ext: not an extension message"}
	// ErrDirection: the packetType does not match the type's direction.
	ErrDirection = &Error{"ext_direction", "ext: packetType does not match message direction"}
	// ErrVersion: the payload's version is not one this package speaks.
	ErrVersion = &Error{"ext_version", "ext: unknown version"}
	// ErrShort: the payload ends inside a field.
	ErrShort = &Error{"ext_short", "ext: payload ends inside a field"}
	// ErrField: a field is out of its range: a text too long, not UTF-8
	// or with control characters, a code not of the alphabet, too many
	// tags, an unknown flag bit, a state beyond Finished.
	ErrField = &Error{"ext_field", "ext: field out of range"}
	// ErrTrailing: bytes follow the last field that are not padding
	// (zeros, in a request).
	ErrTrailing = &Error{"ext_trailing", "ext: bytes after the last field"}
	// ErrTooLong: an encoder was asked for a payload beyond MaxDatagram.
	ErrTooLong = &Error{"ext_too_long", "ext: message longer than a datagram may be"}
)

// Reason is a short, stable label for a decode error, for counters: the
// labels above ("ext_short", ...) or those of package packet for the
// framing ("crc", ...). It returns "" for nil and "unknown" for errors
// from elsewhere.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := err.(*Error); ok {
		return e.reason
	}
	var e *Error
	if errors.As(err, &e) {
		return e.reason
	}
	return packet.Reason(err)
}

package teeinfo

import (
	"errors"

	"github.com/foyerlobby/foyer/packet/internal/wire"
)

// Sentinel errors. Decoders return them wrapped in a [*ParseError]; the
// assembler returns them bare. Match with errors.Is.
var (
	// ErrTruncated: the bytes end inside a field, or a string has no
	// terminator.
	ErrTruncated = errors.New("truncated")
	// ErrHeader: the connless header or padding is not 0xFF bytes (or
	// "xe" for an extended request).
	ErrHeader = errors.New("bad header")
	// ErrType: the 4-byte type is not one this package knows.
	ErrType = errors.New("unknown type")
	// ErrLength: a request is not 15 bytes.
	ErrLength = errors.New("wrong length")
	// ErrString: a string is longer than MaxString bytes.
	ErrString = errors.New("string too long")
	// ErrInt: an int field is not a 32-bit decimal number.
	ErrInt = errors.New("bad int")
	// ErrPacketNo: an iex+ packet number is outside 1..63.
	ErrPacketNo = errors.New("packet number out of range")
	// ErrTooManyPlayers: more clients than MaxPlayers, than a reply's
	// num_clients announced, or than 64 packets can carry.
	ErrTooManyPlayers = errors.New("too many players")
	// ErrToken: a packet of a reply carries another token than the rest.
	ErrToken = errors.New("token mismatch")
	// ErrDuplicate: the assembler already has this packet number.
	ErrDuplicate = errors.New("duplicate packet")
)

// ParseError says which message failed to decode, why, and at which byte
// offset.
// Its Msg is "request", "inf3", "iext", "iex+" or "reply";
// its Err is one of the sentinels above.
type ParseError = wire.ParseError[codec]

// codec gives this package's errors their prefix and a type of their own.
type codec struct{}

func (codec) Name() string { return "teeinfo" }

func fail(msg string, off int, err error) error { return wire.Fail[codec](msg, off, err) }

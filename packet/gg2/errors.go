package gg2

import (
	"errors"

	"github.com/foyerlobby/foyer/packet/internal/wire"
)

// Sentinel errors. Decoders return them wrapped in a [*ParseError]; match
// with errors.Is.
var (
	// ErrTruncated: the bytes end inside a field.
	ErrTruncated = errors.New("truncated")
	// ErrLength: the message is longer than its fields, or a block length
	// does not match the block's contents.
	ErrLength = errors.New("wrong length")
	// ErrMessageType: the leading UUID is not the one the message needs.
	ErrMessageType = errors.New("wrong message UUID")
	// ErrTransport: the transport byte is neither 0 (TCP) nor 1 (UDP).
	ErrTransport = errors.New("unknown transport")
	// ErrPort: a registration names port 0.
	ErrPort = errors.New("port 0")
	// ErrNoName: a registration has no "name" key; the lobby ignores it.
	ErrNoName = errors.New("no name key")
	// ErrKey: a key is empty or longer than 255 bytes.
	ErrKey = errors.New("bad key")
	// ErrValue: a value is longer than 65535 bytes.
	ErrValue = errors.New("value too long")
	// ErrDuplicateKey: the same key appears twice in one table.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrCount: more entries or servers than the count field can carry.
	ErrCount = errors.New("too many entries")
	// ErrAddr: a list entry's address is not of the family its field needs.
	ErrAddr = errors.New("bad address")
)

// ParseError says which message failed to decode, why, and at which byte
// offset. Encoders use it too, with the offset of the offending field in
// the message they were asked to build.
// Its Msg is "registration", "unregister", "list query" or "list reply";
// its Err is one of the sentinels above.
type ParseError = wire.ParseError[codec]

// codec gives this package's errors their prefix and a type of their own.
type codec struct{}

func (codec) Name() string { return "gg2" }

func fail(msg string, off int, err error) error { return wire.Fail[codec](msg, off, err) }

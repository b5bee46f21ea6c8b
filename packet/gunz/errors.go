package gunz

import (
	"errors"

	"github.com/foyerlobby/foyer/packet/internal/wire"
)

// Sentinel errors. Decoders return them wrapped in a [*ParseError]; match
// with errors.Is.
var (
	// ErrTruncated: the bytes end inside a field.
	ErrTruncated = errors.New("truncated")
	// ErrMsgID: the packet header's msgId is not 0x64 (raw command).
	ErrMsgID = errors.New("not a raw command")
	// ErrSize: a size field disagrees with the bytes present.
	ErrSize = errors.New("size field mismatch")
	// ErrChecksum: the header checksum does not match the bytes.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrCommand: the commandId is not the one the message needs.
	ErrCommand = errors.New("wrong command")
	// ErrBlobSize: the response's oneBlobSize is not 15.
	ErrBlobSize = errors.New("server entry size is not 15")
	// ErrServerType: a server's type is not 1..6.
	ErrServerType = errors.New("unknown server type")
	// ErrStatus: a server's status is neither 0 nor 1.
	ErrStatus = errors.New("unknown server status")
	// ErrTooMany: more servers than one datagram can carry.
	ErrTooMany = errors.New("too many servers")
	// ErrAddr: a server's address is not IPv4.
	ErrAddr = errors.New("address is not IPv4")
)

// ParseError says which message failed to decode, why, and at which byte
// offset. Encoders use it too for the values they refuse.
// Its Msg is "request" or "response"; its Err is one of the sentinels above.
type ParseError = wire.ParseError[codec]

// codec gives this package's errors their prefix and a type of their own.
type codec struct{}

func (codec) Name() string { return "gunz" }

func fail(msg string, off int, err error) error { return wire.Fail[codec](msg, off, err) }

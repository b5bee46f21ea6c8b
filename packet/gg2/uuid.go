package gg2

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// UUID is a 16-byte identifier, carried on the wire in the order it is
// written. The zero value is the nil UUID.
type UUID [16]byte

// The protocol's fixed UUIDs. They are variables only because Go has no
// array constants; treat them as constants.
var (
	// RegisterUUID starts a registration.
	RegisterUUID = MustParseUUID("b5dae2e8-424f-9ed0-0fcb-8c21c7ca1352")
	// UnregisterUUID starts an unregister message.
	UnregisterUUID = MustParseUUID("488984ac-45dc-86e1-9901-98dd1c01c064")
	// ListProtocolUUID starts a list query: the reply layout this package
	// speaks.
	ListProtocolUUID = MustParseUUID("297d0df4-430c-bf61-640a-640897eaef57")
	// GG2LobbyUUID is the lobby ID of Gang Garrison 2 and its mods.
	GG2LobbyUUID = MustParseUUID("1ccf16b1-436d-856f-504d-cc1af306aaa7")
)

// errUUIDSyntax is what ParseUUID wraps.
var errUUIDSyntax = errors.New("want 8-4-4-4-12 hex digits")

// ParseUUID reads the canonical text form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
// (either case).
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("gg2: ParseUUID(%q): %w", s, errUUIDSyntax)
	}
	digits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(digits)); err != nil {
		return UUID{}, fmt.Errorf("gg2: ParseUUID(%q): %w", s, errUUIDSyntax)
	}
	return u, nil
}

// MustParseUUID is ParseUUID for constants; it panics on bad input.
func MustParseUUID(s string) UUID {
	u, err := ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

// String returns the canonical lower-case text form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// Kind names the message a UDP datagram to the lobby port carries.
type Kind uint8

const (
	// KindUnknown: the first 16 bytes are no UUID this package knows.
	KindUnknown Kind = iota
	// KindRegistration: starts with RegisterUUID.
	KindRegistration
	// KindUnregister: starts with UnregisterUUID.
	KindUnregister
)

// String names the kind for logs and counters.
func (k Kind) String() string {
	switch k {
	case KindRegistration:
		return "registration"
	case KindUnregister:
		return "unregister"
	}
	return "unknown"
}

// Classify tells a registration from an unregister by the first 16 bytes
// alone, before any full parse.
func Classify(b []byte) Kind {
	if len(b) < 16 {
		return KindUnknown
	}
	switch UUID(b[:16]) {
	case RegisterUUID:
		return KindRegistration
	case UnregisterUUID:
		return KindUnregister
	}
	return KindUnknown
}

package gg2

import (
	"bytes"
	"encoding/binary"
	"math"
)

// LegacyMagic starts every legacy registration.
var LegacyMagic = [6]byte{4, 8, 15, 16, 23, 42}

// LegacyRegistration is a legacy game server's announcement of itself.
// A legacy server is always reached over TCP.
type LegacyRegistration struct {
	Version LegacyVersion
	Port    uint16 // never 0 in a valid registration
	// Info is the info string, at most 255 bytes; ParseLegacyInfo reads
	// it.
	Info []byte
}

const msgLegacyRegistration = "legacy registration"

// IsLegacyRegistration reports whether b starts with the legacy magic, the
// cheap test a lobby makes before a full parse.
func IsLegacyRegistration(b []byte) bool {
	return bytes.HasPrefix(b, LegacyMagic[:])
}

// ParseLegacyRegistration decodes a legacy registration, which must end
// exactly where its info string does. Info aliases b.
func ParseLegacyRegistration(b []byte) (LegacyRegistration, error) {
	const msg = msgLegacyRegistration
	var r LegacyRegistration
	if len(b) < len(LegacyMagic) {
		return r, fail(msg, len(b), ErrTruncated)
	}
	if !IsLegacyRegistration(b) {
		return r, fail(msg, 0, ErrMessageType)
	}
	v, off, err := parseLegacyVersion(msg, b, len(LegacyMagic))
	if err != nil {
		return r, err
	}
	if len(b)-off < 3 {
		return r, fail(msg, len(b), ErrTruncated)
	}
	port := binary.LittleEndian.Uint16(b[off:])
	if port == 0 {
		return r, fail(msg, off, ErrPort)
	}
	n := int(b[off+2])
	start := off + 3
	switch {
	case len(b)-start < n:
		return r, fail(msg, len(b), ErrTruncated)
	case len(b)-start > n:
		return r, fail(msg, start+n, ErrLength)
	}
	return LegacyRegistration{Version: v, Port: port, Info: b[start:len(b):len(b)]}, nil
}

// Append encodes r. It refuses port 0 and an info string longer than 255
// bytes.
func (r *LegacyRegistration) Append(b []byte) ([]byte, error) {
	off := len(LegacyMagic) + r.Version.Len()
	switch {
	case r.Port == 0:
		return b, fail(msgLegacyRegistration, off, ErrPort)
	case len(r.Info) > math.MaxUint8:
		return b, fail(msgLegacyRegistration, off+3, ErrValue)
	}
	b = append(b, LegacyMagic[:]...)
	b = r.Version.Append(b)
	b = binary.LittleEndian.AppendUint16(b, r.Port)
	b = append(b, byte(len(r.Info)))
	return append(b, r.Info...), nil
}

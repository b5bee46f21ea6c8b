package gg2

import "encoding/binary"

// LegacyBaseUUID is the protocol id of legacy version 0: the one-byte
// version v stands for LegacyBaseUUID + v, the UUID read as a 128-bit
// big-endian number.
var LegacyBaseUUID = MustParseUUID("dea41970-4cea-a588-df40-62faef6f1738")

// legacyLong is the version byte that announces a 16-byte protocol id.
const legacyLong = 128

// LegacyVersion is the protocol id a legacy registration or query names,
// and the form it was written in.
type LegacyVersion struct {
	ID UUID
	// Long is set when the version is (or is to be) written as the byte
	// 128 and the 16-byte id. Append writes the long form also when ID has
	// no one-byte form.
	Long bool
}

// ShortLegacyVersion is version v, LegacyBaseUUID + v, in its one-byte
// form; 128, which has none, in the long form.
func ShortLegacyVersion(v uint8) LegacyVersion {
	return LegacyVersion{ID: LegacyBaseUUID.plus(v), Long: v == legacyLong}
}

// LegacyVersionOf is id in its shortest form.
func LegacyVersionOf(id UUID) LegacyVersion {
	_, short := id.shortVersion()
	return LegacyVersion{ID: id, Long: !short}
}

// shortVersion returns v and true when u is LegacyBaseUUID + v for a v
// that has a one-byte form (any byte but 128).
func (u UUID) shortVersion() (uint8, bool) {
	hi, lo := u.halves()
	bhi, blo := LegacyBaseUUID.halves()
	// u - base as a 128-bit difference; it is a short version when the
	// high half is 0 and the low half below 256.
	dlo := lo - blo
	borrow := uint64(0)
	if lo < blo {
		borrow = 1
	}
	if hi-bhi-borrow != 0 || dlo > 0xFF || dlo == legacyLong {
		return 0, false
	}
	return uint8(dlo), true
}

// plus returns u + v, the UUID read as a 128-bit big-endian number.
func (u UUID) plus(v uint8) UUID {
	hi, lo := u.halves()
	sum := lo + uint64(v)
	if sum < lo {
		hi++
	}
	var out UUID
	binary.BigEndian.PutUint64(out[:8], hi)
	binary.BigEndian.PutUint64(out[8:], sum)
	return out
}

func (u UUID) halves() (hi, lo uint64) {
	return binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
}

// Len is the version's size on the wire: 1 or 17.
func (v LegacyVersion) Len() int {
	if _, short := v.ID.shortVersion(); short && !v.Long {
		return 1
	}
	return 1 + len(v.ID)
}

// Append encodes v.
func (v LegacyVersion) Append(b []byte) []byte {
	if n, short := v.ID.shortVersion(); short && !v.Long {
		return append(b, n)
	}
	b = append(b, legacyLong)
	return append(b, v.ID[:]...)
}

// LegacyVersionLen is the size of the version whose first byte is first:
// 17 for 128, 1 otherwise. A reader of a stream learns from the first byte
// how many follow.
func LegacyVersionLen(first byte) int {
	if first == legacyLong {
		return 1 + len(UUID{})
	}
	return 1
}

// parseLegacyVersion reads the version at b[off:] and returns the offset
// after it.
func parseLegacyVersion(msg string, b []byte, off int) (LegacyVersion, int, error) {
	if len(b) <= off {
		return LegacyVersion{}, off, fail(msg, len(b), ErrTruncated)
	}
	if b[off] != legacyLong {
		return LegacyVersion{ID: LegacyBaseUUID.plus(b[off])}, off + 1, nil
	}
	if len(b)-off < 17 {
		return LegacyVersion{}, off, fail(msg, len(b), ErrTruncated)
	}
	return LegacyVersion{ID: UUID(b[off+1 : off+17]), Long: true}, off + 17, nil
}

// ParseLegacyQuery decodes a legacy query: exactly one version.
func ParseLegacyQuery(b []byte) (LegacyVersion, error) {
	const msg = "legacy query"
	v, end, err := parseLegacyVersion(msg, b, 0)
	if err != nil {
		return LegacyVersion{}, err
	}
	if end != len(b) {
		return LegacyVersion{}, fail(msg, end, ErrLength)
	}
	return v, nil
}

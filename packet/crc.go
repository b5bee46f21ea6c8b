package packet

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"sync"
)

// crcTables are the IEEE CRC-32's tables for eight bytes at a step
// (slicing-by-8): crcTables[k][b] is byte b's contribution k bytes ahead
// of the end of the step.
var crcTables = func() (t [8][256]uint32) {
	t[0] = *crc32.IEEETable
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][byte(c)] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// checksum is crc32.ChecksumIEEE(b). Below 16 bytes the standard library
// goes a byte at a time, and most of the seed's messages are that short
// (a JOIN's frame is 12 bytes, its answer's 14): they take eight at a
// step here, then four. Longer ones are the library's, which uses the
// processor's carry-less multiply where it can.
func checksum(b []byte) uint32 {
	if len(b) >= 16 {
		return crc32.ChecksumIEEE(b)
	}
	t := &crcTables
	c := ^uint32(0)
	if len(b) >= 8 {
		c ^= binary.LittleEndian.Uint32(b)
		c = t[7][byte(c)] ^ t[6][byte(c>>8)] ^ t[5][byte(c>>16)] ^ t[4][c>>24] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	if len(b) >= 4 {
		c ^= binary.LittleEndian.Uint32(b)
		c = t[3][byte(c)] ^ t[2][byte(c>>8)] ^ t[1][byte(c>>16)] ^ t[0][c>>24]
		b = b[4:]
	}
	for _, v := range b {
		c = t[0][byte(c)^v] ^ c>>8
	}
	return ^c
}

// The CRC of a datagram changed in a few bytes follows from its old CRC
// and the change alone: a CRC-32 is linear in its message, so two
// messages of the same length that differ by d at some offset, with z
// bytes after it, have CRCs that differ by d's CRC register (from zero,
// not inverted) carried over z zero bytes. Carrying a register over zero
// bytes is linear too, and over 2^i of them it is a table lookup per
// byte of the register: so a change costs a few lookups per set bit of
// z, whatever the datagram's length.

// zeroRuns are the tables of carrying the CRC register over 2^i zero
// bytes, for i below 16: zeroRuns()[i][j][b] is where byte j of the
// register, being b, goes. They are 64 KiB, made the first time they are
// needed: a room process, which never patches a checksum, never makes
// them.
var zeroRuns = sync.OnceValue(func() *[16][4][256]uint32 {
	t := new([16][4][256]uint32)
	// The register's bits, one at a time, carried over one zero byte,
	// then over twice as many as the level before.
	var images [32]uint32
	for k := range images {
		c := uint32(1) << k
		images[k] = crcTables[0][byte(c)] ^ c>>8
	}
	for i := range t {
		if i > 0 {
			for k := range images {
				images[k] = applyRun(&t[i-1], images[k])
			}
		}
		for j := range 4 {
			for b := 1; b < 256; b++ {
				low := b & -b // b's lowest bit, whose image is known
				t[i][j][b] = t[i][j][b&^low] ^ images[8*j+bits.TrailingZeros(uint(low))]
			}
		}
	}
	return t
})

// applyRun carries c over the zero bytes of one of zeroRuns' levels.
func applyRun(run *[4][256]uint32, c uint32) uint32 {
	return run[0][byte(c)] ^ run[1][byte(c>>8)] ^ run[2][byte(c>>16)] ^ run[3][c>>24]
}

// carry is the CRC register c carried over z zero bytes: past the
// tables' longest run (32 KiB), a run of it at a time.
func carry(c uint32, z int) uint32 {
	runs := zeroRuns()
	const longest = 1 << (len(runs) - 1)
	for ; z >= 2*longest; z -= longest {
		c = applyRun(&runs[len(runs)-1], c)
	}
	for i := 0; z != 0; i, z = i+1, z>>1 {
		if z&1 != 0 {
			c = applyRun(&runs[i], c)
		}
	}
	return c
}

// changedChecksum is the CRC of a message whose CRC was old, after the
// bytes at its offset off were XORed with d (at most 8 bytes): the
// message is n bytes long.
func changedChecksum(old uint32, d []byte, off, n int) uint32 {
	c := uint32(0) // d's register from zero: each byte's contribution apart
	for i, v := range d {
		c ^= crcTables[len(d)-1-i][v]
	}
	return old ^ carry(c, n-off-len(d))
}

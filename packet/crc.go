package packet

import (
	"encoding/binary"
	"hash/crc32"
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

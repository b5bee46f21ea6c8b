package packet

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// checksum is the standard library's CRC at every length about the
// step it takes, on bytes of every value.
func TestChecksumIsIEEE(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 40)
	for trial := range 2000 {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		n := trial % len(b)
		if got, want := checksum(b[:n]), crc32.ChecksumIEEE(b[:n]); got != want {
			t.Fatalf("checksum(% x) = %#08x, want %#08x", b[:n], got, want)
		}
	}
}

// BenchmarkChecksum is a JOIN's frame (12 bytes) and its answer's (14),
// here and in the standard library.
func BenchmarkChecksum(b *testing.B) {
	frame := []byte{0x01, 0x02, 0x00, 0x07, 0x00, 0x04, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0x75, 0x31}
	for _, n := range []int{12, 14} {
		b.Run(fmt.Sprintf("own/%d", n), func(b *testing.B) {
			for b.Loop() {
				checksum(frame[:n])
			}
		})
		b.Run(fmt.Sprintf("stdlib/%d", n), func(b *testing.B) {
			for b.Loop() {
				crc32.ChecksumIEEE(frame[:n])
			}
		})
	}
}

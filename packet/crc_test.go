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

// A message changed in a few bytes has the CRC changedChecksum says, the
// one computed anew: changes of one to six bytes at every offset of
// messages from a byte long to twice past the zero-run tables' longest
// run, and carry is that many zero bytes taken one at a time.
func TestChangedChecksumIsComputedAnew(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 6, 7, 16, 63, 64, 65, 255, 256, 1000, 4096, 4097, 40000, 1<<16 + 6, 1<<17 + 3} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		for trial := range 20 {
			k := 1 + trial%min(6, n)
			off := r.IntN(n - k + 1)
			if trial == 0 {
				off = n - k // nothing after the change
			}
			old := checksum(b)
			d := make([]byte, k)
			for i := range d {
				d[i] = byte(r.Uint32())
				b[off+i] ^= d[i]
			}
			if got, want := changedChecksum(old, d, off, n), checksum(b); got != want {
				t.Fatalf("%d bytes, % x changed at %d: %#08x, want %#08x", n, d, off, got, want)
			}
		}
	}
	for _, z := range []int{0, 1, 2, 3, 8, 255, 256, 257, 1 << 12, 1<<16 - 1, 1 << 16, 3<<16 + 5} {
		c := r.Uint32()
		want := c
		for range z {
			want = crcTables[0][byte(want)] ^ want>>8
		}
		if got := carry(c, z); got != want {
			t.Errorf("carry(%#08x, %d) = %#08x, want %#08x", c, z, got, want)
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

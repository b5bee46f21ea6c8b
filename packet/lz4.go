package packet

import (
	"sync"

	"github.com/pierrec/lz4/v4"
)

// maxExpansion bounds how far an LZ4 block can inflate: every input byte
// yields at most 255 output bytes (a match-length byte of 255), plus a few
// for the sequence it ends. A claim beyond that is a lie, and refusing it
// before allocating ties the allocation to bytes actually received.
const maxExpansion = 255

// checkCompression applies the size rules that hold before any inflating.
func checkCompression(h *Header, w *wire) error {
	n := len(w.payload)
	if h.Framing == Legacy && !w.flagged && w.original == 0 {
		return nil // the original game's encoder leaves it 0 on a plain payload
	}
	if w.original < n {
		return ErrCompression
	}
	if h.Framing == Legacy && w.flagged != (w.original > n) {
		return ErrCompression
	}
	return nil
}

// inflate leaves in w.payload its payload inflated, if header h says it
// is an LZ4 block. originalSize is a 16-bit field, so the buffer never exceeds 64
// KiB, and it is refused outright when the block could not possibly
// inflate that far.
func inflate(h *Header, w *wire) error {
	if err := checkCompression(h, w); err != nil {
		return err
	}
	if !h.Compressed {
		return nil
	}
	if w.original > maxExpansion*len(w.payload)+16 {
		return ErrCompression
	}
	out := make([]byte, w.original)
	n, err := lz4.UncompressBlock(w.payload, out)
	if err != nil || n != w.original {
		return ErrCompression
	}
	w.payload = out
	return nil
}

// compressor is one encoder's LZ4 state and a scratch block one byte short
// of the largest payload: a block that does not fit is not worth sending.
type compressor struct {
	lz4.Compressor
	buf [MaxPayload - 1]byte
}

var compressors = sync.Pool{New: func() any { return new(compressor) }}

// deflate replaces p's bytes with an LZ4 block of them and returns its
// size, if that block is strictly smaller than p; otherwise it leaves p
// as is and returns len(p).
func deflate(p []byte) int {
	if len(p) < 2 {
		return len(p)
	}
	c := compressors.Get().(*compressor)
	defer compressors.Put(c)
	n, err := c.CompressBlock(p, c.buf[:len(p)-1])
	if err != nil || n <= 0 || n >= len(p) {
		return len(p)
	}
	copy(p, c.buf[:n])
	return n
}

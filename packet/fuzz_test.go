package packet

import (
	"bytes"
	"reflect"
	"testing"
)

// withValidCRC returns b and, when b can hold a CRC, a copy of b whose CRC
// trailer is recomputed: a mutated input almost never keeps its CRC, and
// without the copy the fuzzer would never get past the CRC check.
func withValidCRC(b []byte) [][]byte {
	if len(b) < CRCLen {
		return [][]byte{b}
	}
	return [][]byte{b, fix(bytes.Clone(b))}
}

// checkRoundTrip is the invariant every fuzz target holds a decoder to:
// garbage is refused with one of the package's errors, and whatever is
// accepted re-encodes to the same bytes or, for a compressed payload whose
// block this encoder may build differently, to a datagram that decodes to
// the same value.
// TypeOf agrees with the decoder on what it accepts.
func checkRoundTrip[T any](t *testing.T, b []byte, decode func([]byte) (T, error), encode func(T) ([]byte, error), header func(*T) *Header) {
	v, err := decode(b)
	if err != nil {
		if Reason(err) == "unknown" {
			t.Fatalf("decode(%x) = %v, not one of the package's errors", b, err)
		}
		return
	}
	if !Is(b) {
		t.Fatalf("Is(%x) = false for a datagram the decoder accepts", b)
	}
	if typ := TypeOf(b); typ != header(&v).Type {
		t.Fatalf("TypeOf(%x) = %v, the decoder's %v", b, typ, header(&v).Type)
	}
	again, err := encode(v)
	if err != nil {
		t.Fatalf("decode(%x) = %+v, which does not encode: %v", b, v, err)
	}
	if !header(&v).Compressed && !originalLeftZero(b) {
		if !bytes.Equal(again, b) {
			t.Fatalf("decode(%x) = %+v, re-encoded as %x", b, v, again)
		}
		return
	}
	v2, err := decode(again)
	if err != nil {
		t.Fatalf("re-encoded %+v as %x, which the decoder refuses: %v", v, again, err)
	}
	if header(&v).Compressed {
		header(&v2).Compressed = true // the encoder sends a block only when it shrinks
	}
	if !reflect.DeepEqual(v2, v) {
		t.Fatalf("decode(%x) = %+v, its re-encoding decodes to %+v", b, v, v2)
	}
}

// originalLeftZero reports whether b is a legacy datagram with a payload
// and originalSize 0, as the original game sends a plain payload: the
// encoder writes the payload's size there, so only the message survives a
// round trip, not the bytes.
func originalLeftZero(b []byte) bool {
	return len(b) >= LegacyHeaderLen && b[0] == legacyMagic[0] && b[15] == 0 && b[16] == 0 && (b[13] != 0 || b[14] != 0)
}

func checkParse(t *testing.T, b []byte) {
	for _, d := range withValidCRC(b) {
		checkRoundTrip(t, d, Parse,
			func(m Message) ([]byte, error) { return m.Append(nil) },
			func(m *Message) *Header { return &m.Header })
	}
}

// FuzzDecode fuzzes whole datagrams, seeded with compact ones.
func FuzzDecode(f *testing.F) {
	f.Fuzz(checkParse)
}

// FuzzDecodeLegacy fuzzes the bytes that follow the legacy magic, so that
// every input exercises the legacy framing.
func FuzzDecodeLegacy(f *testing.F) {
	f.Fuzz(func(t *testing.T, rest []byte) {
		checkParse(t, append(legacyMagic[:], rest...))
	})
}

// FuzzDecodeFrame holds the framing layer to the same invariant, for any
// message type.
func FuzzDecodeFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range withValidCRC(b) {
			checkRoundTrip(t, d, ParseFrame,
				func(fr Frame) ([]byte, error) { return AppendFrame(nil, fr.Header, fr.Dir, fr.Payload), nil },
				func(fr *Frame) *Header { return &fr.Header })
		}
	})
}

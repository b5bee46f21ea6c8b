// Package wiretest holds the test helpers the packet codecs share: golden
// hex, truncated prefixes, fuzz round trips and codec benchmarks.
package wiretest

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// Hex decodes hex written with spaces and line breaks for readability.
func Hex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// EveryPrefixFails checks that parse refuses every proper prefix of the
// valid message b.
func EveryPrefixFails[M any](t testing.TB, b []byte, parse func([]byte) (M, error)) {
	t.Helper()
	for n := range len(b) {
		if m, err := parse(b[:n]); err == nil {
			t.Fatalf("prefix %d of % x parsed: %+v", n, b, m)
		}
	}
}

// RoundTrip is the check of a fuzz target whose encoding is canonical: if
// b parses, encode gives back exactly b, and that parses to the same value.
// Input that does not parse is fine: the fuzzer only shows it never panics.
func RoundTrip[M any](t testing.TB, b []byte, parse func([]byte) (M, error), encode func(M) ([]byte, error)) {
	t.Helper()
	m, err := parse(b)
	if err != nil {
		return
	}
	out, err := encode(m)
	if err != nil {
		t.Fatalf("parsed %+v but Append: %v", m, err)
	}
	if !bytes.Equal(out, b) {
		t.Fatalf("round trip changed bytes:\n in % x\nout % x", b, out)
	}
	again, err := parse(out)
	if err != nil || !reflect.DeepEqual(again, m) {
		t.Fatalf("reparse %+v, %v; want %+v", again, err, m)
	}
}

// BenchParse times parse on the valid message wire.
func BenchParse[M any](b *testing.B, wire []byte, parse func([]byte) (M, error)) {
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	for b.Loop() {
		if _, err := parse(wire); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchAppend times appendTo into a reused buffer of the given capacity,
// the way a server encodes into one buffer for every datagram.
func BenchAppend(b *testing.B, capacity int, appendTo func([]byte) []byte) {
	buf := make([]byte, 0, capacity)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendTo(buf[:0])
	}
}

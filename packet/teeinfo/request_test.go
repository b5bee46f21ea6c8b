package teeinfo

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

func TestRequestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire []byte
		req  Request
		tok  int
	}{
		{"vanilla", []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x07"), Request{Token: 7}, 7},
		{"extended", []byte("xe\x12\x34\x00\x00\xff\xff\xff\xffgie3\x07"), Request{Extended: true, ExtraToken: 0x1234, Token: 7}, 0x123407},
		// What quakestat -tees sends, captured from qstat 2.17.
		{"quakestat", []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x00"), Request{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequest(tc.wire)
			if err != nil || got != tc.req {
				t.Fatalf("ParseRequest = %+v, %v; want %+v", got, err, tc.req)
			}
			if got.ReplyToken() != tc.tok {
				t.Errorf("ReplyToken = %#x, want %#x", got.ReplyToken(), tc.tok)
			}
			if !IsRequest(tc.wire) {
				t.Error("IsRequest = false")
			}
			if out := tc.req.Append([]byte{1}); !bytes.Equal(out[1:], tc.wire) {
				t.Errorf("Append = %q, want %q", out[1:], tc.wire)
			}
		})
	}
}

// The extended request's reserved bytes are ignored, as the protocol asks.
func TestRequestReservedIgnored(t *testing.T) {
	r, err := ParseRequest([]byte("xe\x00\x01\xab\xcd\xff\xff\xff\xffgie3\x02"))
	if err != nil || r != (Request{Extended: true, ExtraToken: 1, Token: 2}) {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestRequestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire string
		want error
	}{
		// quakestat also sends these two older requests; they are not ours.
		{"quakestat gie", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie", ErrTruncated},
		{"quakestat gie2", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie2\x00", ErrType},
		{"long", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x00\x00", ErrLength},
		{"connless header", "\xff\xff\xff\xff\xff\xfe\xff\xff\xff\xffgie3\x00", ErrHeader},
		{"xf header", "xf\x00\x00\x00\x00\xff\xff\xff\xffgie3\x00", ErrHeader},
		{"padding", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00gie3\x00", ErrHeader},
		{"native packet", "\x01\x40\x00\x00\x00\x00\x00\x00\xed\x83\xaa\x8e\x00\x00\x00", ErrHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.wire)
			if _, err := ParseRequest(b); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if IsRequest(b) {
				t.Fatal("IsRequest = true")
			}
		})
	}
}

func TestRequestTruncated(t *testing.T) {
	for _, r := range []Request{{Token: 1}, {Extended: true, ExtraToken: 9, Token: 1}} {
		wire := r.Append(nil)
		for n := range len(wire) {
			if _, err := ParseRequest(wire[:n]); !errors.Is(err, ErrTruncated) || IsRequest(wire[:n]) {
				t.Fatalf("prefix %d of %q: %v", n, wire, err)
			}
		}
	}
	// Logs and callers read the error text: it names package, message and offset.
	if _, err := ParseRequest([]byte("\xff\xff")); err == nil || err.Error() != "teeinfo: request: truncated (at offset 2)" {
		t.Fatalf("ParseRequest(2 bytes) = %v", err)
	}
}

func FuzzRequest(f *testing.F) {
	f.Add(Request{Token: 7}.Append(nil))
	f.Add(Request{Extended: true, ExtraToken: 0xbeef, Token: 7}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if IsRequest(b) != (err == nil) {
			t.Fatalf("IsRequest disagrees with ParseRequest (%v) on %q", err, b)
		}
		if err != nil {
			return
		}
		again, err := ParseRequest(r.Append(nil))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip %+v -> %+v, %v", r, again, err)
		}
	})
}

func BenchmarkRequest(b *testing.B) {
	wire := Request{Extended: true, ExtraToken: 0x1234, Token: 7}.Append(nil)
	b.Run("parse", func(b *testing.B) { wiretest.BenchParse(b, wire, ParseRequest) })
	b.Run("append", func(b *testing.B) {
		wiretest.BenchAppend(b, RequestLen, Request{Extended: true, ExtraToken: 0x1234, Token: 7}.Append)
	})
	b.Run("is", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !IsRequest(wire) {
				b.Fatal("not a request")
			}
		}
	})
}

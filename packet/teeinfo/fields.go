package teeinfo

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxString is the longest string, in bytes before its terminator, that
// this package reads or writes. DDNet's longest field, the server name in
// an extended reply, is 255 bytes.
const MaxString = 255

// clean applies the text rules of the package doc. Clean text comes back
// as is, without allocating.
func clean(s string) string {
	if needsCleaning(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		s = strings.Map(func(r rune) rune {
			if r < ' ' {
				return ' '
			}
			return r
		}, s)
		s = strings.TrimLeft(s, " ")
	}
	if len(s) > MaxString {
		cut := MaxString
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

func needsCleaning(s string) bool {
	if len(s) > 0 && s[0] == ' ' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' {
			return true
		}
	}
	return !utf8.ValidString(s)
}

// appendString writes s cleaned and zero-terminated.
func appendString(b []byte, s string) []byte {
	b = append(b, clean(s)...)
	return append(b, 0)
}

// appendInt writes n as a zero-terminated decimal.
func appendInt(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, 0)
}

// reader walks the zero-terminated fields of one datagram. s is the
// datagram copied once to a string, so clean fields are substrings of it
// rather than an allocation each.
type reader struct {
	msg string
	b   []byte
	s   string
	off int
}

func (r *reader) more() bool { return r.off < len(r.b) }

// raw returns the next field's bytes, terminator excluded.
func (r *reader) raw() ([]byte, error) {
	n := bytes.IndexByte(r.b[r.off:], 0)
	switch {
	case n < 0 && len(r.b)-r.off > MaxString:
		return nil, fail(r.msg, r.off, ErrString)
	case n < 0:
		return nil, fail(r.msg, len(r.b), ErrTruncated)
	case n > MaxString:
		return nil, fail(r.msg, r.off, ErrString)
	}
	f := r.b[r.off : r.off+n]
	r.off += n + 1
	return f, nil
}

func (r *reader) str() (string, error) {
	start := r.off
	f, err := r.raw()
	if err != nil {
		return "", err
	}
	return clean(r.s[start : start+len(f)]), nil
}

// int reads a decimal that fits in 32 bits: an optional minus, then 1 to
// 10 digits.
func (r *reader) int() (int, error) {
	start := r.off
	f, err := r.raw()
	if err != nil {
		return 0, err
	}
	neg := len(f) > 0 && f[0] == '-'
	if neg {
		f = f[1:]
	}
	if len(f) == 0 || len(f) > 10 {
		return 0, fail(r.msg, start, ErrInt)
	}
	var n int64
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, fail(r.msg, start, ErrInt)
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fail(r.msg, start, ErrInt)
	}
	return int(n), nil
}

// ints reads len(dst) ints into the pointed-to fields.
func (r *reader) ints(dst ...*int) error {
	for _, p := range dst {
		n, err := r.int()
		if err != nil {
			return err
		}
		*p = n
	}
	return nil
}

// strs reads len(dst) strings into the pointed-to fields.
func (r *reader) strs(dst ...*string) error {
	for _, p := range dst {
		s, err := r.str()
		if err != nil {
			return err
		}
		*p = s
	}
	return nil
}

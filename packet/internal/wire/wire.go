// Package wire holds what the neighbour-protocol codecs (gg2, gunz and
// teeinfo) share: the error that says which message failed, why and where.
package wire

import "fmt"

// Codec names the package a [ParseError] comes from. Each codec passes its
// own zero-size type, so its errors stay a type of their own: errors.As
// with one codec's *ParseError does not match another codec's errors.
type Codec interface {
	// Name is the prefix of every error message, such as "gg2".
	Name() string
}

// ParseError says which message failed to decode, why, and at which byte
// offset. Encoders use it too, with the offset of the offending field in
// the message they were asked to build.
type ParseError[C Codec] struct {
	Msg string // the message at fault, in the codec's words
	Off int    // byte offset of the field at fault
	Err error  // one of the codec's sentinel errors
}

// Error reads "codec: message: reason (at offset n)".
func (e *ParseError[C]) Error() string {
	var c C
	return fmt.Sprintf("%s: %s: %v (at offset %d)", c.Name(), e.Msg, e.Err, e.Off)
}

// Unwrap returns the sentinel, so errors.Is matches it.
func (e *ParseError[C]) Unwrap() error { return e.Err }

// Fail returns a [*ParseError] of codec C.
func Fail[C Codec](msg string, off int, err error) error {
	return &ParseError[C]{Msg: msg, Off: off, Err: err}
}

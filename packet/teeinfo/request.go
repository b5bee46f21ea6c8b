package teeinfo

import (
	"bytes"
	"encoding/binary"
)

// RequestLen is the size of an info request, vanilla or extended.
const RequestLen = 15

var (
	connless     = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	extendedHdr  = []byte("xe")
	getInfo      = []byte{0xff, 0xff, 0xff, 0xff, 'g', 'i', 'e', '3'}
	replyPadding = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// Request asks a server for its info.
type Request struct {
	Extended   bool   // sent with the "xe" header: wants iext/iex+
	ExtraToken uint16 // extended only
	Token      uint8
}

// ReplyToken is the token the reply must carry: Token for a vanilla
// request, ExtraToken<<8 | Token for an extended one.
func (r Request) ReplyToken() int {
	if r.Extended {
		return int(r.ExtraToken)<<8 | int(r.Token)
	}
	return int(r.Token)
}

// IsRequest reports whether b is an info request, vanilla or extended. It
// looks only at fixed bytes, so a game socket can call it on every datagram
// to set info requests apart from its own packets.
func IsRequest(b []byte) bool {
	return len(b) == RequestLen &&
		string(b[6:14]) == string(getInfo) &&
		(string(b[:6]) == string(connless) || string(b[:2]) == string(extendedHdr))
}

// ParseRequest decodes an info request. The extended form's reserved bytes
// are ignored, as the protocol asks.
func ParseRequest(b []byte) (Request, error) {
	const msg = "request"
	switch {
	case len(b) < RequestLen:
		return Request{}, fail(msg, len(b), ErrTruncated)
	case len(b) > RequestLen:
		return Request{}, fail(msg, RequestLen, ErrLength)
	case !bytes.Equal(b[6:10], getInfo[:4]):
		return Request{}, fail(msg, 6, ErrHeader)
	case !bytes.Equal(b[10:14], getInfo[4:]):
		return Request{}, fail(msg, 10, ErrType)
	}
	r := Request{Token: b[14]}
	switch {
	case bytes.Equal(b[:6], connless):
	case bytes.Equal(b[:2], extendedHdr):
		r.Extended = true
		r.ExtraToken = binary.BigEndian.Uint16(b[2:])
	default:
		return Request{}, fail(msg, 0, ErrHeader)
	}
	return r, nil
}

// Append encodes r.
func (r Request) Append(b []byte) []byte {
	if r.Extended {
		b = append(b, extendedHdr...)
		b = binary.BigEndian.AppendUint16(b, r.ExtraToken)
		b = append(b, 0, 0)
	} else {
		b = append(b, connless...)
	}
	b = append(b, getInfo...)
	return append(b, r.Token)
}

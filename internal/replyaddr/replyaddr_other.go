//go:build !linux

package replyaddr

import (
	"errors"
	"net/netip"
	"syscall"
)

// Space is 0: elsewhere than on Linux no control message is read or sent.
var Space = 0

// Enable says that only Linux tells a datagram's destination here.
func Enable(syscall.Conn, bool) error {
	return errors.New("replyaddr: datagram destinations are read on Linux only")
}

// Walk calls f for no control message.
func Walk([]byte, func(level, typ int32, data []byte)) {}

// Find finds no destination.
func Find([]byte) (dst, src netip.Addr) { return netip.Addr{}, netip.Addr{} }

// Append appends nothing.
func Append(b []byte, _ netip.Addr) []byte { return b }

//go:build !linux

package sockfilter

import (
	"errors"
	"net"

	"golang.org/x/net/bpf"
)

var errUnsupported = errors.New("sockfilter: socket filters need Linux")

// Attach fails: socket filters need Linux.
func Attach(*net.UDPConn, []bpf.Instruction) error { return errUnsupported }

// Detach does nothing: no socket has a filter.
func Detach(*net.UDPConn) error { return nil }

// Drops fails: the kernel's drop count is read on Linux.
func Drops(*net.UDPConn) (uint32, error) { return 0, errUnsupported }

// Meter reads a socket's drop count on Linux.
type Meter struct{}

// NewMeter fails: the kernel's drop count is read on Linux.
func NewMeter(*net.UDPConn) (*Meter, error) { return nil, errUnsupported }

// Drops fails: the kernel's drop count is read on Linux.
func (*Meter) Drops() (uint32, error) { return 0, errUnsupported }

// Supported reports whether this system can filter sockets.
const Supported = false

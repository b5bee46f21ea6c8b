//go:build !linux

package nftdoor

import (
	"fmt"
	"net/netip"
)

// Door is a lobby's table; there is none but on Linux.
type Door struct{}

// Open fails: nf_tables is Linux's.
func Open(name string, probes ...netip.Addr) (*Door, error) {
	return nil, fmt.Errorf("%w: not Linux", ErrUnavailable)
}

func (d *Door) Name() string                           { return "" }
func (d *Door) Rooms() map[uint32]uint16               { return nil }
func (d *Door) Room(id uint32, port uint16) error      { return ErrClosed }
func (d *Door) Adopt(id uint32, port uint16) error     { return ErrClosed }
func (d *Door) Seats(id uint32, seats []Seat) error    { return ErrClosed }
func (d *Door) Close(id uint32) error                  { return ErrClosed }
func (d *Door) Reconcile(keep map[uint32]uint16) error { return ErrClosed }
func (d *Door) Release() error                         { return nil }
func (d *Door) Remove() error                          { return nil }

// Exists reports that no table exists.
func Exists(name string) (bool, error) { return false, nil }

// Sweep has nothing to sweep.
func Sweep(stale func(name string) bool) ([]string, error) { return nil, nil }

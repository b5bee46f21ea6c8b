//go:build !linux

package foyertest

import (
	"net/netip"
	"testing"
)

// inProcess is empty where rooms cannot run: Start is Linux's.
type inProcess struct{}

// Start runs a lobby and its rooms in the test's own process, which only
// Linux can: rooms are Linux processes. Here it fails the test with that
// reason; StartBinary drives a lobby binary wherever one runs.
func Start(t testing.TB, _ ...Option) *Lobby {
	t.Helper()
	t.Fatal("foyertest: Start runs rooms in this process, and rooms run on Linux only")
	return nil
}

// inProcessAdmin is never reached: Start fails here.
func (l *Lobby) inProcessAdmin() netip.AddrPort { return netip.AddrPort{} }

//go:build !linux

package instance

import (
	"context"
	"errors"
)

// Rooms run under foyer serve, on Linux only. Elsewhere the package
// builds, so that a room's code compiles where its authors work, and a
// room run there has none of what follows.

var errNotLinux = errors.New("foyer instance: rooms run on Linux only")

// awaitParentExit cannot wait: the caller polls.
func awaitParentExit(int) error { return errNotLinux }

// endProcesses has no cgroups nor subreaper to end a room's processes by.
func endProcesses(context.Context, string) error { return errNotLinux }

// redirect leaves the descriptors as they are.
func redirect(string) bool { return false }

// stderrSize cannot tell.
func stderrSize() (int64, bool) { return 0, false }

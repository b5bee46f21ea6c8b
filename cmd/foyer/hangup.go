//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// upgrades are the SIGHUPs that ask foyer serve to upgrade. A SIGHUP that
// finds a terminal the process started on hung up (its window closed, its
// ssh session gone) is that hangup, not a request: it stops the server
// through hangUp, as closing a terminal stops what runs in it, rather
// than leave a lobby nobody sees holding its ports and rooms.
func upgrades(log zerolog.Logger, hangUp context.CancelFunc) <-chan os.Signal {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	ttys := terminals()
	if len(ttys) == 0 {
		return sig
	}
	asked := make(chan os.Signal, 1)
	go func() {
		for s := range sig {
			if hungUp(ttys) {
				log.Info().Msg("terminal hung up")
				hangUp()
				return
			}
			select {
			case asked <- s:
			default: // one is waiting already, as signal.Notify has it
			}
		}
	}()
	return asked
}

// terminals are the standard descriptors that are terminals.
func terminals() []int {
	var fds []int
	for fd := range 3 {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}

// hungUp reports whether one of fds, terminals once, has been hung up: the
// kernel then fails every request on it with EIO.
func hungUp(fds []int) bool {
	for _, fd := range fds {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); errors.Is(err, unix.EIO) {
			return true
		}
	}
	return false
}

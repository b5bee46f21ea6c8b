//go:build linux

package main

import "github.com/foyerlobby/foyer/cmd/internal/roomcmd"

// runInstance is the hidden instance subcommand, which foyer-room also
// runs: see package roomcmd.
var runInstance = roomcmd.Run

//go:build !linux

package main

import (
	"fmt"
	"github.com/foyerlobby/foyer/cmd/internal/cli"
	"io"
	"runtime"
)

// runServe and runInstance say why they cannot run here: a lobby's rooms
// are Linux processes (process groups, parent-death signals, pidfds,
// cgroups). The client commands run wherever Go runs.
func runServe(_ []string, _, stderr io.Writer) int    { return linuxOnly("serve", stderr) }
func runInstance(_ []string, _, stderr io.Writer) int { return linuxOnly("instance", stderr) }
func runNATSUser(_ []string, _, stderr io.Writer) int { return linuxOnly("nats-user", stderr) }

func linuxOnly(cmd string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "foyer %s: runs on Linux only (rooms are Linux processes); this %s build has the client commands\n", cmd, runtime.GOOS)
	return cli.ExitFail
}

package proc

import (
	"os"
	"os/signal"
	"syscall"
)

// SurviveBrokenPipes makes a write to standard output or error whose
// reader has gone (a pipe to a log collector that exited) fail with EPIPE,
// as a write to any other descriptor does, where Go's default is to kill
// the process: what reads a process's log is not the process's to die
// with. It asks for SIGPIPE rather than ignoring it, so that the programs
// the process starts begin with SIGPIPE's default action, not with an
// ignored SIGPIPE they would inherit.
func SurviveBrokenPipes() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

package main

import (
	"errors"
	"flag"
	"io"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/rs/zerolog"
)

// runInstance serves one reference room to the supervisor that started
// this process. Run by hand it explains itself and exits with status 1.
func runInstance(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("instance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, "Usage: foyer instance\n\n"+
			"Serves one reference room. The supervisor of 'foyer serve' starts it;\n"+
			"it takes no flags and does nothing when run by hand.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	// The SDK takes over os.Stderr; the log keeps the original, which the
	// supervisor forwards to its own log.
	log := zerolog.New(stderr).With().Timestamp().Logger()
	instance.Serve(refroom.New(log))
	return 1 // Serve exits the process
}

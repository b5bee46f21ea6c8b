package main

import (
	"io"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/rs/zerolog"
)

var instanceHelp = help{
	usage: []string{"foyer instance"},
	about: `Serve one reference room to the supervisor of 'foyer serve', which starts
this command for every room when [supervisor] command is empty or names
it. It takes no arguments; run by hand it explains itself and exits 1.`,
	example: []string{
		"foyer instance --help",
		"# config.toml; an empty command runs this executable's instance:",
		"#   [supervisor]",
		`#   command = ["/usr/local/bin/foyer", "instance"]`,
	},
}

// runInstance serves one reference room to the supervisor that started
// this process.
func runInstance(args []string, stdout, stderr io.Writer) int {
	c := newCLI("instance", instanceHelp, stdout, stderr)
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.noArgs(pos); !ok {
		return code
	}
	// The SDK takes over os.Stderr; the log keeps the original, which the
	// supervisor forwards to its own log.
	log := zerolog.New(stderr).With().Timestamp().Logger()
	instance.Serve(refroom.New(log))
	return exitFail // Serve exits the process
}

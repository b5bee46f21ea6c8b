// Package tmptest gives a test process a temporary directory of its own,
// so that what its tests, and the processes they start, leave there can
// be told from what everything else on the machine leaves, reported, and
// removed.
package tmptest

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Dir makes a new directory in the temporary one for a test's processes,
// writable by all and sticky as /tmp is (a room run as a user of its own
// may have to reach its directory there), with a short name: unix
// sockets live under it. The caller removes it.
func Dir() (string, error) {
	dir, err := os.MkdirTemp("", "fyt")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// stderr is where Own's report goes.
var stderr io.Writer = os.Stderr

// Own, for a TestMain, points TMPDIR, for the rest of the process and
// every process it starts, at a new directory made by Dir; if none can be
// made it says why and exits. done, called with the tests' exit code once
// they have run, removes the directory and returns the code, or, if
// anything was left in it, names what and returns a failure.
func Own() (done func(code int) int) {
	dir, err := Dir()
	if err != nil {
		fmt.Fprintln(stderr, "tmptest:", err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", dir)
	return func(code int) int {
		entries, _ := os.ReadDir(dir)
		os.RemoveAll(dir)
		if len(entries) == 0 {
			return code
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		fmt.Fprintln(stderr, "FAIL: left in the temporary directory:", strings.Join(names, ", "))
		return 1
	}
}

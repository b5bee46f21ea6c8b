// Package tmptest gives a test process a temporary directory of its own,
// so that what its tests, and the processes they start, leave there can
// be told from what everything else on the machine leaves, reported, and
// removed.
package tmptest

import (
	"os"
	"slices"
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

// Own points TMPDIR, for the rest of the process and every process it
// starts, at a new directory made by Dir. left, called once the tests
// have run, names what is left in it, and removes it.
func Own() (left func() []string, err error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	os.Setenv("TMPDIR", dir)
	return func() []string {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, "temporary "+e.Name())
		}
		os.RemoveAll(dir)
		return slices.Clip(names)
	}, nil
}

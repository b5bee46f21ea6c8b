package foyertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/foyerlobby/foyer/internal/tmptest"
)

// TestMain runs the harness's tests with a temporary directory of their
// own, and fails them on anything left there but this process's build of
// the binary, which a game's tests leave for their next run to remove
// (removeOrphanedBuilds) and these remove now.
func TestMain(m *testing.M) {
	doneTemps := tmptest.Own()
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(doneTemps(code))
}

package foyertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/internal/tmptest"
)

// TestMain runs the harness's tests with a temporary directory of their
// own, and fails them on anything left there but this process's build of
// the binary, which a game's tests leave for their next run to remove
// (removeOrphanedBuilds) and these remove now.
func TestMain(m *testing.M) {
	leftTemps, err := tmptest.Own()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	if left := leftTemps(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: left behind:", strings.Join(left, ", "))
		code = 1
	}
	os.Exit(code)
}

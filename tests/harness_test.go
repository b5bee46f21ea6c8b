package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/tmptest"
)

// TestHarnessFromAGamesModule: the README's harness example, as a game's
// developer writes it in a module of their own that requires Foyer (here
// by a replace directive pointing at this checkout), passes with a plain
// `go test`, offline, with the module cache as `go mod download` leaves
// it: the harness builds the foyer binary itself. (A game's module that
// vendors its dependencies has no cmd/foyer in its vendor directory; the
// harness then builds it in the foyer module, see foyertest's
// TestBuildInTheFoyerModule.)
func TestHarnessFromAGamesModule(t *testing.T) {
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/mygame\n\ngo 1.26\n\nrequire github.com/foyerlobby/foyer v0.0.0\n\n" +
		"replace github.com/foyerlobby/foyer => " + checkout + "\n"
	example := docBlock(t, "../README.md", "harness example: foyertest/example_test.go")
	for name, text := range map[string][]byte{"go.mod": []byte(gomod), "example_test.go": example} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Offline: nothing is fetched, no checksum database is asked; the
	// missing requirements and sums are written as `go get` would.
	// The game's tests get a temporary directory of their own, where the
	// harness leaves its build for a later run to remove: it goes at the
	// end of this test.
	tmp, err := tmptest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cmd := exec.Command("go", "test", "-count=1", "-v", "./...")
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "FOYER_BINARY", "GOFLAGS", "GOWORK", "TMPDIR"),
		"GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOFLAGS=-mod=mod", "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		requiretest.ModuleCache(t, out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestExample") {
		t.Fatalf("go test in the game's module: %v\n%s", err, out)
	}
}

// withoutEnv returns env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			keep = keep && name != n
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

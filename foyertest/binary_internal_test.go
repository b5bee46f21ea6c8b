package foyertest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildInTheFoyerModule: where the module under test cannot build
// cmd/foyer (a game's module that vendors its dependencies has no cmd/foyer
// in its vendor directory), the harness finds the foyer module it requires
// and builds the binary there, by that module's own go.mod and go.sum,
// whatever GOFLAGS the test runs with.
func TestBuildInTheFoyerModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := foyerModuleDir(goTool)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("..")
	if dir != root {
		t.Fatalf("the foyer module is at %q, want this checkout %q", dir, root)
	}
	t.Setenv("GOFLAGS", "-mod=vendor") // the game's, which has no say there
	bin := filepath.Join(t.TempDir(), "foyer")
	if out, err := buildInModule(goTool, dir, bin); err != nil {
		t.Fatalf("build in %s: %v\n%s", dir, err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "foyer ") {
		t.Fatalf("the binary built: %q, %v", out, err)
	}
}

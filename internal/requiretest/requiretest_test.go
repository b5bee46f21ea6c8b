package requiretest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a test that records how it would have ended, and goes on.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// A missing requirement skips with the reason and how to run the test,
// and under `make test` fails instead.
func TestMissing(t *testing.T) {
	t.Setenv(Env, "")
	var r recorder
	missing(&r, "root")
	if r.skipped != "needs root; `make test` runs it" || r.failed != "" {
		t.Errorf("without %s: skipped %q, failed %q", Env, r.skipped, r.failed)
	}
	t.Setenv(Env, "1")
	r = recorder{}
	missing(&r, "root")
	if r.skipped != "" || !strings.HasPrefix(r.failed, "needs root; "+Env+" is set") {
		t.Errorf("with %s: skipped %q, failed %q", Env, r.skipped, r.failed)
	}
}

// Command takes the first executable it finds, on PATH or at the paths
// given; a file without an execute bit, such as /dev/null, is none.
func TestCommand(t *testing.T) {
	t.Setenv(Env, "")
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	if p := Command(&r, "no-such-foyer-command", "/dev/null", self); p != self || r.skipped != "" {
		t.Errorf("Command found %q, skipped %q; want %s", p, r.skipped, self)
	}
	t.Setenv("PATH", "") // wherever quakestat is installed
	r = recorder{}
	Command(&r, "quakestat", "/dev/null")
	if want := "needs quakestat (Debian package qstat): /dev/null is not an executable file; `make test` runs it"; r.skipped != want {
		t.Errorf("without quakestat: skipped %q, want %q", r.skipped, want)
	}
}

// ModuleCache skips when an offline go command missed a module in the
// cache, and only then.
func TestModuleCache(t *testing.T) {
	t.Setenv(Env, "")
	var r recorder
	ModuleCache(&r, []byte("go: finding module\n--- FAIL: TestExample\n"))
	if r.skipped != "" || r.failed != "" {
		t.Errorf("a failure of another kind: skipped %q, failed %q", r.skipped, r.failed)
	}
	ModuleCache(&r, []byte("go: github.com/fatih/color@v1.13.0 requires\n\tgithub.com/mattn/go-colorable@v0.1.9: module lookup disabled by GOPROXY=off\n"))
	want := "needs the module cache as `go mod download` fills it (github.com/mattn/go-colorable@v0.1.9: module lookup disabled by GOPROXY=off); `make test` runs it"
	if r.skipped != want {
		t.Errorf("a module missing from the cache: skipped %q, want %q", r.skipped, want)
	}
}

package foyertest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// WaitLog waits for a line written after it is called, the way a child's
// log arrives through its pipe, and only a whole message counts.
func TestWaitLogWaitsForTheWholeMessage(t *testing.T) {
	l := &Lobby{t: t, logs: &logBuffer{}}
	written := make(chan struct{})
	go func() {
		defer close(written)
		time.Sleep(50 * time.Millisecond)
		l.logs.Write([]byte(`{"level":"info","message":"room created later"}` + "\n"))
		time.Sleep(50 * time.Millisecond)
		l.logs.Write([]byte(`{"level":"info","id":7,"message":"room created"}` + "\n"))
	}()
	l.WaitLog("room created")
	if !strings.Contains(l.Log(), `"id":7`) {
		t.Fatalf("WaitLog returned before its line:\n%s", l.Log())
	}
	<-written
	if hasMessage(`{"message":"room created later"}`, "room created") || hasMessage(`{"message":"room"}`, "room created") {
		t.Error("hasMessage matched a different message")
	}
}

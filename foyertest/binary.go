package foyertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BinaryEnv names the environment variable that points the harness at a
// prebuilt foyer binary instead of building one.
const BinaryEnv = "FOYER_BINARY"

// mainPackage is what the harness builds when no binary is given.
const mainPackage = "github.com/foyerlobby/foyer/cmd/foyer"

// The binary built for this test process, once.
var built struct {
	once sync.Once
	path string
	err  error
}

// BuiltBinary returns the foyer binary the harness runs rooms from when no
// Binary option is given: $FOYER_BINARY, or a build of cmd/foyer made once
// per test process. Tests that run the binary themselves can use it too.
func BuiltBinary(t testing.TB) string {
	t.Helper()
	return binaryPath(t, "")
}

func binaryPath(t testing.TB, given string) string {
	t.Helper()
	if given == "" {
		given = os.Getenv(BinaryEnv)
	}
	if given != "" {
		if _, err := os.Stat(given); err != nil {
			t.Fatalf("foyertest: foyer binary: %v", err)
		}
		return given
	}
	built.once.Do(func() { built.path, built.err = build() })
	if built.err != nil {
		t.Fatalf("foyertest: %v", built.err)
	}
	return built.path
}

// buildDirPrefix starts the names of build directories; the process id
// follows, so a later build can tell which directories are orphaned.
const buildDirPrefix = "foyertest-"

// foyerModule is the module the harness, and the binary it builds, are
// part of.
const foyerModule = "github.com/foyerlobby/foyer"

// build builds cmd/foyer: first as the test itself was built, with the
// module graph of the module under test (a game's, or Foyer's own); where
// that cannot (a game's module that vendors its dependencies has no
// cmd/foyer in its vendor directory), as `go install` builds a command,
// in the foyer module the test was built with, by that module's own
// go.mod and go.sum.
func build() (string, error) {
	removeOrphanedBuilds()
	dir, err := os.MkdirTemp("", buildDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building %s needs the go command (or set %s): %w", mainPackage, BinaryEnv, err)
	}
	bin := filepath.Join(dir, "foyer")
	out, err := exec.Command(goTool, "build", "-o", bin, mainPackage).CombinedOutput()
	if err == nil {
		return bin, nil
	}
	modDir, derr := foyerModuleDir(goTool)
	if derr == nil {
		out2, err2 := buildInModule(goTool, modDir, bin)
		if err2 == nil {
			return bin, nil
		}
		out = fmt.Appendf(out, "then in %s: %v\n%s", modDir, err2, out2)
	} else {
		out = fmt.Appendf(out, "and the foyer module's own directory is not known: %v\n", derr)
	}
	os.RemoveAll(dir)
	return "", fmt.Errorf("go build %s: %v\n%s"+
		"Give the harness a foyer binary instead: set %s to one (go build -o foyer %s), or use the Binary option",
		mainPackage, err, out, BinaryEnv, mainPackage)
}

// buildInModule builds cmd/foyer into bin in modDir, the foyer module's
// directory, by that module's own go.mod and go.sum: the game's module
// and workspace have no say.
func buildInModule(goTool, modDir, bin string) ([]byte, error) {
	cmd := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, "./cmd/foyer")
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	return cmd.CombinedOutput()
}

// foyerModuleDir is the directory of the foyer module the module under
// test requires: the directory a replace directive names, the module
// cache's copy of its version, or that version fetched.
func foyerModuleDir(goTool string) (string, error) {
	var m struct {
		Path, Version, Dir string
		Replace            *struct{ Path, Version, Dir string }
	}
	out, err := exec.Command(goTool, "list", "-m", "-json", foyerModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", foyerModule, err)
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go list -m %s: %w", foyerModule, err)
	}
	if r := m.Replace; r != nil {
		if r.Dir != "" {
			return r.Dir, nil
		}
		m.Path, m.Version, m.Dir = r.Path, r.Version, ""
	}
	if m.Dir != "" {
		return m.Dir, nil
	}
	dl := exec.Command(goTool, "mod", "download", "-json", m.Path+"@"+m.Version)
	dl.Dir = os.TempDir() // outside any module
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, _ = dl.Output() // its error is in the JSON too
	var got struct{ Dir, Error string }
	if err := json.Unmarshal(out, &got); err != nil || got.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s%v", m.Path, m.Version, got.Error, err)
	}
	return got.Dir, nil
}

// removeOrphanedBuilds removes the build directories of test processes
// that no longer run: nothing else ever would.
func removeOrphanedBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), buildDirPrefix+"*-*"))
	for _, d := range dirs {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), buildDirPrefix), "-")
		n, err := strconv.Atoi(pid)
		if ok && err == nil && !processExists(n) {
			os.RemoveAll(d)
		}
	}
}

// child is one `foyer serve` child process.
type child struct {
	cmd    *exec.Cmd
	config string
	exited chan struct{}
	err    error // Wait's; set before exited closes
}

// StartBinary runs `foyer serve` as a child process, from a config file
// generated from opts, and returns once the lobby listens. At the end of
// the test it sends SIGTERM and fails the test unless foyer exits 0
// within 30 s with no room process left. The server is also killed if the
// test process dies.
func StartBinary(t testing.TB, opts ...Option) *Lobby {
	t.Helper()
	s := newSettings(t, opts)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(s.configText()), 0o600); err != nil {
		t.Fatalf("foyertest: %v", err)
	}
	argv := append(append([]string(nil), s.wrap...), s.instance, "serve", "--config", path)
	logs := &logBuffer{}
	c := &child{cmd: exec.Command(argv[0], argv[1:]...), config: path, exited: make(chan struct{})}
	c.cmd.Stderr = logs
	c.cmd.Stdout = logs
	if err := startTied(c.cmd); err != nil {
		t.Fatalf("foyertest: starting foyer serve: %v", err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	l := &Lobby{t: t, first: s.first, last: s.last, logs: logs, instance: s.instance, child: c, admin: s.admin}
	t.Cleanup(func() {
		l.stopServer()
		l.checkGone()
		l.dumpLogsIfFailed()
	})
	addr, err := l.waitListening("lobby listening")
	if err != nil {
		t.Fatalf("foyertest: %v\n%s", err, logs)
	}
	l.addr = addr
	return l
}

// waitListening reads a listener's address from the log line (message
// msg) foyer serve writes once it is bound.
func (l *Lobby) waitListening(msg string) (netip.AddrPort, error) {
	var ap netip.AddrPort
	err := l.waitLog(msg, func(log string) bool {
		var ok bool
		ap, ok = listeningAddr(log, msg)
		return ok
	})
	return ap, err
}

// waitLog waits up to 30 s for found to report the log complete, checking
// again whenever a child's log may have grown. what names the wait in
// its error.
func (l *Lobby) waitLog(what string, found func(log string) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var exited <-chan struct{}
	if l.child != nil {
		exited = l.child.exited
	}
	for {
		if found(l.logs.String()) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("foyer serve exited before %q: %v", what, l.child.err)
		case <-ctx.Done():
			return fmt.Errorf("no %q in the log within 30s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// listeningAddr finds the first address of the log line msg, whose
// "listen" is one address or a list.
func listeningAddr(log, msg string) (netip.AddrPort, bool) {
	for b := range messageLines(log, msg) {
		var line struct {
			Listen json.RawMessage `json:"listen"`
		}
		json.Unmarshal(b, &line) // it parsed once already
		var one string
		var many []string
		switch {
		case json.Unmarshal(line.Listen, &many) == nil && len(many) > 0:
			one = many[0]
		case json.Unmarshal(line.Listen, &one) == nil:
		default:
			continue
		}
		ap, err := netip.ParseAddrPort(one)
		return ap, err == nil
	}
	return netip.AddrPort{}, false
}

// AdminAddr returns the address of the admin listener, turned on with the
// Admin option, once it listens.
func (l *Lobby) AdminAddr() netip.AddrPort {
	l.t.Helper()
	if l.admin == "" {
		l.t.Fatalf("foyertest: AdminAddr of a lobby without an admin listener (see Admin)")
	}
	if l.child == nil {
		return l.inProcessAdmin()
	}
	ap, err := l.waitListening("admin listening")
	if err != nil {
		l.t.Fatalf("foyertest: %v\n%s", err, l.logs)
	}
	return ap
}

// stopServer sends SIGTERM and waits for a clean exit.
func (l *Lobby) stopServer() {
	c := l.child
	select {
	case <-c.exited:
		l.t.Errorf("foyertest: foyer serve exited before the end of the test: %v", c.err)
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		if c.err != nil {
			l.t.Errorf("foyertest: foyer serve did not exit cleanly on SIGTERM: %v", c.err)
		}
	case <-time.After(stopLimit):
		c.cmd.Process.Kill()
		<-c.exited
		l.t.Errorf("foyertest: foyer serve ignored SIGTERM for %v (killed)", stopLimit)
	}
}

// ConfigFile returns the path of the config file a StartBinary lobby runs
// from; empty for Start.
func (l *Lobby) ConfigFile() string {
	if l.child == nil {
		return ""
	}
	return l.child.config
}

// PID returns the process id of a StartBinary lobby's `foyer serve`; 0
// for Start.
func (l *Lobby) PID() int {
	if l.child == nil {
		return 0
	}
	return l.child.cmd.Process.Pid
}

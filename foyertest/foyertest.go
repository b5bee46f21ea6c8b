// Package foyertest starts a real Foyer lobby inside a Go test: a lobby on
// a free loopback port in front of a real supervisor, whose rooms are real
// reference-room processes on real UDP ports.
//
//	func TestMyGame(t *testing.T) {
//		l := foyertest.Start(t, foyertest.MaxPlayers(2))
//		seat, err := l.Client().Create(context.Background())
//		...
//	}
//
// Start runs what `foyer serve` runs (package server) in the test's own
// process; StartBinary runs `foyer serve` as a child process instead, for
// tests of the binary itself. Both run from the same config, made from the
// options, and differ only in where the lobby runs. At the
// end of the test (t.Cleanup) both stop the lobby and every room, and fail
// the test if a room process outlives them.
//
// # Where room processes come from
//
// A room is a process of the foyer binary (its hidden `instance`
// subcommand); a test binary is not one. The binary is, in order of
// preference: the one given with the Binary option, the one named by the
// FOYER_BINARY environment variable, or one built once per test process
// with `go build github.com/foyerlobby/foyer/cmd/foyer` (the go command
// must be on PATH; the build cache makes every build after the first a
// link). Built binaries live in a temporary directory per test process;
// directories of processes that no longer run are removed by the next
// build.
//
// Rooms are Linux processes: Start, which runs them in the test's own
// process, is for Linux; so is a `foyer serve` for StartBinary to run. The
// package builds wherever Go runs, for the Client a test needs on the
// other side.
package foyertest

import (
	"encoding/json"
	"iter"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
)

// stopLimit bounds how long stopping a lobby and its rooms may take at the
// end of a test before the harness reports it and kills what is left.
const stopLimit = 30 * time.Second

// Lobby is a lobby started by Start or StartBinary. It stops at the end of
// the test that started it.
type Lobby struct {
	t     testing.TB
	addr  netip.AddrPort
	first uint16
	last  uint16
	logs  *logBuffer
	// instance is the harness's own path to the binary rooms run from.
	instance string

	inProcess // Start only

	// StartBinary only.
	child *child
	admin string // the admin listener's configured address; empty: off
}

// checkGone fails the test if a process of the harness's room command
// still runs.
func (l *Lobby) checkGone() {
	// A room killed at the end of the stop may need a moment to die.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesOf(l.instance)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			killAll(left)
			l.t.Errorf("foyertest: room processes %v outlived the lobby (killed now)", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *Lobby) dumpLogsIfFailed() {
	if l.t.Failed() {
		l.t.Logf("foyertest: lobby log:\n%s", l.logs)
	}
}

// Addr returns the lobby's UDP address.
func (l *Lobby) Addr() netip.AddrPort { return l.addr }

// Ports returns the range of UDP ports the lobby's rooms are given.
func (l *Lobby) Ports() (first, last uint16) { return l.first, l.last }

// Client returns a client of the lobby, closed at the end of the test.
// opts are added to the client's defaults.
func (l *Lobby) Client(opts ...client.Option) *client.Client {
	l.t.Helper()
	c, err := client.Dial(l.addr.String(), opts...)
	if err != nil {
		l.t.Fatalf("foyertest: %v", err)
	}
	l.t.Cleanup(func() { c.Close() })
	return c
}

// Log returns what the lobby has logged so far, as JSON lines at debug
// level. It is also written to the test log when the test fails. A
// StartBinary lobby's log comes through a pipe, so a line may arrive
// after the answer that followed it: see WaitLog.
func (l *Lobby) Log() string { return l.logs.String() }

// WaitLog waits up to 30 s for a log line whose message is msg, and fails
// the test if none comes.
func (l *Lobby) WaitLog(msg string) {
	l.t.Helper()
	if err := l.waitLog(msg, func(log string) bool { return hasMessage(log, msg) }); err != nil {
		l.t.Fatalf("foyertest: %v", err)
	}
}

// hasMessage reports whether a JSON line of log has the message msg.
func hasMessage(log, msg string) bool {
	for range messageLines(log, msg) {
		return true
	}
	return false
}

// messageLines yields the JSON lines of log whose message is msg.
func messageLines(log, msg string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for line := range strings.Lines(log) {
			var l struct {
				Message string `json:"message"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Message == msg && !yield([]byte(line)) {
				return
			}
		}
	}
}

// logBuffer collects log lines written from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// instanceLink gives a harness its own path to the foyer binary, so that
// its room processes can be told from those of other lobbies running in
// the same test process by their argv[0].
func instanceLink(t testing.TB, bin string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "foyer")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatalf("foyertest: %v", err)
	}
	return link
}

package tests

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
)

// stalledLogLimits let one client's flood of JOINs through, each refused
// and so logged at debug level, to the one read loop that answers the
// test's other requests too.
const stalledLogLimits = `readers = 1
rate = 100000000
burst = 1000000
admit_rate = 100000000
admit_burst = 1000000
reflection_limit = "1GiB"
`

// stallLog stops the test from reading s's stderr, as a paused terminal
// stops, until resume is called or the test ends (before s stops).
func stallLog(t *testing.T, s *server) (resume func()) {
	s.logs.stall.Lock()
	var once sync.Once
	resume = func() { once.Do(s.logs.stall.Unlock) }
	t.Cleanup(resume)
	return resume
}

// floodRefusals sends n JOINs of a room that does not exist from one
// client: at debug level each refused one writes a line.
func floodRefusals(t *testing.T, s *server, n int) {
	t.Helper()
	c := newClient(t, "127.0.0.1", s.lobby)
	for i := range n {
		c.send(encode(compact, joinRoom, uint16(i), 0, joinPayload(999999)))
		if i%256 == 255 {
			time.Sleep(time.Millisecond) // the lobby's socket keeps up
		}
	}
}

// A stderr that takes nothing (a terminal paused with Ctrl-S, a log
// collector that hangs) never stops the server. Its log at debug level,
// where every refused JOIN writes a line, a flood of them fills the pipe
// and the log's queue: the lobby still answers LIST and JOIN, and CREATE
// still starts a room. The lines the log could not queue are counted in
// /metrics, and once stderr takes lines again a line says how many: every
// refused JOIN is a line written or one said dropped.
func TestStalledLogNeverStopsTheServer(t *testing.T) {
	s := startServer(t, stalledLogLimits, "")
	base := s.adminBase(t)
	resume := stallLog(t, s)
	floodRefusals(t, s, 20000)

	c := newClient(t, "127.0.0.1", s.lobby)
	c.list(1)
	id, _ := c.request(compact, createRoom, 2, nil).roomPort(t)
	if got := c.request(compact, joinRoom, 3, joinPayload(id)).typ; got != joinSuccess {
		t.Fatalf("JOIN of room %d answered %#x while the log is stalled", id, got)
	}
	m := adminMetrics(t, base)
	if m["foyer_log_lines_dropped_total"] == 0 {
		t.Fatalf("no log line dropped with stderr stalled after a flood of refusals: %v", m["foyer_lobby_refusals_total{reason=\"no_room\"}"])
	}

	resume()
	var written, said int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		said = 0
		for _, l := range s.logs.lines("log lines dropped") {
			n, _ := l["lines"].(float64)
			said += int(n)
		}
		dropped := adminMetrics(t, base)["foyer_log_lines_dropped_total"]
		if said > 0 && float64(said) == dropped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log says %d lines dropped, /metrics %v", said, dropped)
		}
	}
	for _, l := range s.logs.lines("refused") {
		if l["reason"] == "no_room" {
			written++
		}
	}
	refused := int(m["foyer_lobby_refusals_total{reason=\"no_room\"}"])
	t.Logf("%d JOINs refused while stalled: %d logged, %d lines said dropped in %d lines", refused, written, said, len(s.logs.lines("log lines dropped")))
	if refused == 0 || written+said < refused {
		t.Fatalf("%d JOINs refused, %d of them logged and %d lines said dropped", refused, written, said)
	}
}

// SIGTERM stops a server whose stderr takes nothing: it stops its rooms
// and exits 0, giving up on the lines stderr does not take.
func TestStalledLogStillExits(t *testing.T) {
	s := startServer(t, stalledLogLimits, "")
	c := newClient(t, "127.0.0.1", s.lobby)
	c.request(compact, createRoom, 1, nil).roomPort(t)
	resume := stallLog(t, s)
	floodRefusals(t, s, 20000)
	c.list(2) // the flood was read: the log is full

	pid := s.cmd.Process.Pid
	s.cmd.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); proc.Alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("foyer serve did not exit on SIGTERM with its stderr stalled")
		}
	}
	resume()
	if err := <-s.exit; err != nil {
		t.Errorf("foyer serve exited with %v, its stderr stalled", err)
	}
	s.killed = true // stopped; the cleanup checks its rooms are gone
}

// A log reader that exits (the other end of a pipe, a collector that
// crashed) takes nothing with it: the lines written after it are lost,
// and the server answers, starts rooms, and exits 0 on SIGTERM. By Go's
// default, the first line written to stderr after it would kill the
// server (SIGPIPE), and its rooms with it.
func TestLogReaderGoneNeverStopsTheServer(t *testing.T) {
	s := startServerLogging(t, "info", "", "")
	c := newClient(t, "127.0.0.1", s.lobby)
	s.logs.gone.Store(true)
	c.request(compact, createRoom, 1, nil).roomPort(t) // logged: the reader goes
	for deadline := time.Now().Add(10 * time.Second); !s.logs.cut.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing was logged of a room created")
		}
	}
	c.request(compact, createRoom, 2, nil).roomPort(t) // logged to a pipe nobody reads
	time.Sleep(quiet)                                  // for the log's queue to write it
	if rooms := c.list(3); len(rooms) != 2 {
		t.Fatalf("%d rooms listed after two were created: %v", len(rooms), rooms)
	}

	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exit: // the copy's error, as the reader went: the status tells
	case <-time.After(30 * time.Second):
		t.Fatal("foyer serve did not exit on SIGTERM with its log reader gone")
	}
	s.killed = true
	if st := s.cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		t.Fatalf("foyer serve ended with %v once its log reader was gone", st)
	}
}

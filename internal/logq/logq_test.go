package logq_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/logq"
	"github.com/foyerlobby/foyer/internal/logtest"
)

// gate is a log sink that takes nothing while shut: its Write waits until
// it opens, as a full pipe or a paused terminal does.
type gate struct {
	logtest.Buffer
	open    chan struct{}
	once    sync.Once
	waiting chan struct{} // a Write waits
}

func newGate() *gate { return &gate{open: make(chan struct{}), waiting: make(chan struct{}, 1)} }

func (g *gate) Write(p []byte) (int, error) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	<-g.open
	return g.Buffer.Write(p)
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// reporting returns a Writer for out whose drops are said in a line of
// their own, written to out, as foyer serve says them.
func reporting(out *gate, lines, bytes int) *logq.Writer {
	return logq.New(out, lines, bytes, func(n uint64) { fmt.Fprintf(out, "dropped %d\n", n) })
}

// said sums what the log's drop lines say, and counts its other lines.
func said(t *testing.T, log string) (lines int, dropped uint64) {
	t.Helper()
	for l := range strings.Lines(log) {
		var n uint64
		if _, err := fmt.Sscanf(l, "dropped %d\n", &n); err == nil {
			dropped += n
			continue
		}
		lines++
	}
	return lines, dropped
}

// Lines come out whole and in order, none dropped, and Close waits for
// the last of them.
func TestLinesInOrder(t *testing.T) {
	g := newGate()
	g.release()
	w := reporting(g, 16, 1<<20)
	var want bytes.Buffer
	for i := range 1000 { // many times the queue: the writer keeps up
		line := fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i%50))
		want.WriteString(line)
		w.Write([]byte(line))
		if i%16 == 15 {
			waitQueued(t, w, g, want.Len())
		}
	}
	if !w.Close(10 * time.Second) {
		t.Fatal("Close gave up on a writer that moves")
	}
	if got := g.String(); got != want.String() {
		t.Fatalf("the log is\n%.500s\nwant\n%.500s", got, want.String())
	}
	if w.Dropped() != 0 {
		t.Fatalf("%d lines dropped", w.Dropped())
	}
}

// waitQueued waits until g holds n bytes: the lines queued so far are out.
func waitQueued(t *testing.T, w *logq.Writer, g *gate, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(g.String()) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes written of %d (%d lines dropped)", len(g.String()), n, w.Dropped())
		}
	}
}

// With the writer stalled, writers from many goroutines never wait: what
// the queue holds is kept, the rest dropped and counted. Once the writer
// moves, the kept lines come out and a line says how many were dropped:
// every line is written or said dropped.
func TestStalledWriterNeverWaits(t *testing.T) {
	const queue, writers, each = 8, 4, 250
	g := newGate()
	t.Cleanup(g.release)
	w := reporting(g, queue, 1<<20)
	w.Write([]byte("first\n")) // taken by the writing goroutine, which then waits
	<-g.waiting
	var wg sync.WaitGroup
	for k := range writers {
		wg.Go(func() {
			for i := range each {
				fmt.Fprintf(w, "writer %d line %d\n", k, i)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a Write waited for the stalled writer")
	}
	total := 1 + writers*each
	if got, want := w.Dropped(), uint64(total-1-queue); got != want {
		t.Fatalf("%d lines dropped, want %d: all but the one taken and the %d queued", got, want, queue)
	}
	g.release()
	if !w.Close(10 * time.Second) {
		t.Fatal("Close gave up on a writer that moves again")
	}
	lines, dropped := said(t, g.String())
	if lines != 1+queue || int(dropped)+lines != total {
		t.Fatalf("%d lines written and %d said dropped, want %d written and %d in all:\n%s", lines, dropped, 1+queue, total, g.String())
	}
}

// A queue holds at most its bytes, whatever its lines, the line being
// written included.
func TestByteBound(t *testing.T) {
	g := newGate()
	t.Cleanup(g.release)
	w := reporting(g, 1000, len("first\n")+1000)
	w.Write([]byte("first\n"))
	<-g.waiting
	line := []byte(strings.Repeat("y", 99) + "\n") // 100 bytes
	for range 50 {
		w.Write(line)
	}
	if got, want := w.Dropped(), uint64(50-10); got != want {
		t.Fatalf("%d lines of 100 bytes dropped with 1000 bytes queued, want %d", got, want)
	}
	g.release()
	w.Close(10 * time.Second)
	if lines, dropped := said(t, g.String()); lines != 11 || dropped != 40 {
		t.Fatalf("%d lines written and %d said dropped, want 11 and 40", lines, dropped)
	}
}

// Close does not wait past its limit for a writer that does not move; the
// Writer then drops what it is given, counting it, and the writer that
// moves again finds the queue it had.
func TestCloseGivesUpOnAStalledWriter(t *testing.T) {
	g := newGate()
	t.Cleanup(g.release)
	w := reporting(g, 8, 1<<20)
	w.Write([]byte("first\n"))
	<-g.waiting
	w.Write([]byte("second\n"))
	if w.Close(50 * time.Millisecond) {
		t.Fatal("Close says the queue went out with the writer stalled")
	}
	g.release()
	if !w.Close(10 * time.Second) { // a second Close waits again, and is told
		t.Fatal("Close gave up on a writer that moves again")
	}
	w.Write([]byte("after Close\n"))
	if w.Dropped() != 1 {
		t.Fatalf("%d lines dropped, want 1: the one after Close", w.Dropped())
	}
	if got := g.String(); got != "first\nsecond\n" {
		t.Fatalf("the log is %q", got)
	}
}

// Lines dropped with none after them are said when the Writer closes.
func TestCloseSaysTheLastDrops(t *testing.T) {
	g := newGate()
	g.release()
	w := reporting(g, 8, 64)
	w.Write([]byte("kept\n"))
	waitQueued(t, w, g, len("kept\n"))
	w.Write(bytes.Repeat([]byte("z"), 100)) // more than the queue's bytes
	if w.Dropped() != 1 {
		t.Fatalf("%d lines dropped, want the one longer than the queue", w.Dropped())
	}
	w.Close(10 * time.Second)
	if got := g.String(); got != "kept\ndropped 1\n" {
		t.Fatalf("the log is %q", got)
	}
}

// slow is a log sink that takes a while over each write, as a slow
// terminal does.
type slow struct{ logtest.Buffer }

func (s *slow) Write(p []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	return s.Buffer.Write(p)
}

// A writer slower than the lines drops some between each two of its
// writes: the drops are said at most once a second, and once more as the
// Writer closes, every one of them.
func TestDropsSaidAtMostOnceASecond(t *testing.T) {
	out := &slow{}
	w := logq.New(out, 4, 1<<20, func(n uint64) { fmt.Fprintf(out, "dropped %d\n", n) })
	start := time.Now()
	for i := range 3000 { // 300 ms or more, several times what the writer takes
		fmt.Fprintf(w, "line %d\n", i)
		if i%10 == 9 {
			time.Sleep(time.Millisecond)
		}
	}
	took := time.Since(start)
	if !w.Close(10 * time.Second) {
		t.Fatal("Close gave up on a writer that moves")
	}
	lines, dropped := said(t, out.String())
	if dropped != w.Dropped() || lines+int(dropped) != 3000 || dropped == 0 {
		t.Fatalf("%d lines written and %d said dropped of 3000 (%d counted)", lines, dropped, w.Dropped())
	}
	reports := strings.Count(out.String(), "dropped ")
	if most := 2 + int(took/time.Second); reports > most {
		t.Fatalf("%d lines say what was dropped in %v, want at most %d: one a second, and the last", reports, took, most)
	}
}

// Drops held back by that second are said once it has passed, with no
// line after them to carry them.
func TestHeldDropsSaidOnceTheSecondPasses(t *testing.T) {
	g := newGate()
	g.release()
	w := reporting(g, 8, 64)
	long := bytes.Repeat([]byte("z"), 100) // more than the queue's bytes: dropped
	for i := range 2 {
		w.Write(long)
		w.Write([]byte("kept\n"))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, dropped := said(t, g.String()); dropped == uint64(i+1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("drop %d never said: the log is %q", i+1, g.String())
			}
		}
	}
	if got := g.String(); got != "kept\ndropped 1\nkept\ndropped 1\n" {
		t.Fatalf("the log is %q", got)
	}
	w.Close(10 * time.Second)
}

// BenchmarkWrite is a line's cost to one goroutine that logs as fast as
// it can, to a pipe whose reader keeps up: written straight to the pipe
// (direct), and through a Writer (queued), which drops what its writing
// goroutine cannot keep up with (dropped/line).
func BenchmarkWrite(b *testing.B) {
	line := []byte(`{"level":"debug","op":"join","room":999999,"from":"127.0.0.1:40000","reason":"no_room","time":"2026-12-03T10:00:00Z","message":"refused"}` + "\n")
	pipe := func(b *testing.B) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		go io.Copy(io.Discard, r)
		b.Cleanup(func() { w.Close(); r.Close() })
		return w
	}
	b.Run("direct", func(b *testing.B) {
		w := pipe(b)
		b.SetBytes(int64(len(line)))
		b.ReportAllocs()
		for b.Loop() {
			w.Write(line)
		}
	})
	b.Run("queued", func(b *testing.B) {
		w := logq.New(pipe(b), logq.MaxLines, logq.MaxBytes, nil)
		b.SetBytes(int64(len(line)))
		b.ReportAllocs()
		for b.Loop() {
			w.Write(line)
		}
		w.Close(10 * time.Second)
		b.ReportMetric(float64(w.Dropped())/float64(b.N), "dropped/line")
	})
}

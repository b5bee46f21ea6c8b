// Package logq is a log's writer that never makes its callers wait: a
// line is queued for one goroutine that writes the queue out in order,
// and a line that finds the queue full is dropped and counted, not
// waited for.
//
// A server logs from many goroutines, some of them holding what others
// need. Written straight to a pipe or a terminal that stops reading (a
// terminal paused with Ctrl-S, a log collector that hangs), every one of
// them would stop at its next line: a read loop at the first request it
// logs, the supervisor at the next room it starts. Queued, they go on,
// and once the writer moves again the log says how many lines it lost.
package logq

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// The queue's bounds: MaxLines lines, MaxBytes bytes of them in all,
// whichever comes first. A log line is a few hundred bytes; a stall of
// the writer keeps the lines of the first moments of it, when what went
// wrong is said.
const (
	MaxLines = 4096
	MaxBytes = 4 << 20
)

// Writer queues what it is given for its writer. Each Write is one line
// (zerolog writes each event so), never split: lines queued together go
// out in one write.
type Writer struct {
	out      io.Writer
	lines    chan *[]byte
	maxBytes int64
	queued   atomic.Int64 // bytes in lines
	dropped  atomic.Uint64
	closing  atomic.Bool // Write drops everything
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// report is told how many lines were dropped since it was last
	// told, on the writing goroutine, after a line went out, at most once
	// per reportEvery; told is how many it has been told of, toldAt
	// when, and later fires when drops wait to be told (armed). Only
	// the writing goroutine uses them.
	report func(lines uint64)
	told   uint64
	toldAt time.Time
	later  *time.Timer
	armed  bool
	batch  []byte // the lines of one write, reused
}

// reportEvery is how often report is told at most: a writer slower than
// the lines, which drops some between each two of its writes, must not
// have each write followed by a line that says so.
const reportEvery = time.Second

// New queues at most maxLines lines and maxBytes bytes for out, and starts
// the goroutine that writes them. Once a line went out after lines were
// dropped, report, if not nil, is told how many, on that goroutine, at
// most once a second (and once more as the Writer closes): it may say so
// in a line of its own written to out, which may wait there, and not to
// the Writer, whose queue may be full again.
func New(out io.Writer, maxLines, maxBytes int, report func(lines uint64)) *Writer {
	w := &Writer{out: out, lines: make(chan *[]byte, maxLines), maxBytes: int64(maxBytes),
		stop: make(chan struct{}), done: make(chan struct{}), report: report, later: time.NewTimer(reportEvery)}
	w.later.Stop()
	go w.run()
	return w
}

// bufs are the lines' buffers, back from the writing goroutine once
// written.
var bufs = sync.Pool{New: func() any { return new([]byte) }}

// Write queues a copy of p, or drops it if the queue is full or closed.
// It never waits, and never fails: a line dropped counts in Dropped.
func (w *Writer) Write(p []byte) (int, error) {
	n := int64(len(p))
	if w.closing.Load() {
		w.dropped.Add(1)
		return len(p), nil
	}
	if w.queued.Add(n) > w.maxBytes {
		w.queued.Add(-n)
		w.dropped.Add(1)
		return len(p), nil
	}
	b := bufs.Get().(*[]byte)
	*b = append((*b)[:0], p...)
	select {
	case w.lines <- b:
	default:
		w.queued.Add(-n)
		w.dropped.Add(1)
		bufs.Put(b)
	}
	return len(p), nil
}

// Dropped is how many lines were dropped so far.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close writes out what is queued, telling report of what was dropped,
// and ends the writing goroutine, waiting at most limit for it: a writer
// that does not move by then keeps what is still queued. Lines written
// afterwards are dropped. It reports whether the queue was written out.
func (w *Writer) Close(limit time.Duration) bool {
	w.stopOnce.Do(func() { close(w.stop) })
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}

func (w *Writer) run() {
	defer close(w.done)
	defer w.later.Stop()
	var next *[]byte
	for {
		if next == nil {
			select {
			case next = <-w.lines:
			case <-w.later.C:
				w.armed = false
				w.tell()
				continue
			case <-w.stop:
				w.drain()
				w.toldAt = time.Time{} // the last word, whenever the one before
				w.tell()
				w.closing.Store(true)
				w.drain() // what came in as Write learned of it
				return
			}
		}
		next = w.write(next)
	}
}

// drain writes out what is queued, until the queue is found empty.
func (w *Writer) drain() {
	for {
		select {
		case next := <-w.lines:
			for next != nil {
				next = w.write(next)
			}
		default:
			return
		}
	}
}

// atomicWrite is the most one write carries: lines queued together go out
// together, whole lines up to this many bytes, which a pipe takes whole
// (PIPE_BUF), never interleaved with another process's writes to it, such
// as those of the process an upgrade hands over to.
const atomicWrite = 4096

// write writes first and the lines queued after it that fit in one write
// (atomicWrite), gives their buffers back, then tells report of the lines
// dropped meanwhile: the writer is known to move. It returns the line it
// took that did not fit, for the next write, or nil.
func (w *Writer) write(first *[]byte) (next *[]byte) {
	batch := append(w.batch[:0], *first...)
	release(first)
gather:
	for len(batch) < atomicWrite {
		select {
		case b := <-w.lines:
			if len(batch)+len(*b) > atomicWrite {
				next = b
				break gather
			}
			batch = append(batch, *b...)
			release(b)
		default:
			break gather
		}
	}
	_, _ = w.out.Write(batch) // a log has nowhere to say that it failed
	w.queued.Add(-int64(len(batch)))
	if cap(batch) <= maxKept {
		w.batch = batch
	} else {
		w.batch = nil
	}
	w.tell()
	return next
}

// maxKept is the largest buffer kept for another line: one long line
// must not keep its memory for every line after it.
const maxKept = 64 << 10

// release gives a line's buffer back for another line.
func release(b *[]byte) {
	if cap(*b) <= maxKept {
		bufs.Put(b)
	}
}

// tell tells report how many lines were dropped since it was last told,
// or, if that was less than reportEvery ago, arms later for when it will
// be time.
func (w *Writer) tell() {
	d := w.dropped.Load()
	if d == w.told || w.report == nil {
		return
	}
	if wait := reportEvery - time.Since(w.toldAt); wait > 0 {
		if !w.armed {
			w.later.Reset(wait)
			w.armed = true
		}
		return
	}
	w.toldAt = time.Now()
	n := d - w.told
	w.told = d
	w.report(n)
}

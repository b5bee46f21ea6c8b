package keeper

import (
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/foyerlobby/foyer/internal/proc"
)

// Bounds on what a server can make its keeper read and keep.
const (
	// maxOutputLine is the longest output line kept whole; the rest of a
	// longer line is dropped.
	maxOutputLine = 1024
	// keptLines is how many of its last lines a server that failed is
	// reported with.
	keptLines = 5
)

// output keeps the last lines a server printed, for the error that says
// why it failed.
type output struct {
	mu   sync.Mutex
	tail []string      // the last keptLines lines, oldest first
	done chan struct{} // closed once the output has ended
}

func newOutput() *output { return &output{done: make(chan struct{})} }

// forward reads the server's stdout and stderr until the pipe ends,
// writing each line to w as the server printed it (cut at maxOutputLine)
// and keeping the last ones.
func (s *server) forward(r *os.File, w io.Writer) {
	defer close(s.out.done)
	defer r.Close()
	var buf []byte
	proc.Lines(r, maxOutputLine, func(line []byte) {
		s.out.add(string(line))
		buf = append(append(buf[:0], line...), '\n')
		w.Write(buf) // a log that cannot be written loses the line, nothing else
	})
}

func (o *output) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.tail) == keptLines {
		o.tail = append(o.tail[:0], o.tail[1:]...)
	}
	o.tail = append(o.tail, line)
}

// last renders the kept lines for an error message: "; its last lines:
// "a" | "b"", or "; it printed nothing".
func (o *output) last() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.tail) == 0 {
		return "; it printed nothing"
	}
	q := make([]string, len(o.tail))
	for i, l := range o.tail {
		q[i] = strconv.Quote(l)
	}
	return "; its last lines: " + strings.Join(q, " | ")
}

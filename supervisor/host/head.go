package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// headLines and headLine bound what a launch keeps of the first lines a
// process printed, to say why it failed.
const (
	headLines = 4
	headLine  = 200
)

// ErrNotAnInstance matches a launch whose process printed something else
// than the plugin handshake: a program that is not a Foyer instance, most
// likely a game server run without a probe.
var ErrNotAnInstance = errors.New("this looks like a game server that is not a Foyer instance: " +
	`set probe = "teeworlds" or "none"`)

// handshake is go-plugin's handshake line: core and app protocol
// versions, network, address, protocol, and more.
var handshake = regexp.MustCompile(`^\d+\|\d+\|[a-z]+\|`)

// head keeps the first lines a process printed on stdout and stderr.
type head struct {
	mu      sync.Mutex
	out     []string // stdout's first lines
	err     []string // stderr's first lines
	partial []byte   // stdout's line being read
}

func newHead() *head { return &head{} }

// reader returns r, keeping the first lines read through it.
func (h *head) reader(r io.Reader) io.Reader { return &headReader{h, r} }

type headReader struct {
	h *head
	r io.Reader
}

func (hr *headReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.stdout(p[:n])
	return n, err
}

// stdout takes bytes read from stdout.
func (h *head) stdout(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(b) > 0 && len(h.out) < headLines {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			h.partial = append(h.partial, b[:min(len(b), headLine-len(h.partial))]...)
			return
		}
		line := append(h.partial, b[:min(i, headLine-len(h.partial))]...)
		h.out = append(h.out, strings.TrimRight(string(line), "\r"))
		h.partial, b = nil, b[i+1:]
	}
}

// add takes a line of stderr.
func (h *head) add(line []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.err) < headLines {
		h.err = append(h.err, string(line[:min(len(line), headLine)]))
	}
}

// explain rewrites the error of a failed launch when the first lines the
// process printed say more: a first line that is no handshake makes it
// ErrNotAnInstance, and the lines printed come with it.
func (r *procRunner) explain(err error) error {
	h := r.head
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.out
	if len(out) == 0 && len(h.partial) > 0 {
		out = []string{string(h.partial)}
	}
	printed := append(append([]string(nil), out...), h.err...)
	if len(printed) == 0 {
		return err
	}
	q := make([]string, len(printed))
	for i, l := range printed {
		q[i] = strconv.Quote(l)
	}
	lines := "it printed " + strings.Join(q, " | ")
	if len(out) > 0 && !handshake.MatchString(out[0]) {
		return fmt.Errorf("%w (%s)", ErrNotAnInstance, lines)
	}
	return fmt.Errorf("%w (%s)", err, lines)
}

// readCloser reads through r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }

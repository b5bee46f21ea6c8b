// Package tally is how every edge of the lobby (the native one, GG2, GunZ
// and the announcer) counts what it does: cumulative counters by name
// (requests and replies by type, drops by reason) that the edges' Stats
// and the admin page read, and one report that logs their growth as one
// line per interval, never one line per packet. It also holds the one
// policy for errors of a UDP read loop, which are counted like drops.
//
// Counting is on every datagram's path, so it costs an atomic add: a
// Counter held by the caller for a hot name, or for a name only known at
// run time (a codec's drop reason) one lookup in a map that is never
// written, only replaced when a new name first appears. Names must come
// from a fixed set of the program's own (never from a packet), which
// bounds the map and the metric series made from it.
package tally

import (
	"context"
	"errors"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Counter is one cumulative count. The zero value is zero and ready;
// a Counter is safe for concurrent use and must not be copied.
type Counter struct {
	n atomic.Uint64
}

// Add counts n events.
func (c *Counter) Add(n uint64) { c.n.Add(n) }

// Load returns the count.
func (c *Counter) Load() uint64 { return c.n.Load() }

// entry is a Set's counter of one name.
type entry struct {
	Counter
	shown bool // in snapshots even at zero
}

// Set is cumulative counters by name. The zero value is an empty set
// ready to use; a Set is safe for concurrent use and must not be copied.
type Set struct {
	// names is replaced, never written, so that counting reads it
	// without a lock; mu orders the replacements.
	names atomic.Pointer[map[string]*entry]
	mu    sync.Mutex
}

// Counter returns the counter of name, made at zero if it is new. A name
// shows in snapshots from its first count on (or from the start, if Show
// made it). Callers keep the counters of hot names, to count without
// the lookup.
func (s *Set) Counter(name string) *Counter {
	if e := s.lookup(name); e != nil {
		return &e.Counter
	}
	return &s.add(name, false).Counter
}

// Show returns the counters of names, in order, and has them show in
// snapshots from now on even while zero: for a fixed set of names, such
// as request types, that a dashboard expects to see.
func (s *Set) Show(names ...string) []*Counter {
	out := make([]*Counter, len(names))
	for i, n := range names {
		out[i] = &s.add(n, true).Counter
	}
	return out
}

// Add counts one event of name.
func (s *Set) Add(name string) {
	if e := s.lookup(name); e != nil {
		e.Add(1)
		return
	}
	s.add(name, false).Add(1)
}

func (s *Set) lookup(name string) *entry {
	if m := s.names.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}

// add finds or makes the entry of name, marking it shown if asked.
func (s *Set) add(name string, shown bool) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]*entry{}
	if m := s.names.Load(); m != nil {
		if e := (*m)[name]; e != nil {
			// Marked in place: a new entry would lose the counts still
			// going to this one. Only add and Snapshot read shown,
			// under mu.
			e.shown = e.shown || shown
			return e
		}
		next = maps.Clone(*m)
	}
	e := &entry{shown: shown}
	next[name] = e
	s.names.Store(&next)
	return e
}

// Snapshot returns the counts of the names counted at least once and of
// those Show made; never nil.
func (s *Set) Snapshot() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]uint64{}
	if m := s.names.Load(); m != nil {
		for name, e := range *m {
			if n := e.Load(); n > 0 || e.shown {
				out[name] = n
			}
		}
	}
	return out
}

// Field is one part of the report line: the growth of a Set, logged as a
// dictionary of the names that grew, or of one Counter, logged as a
// number.
type Field struct {
	key     string
	set     *Set
	counter *Counter
}

// Names reports the growth of s under key.
func Names(key string, s *Set) Field { return Field{key: key, set: s} }

// Total reports the growth of c under key.
func Total(key string, c *Counter) Field { return Field{key: key, counter: c} }

// Report logs, every interval until ctx is done, how much each field
// grew since the previous line (since zero, for the first), as one info
// line with msg and the interval; an interval in which nothing grew
// logs nothing. Counting goes on between the lines, so a flood costs
// the log one line per interval, never one per packet.
func Report(ctx context.Context, log zerolog.Logger, every time.Duration, msg string, fields ...Field) {
	t := time.NewTicker(every)
	defer t.Stop()
	r := newReporter(fields)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.line(log, every, msg)
		}
	}
}

// reporter remembers what its fields counted at the previous line.
type reporter struct {
	fields []Field
	sets   []map[string]uint64
	totals []uint64
}

func newReporter(fields []Field) *reporter {
	return &reporter{fields: fields, sets: make([]map[string]uint64, len(fields)), totals: make([]uint64, len(fields))}
}

// line logs each field's growth since the previous call, unless nothing
// grew.
func (r *reporter) line(log zerolog.Logger, every time.Duration, msg string) {
	grown := make([]map[string]uint64, len(r.fields))
	totals := make([]uint64, len(r.fields))
	grew := false
	for i, f := range r.fields {
		if f.counter != nil {
			now := f.counter.Load()
			totals[i], r.totals[i] = now-r.totals[i], now
			grew = grew || totals[i] > 0
			continue
		}
		now := f.set.Snapshot()
		grown[i] = map[string]uint64{}
		for k, v := range now {
			if before := r.sets[i][k]; v > before {
				grown[i][k] = v - before
				grew = true
			}
		}
		r.sets[i] = now
	}
	if !grew {
		return
	}
	ev := log.Info()
	for i, f := range r.fields {
		if f.counter != nil {
			ev.Uint64(f.key, totals[i])
			continue
		}
		d := zerolog.Dict()
		for k, v := range grown[i] {
			d.Uint64(k, v)
		}
		ev.Dict(f.key, d)
	}
	ev.Dur("interval", every).Msg(msg)
}

// maxReadErrors is how many read errors in a row end a UDP read loop: a
// transient error is counted and skipped, a socket that only fails must
// not spin.
const maxReadErrors = 100

// ReadLoop runs a UDP read loop: it calls read, which reads a datagram
// (or a batch), handles it and returns the read's error, until the socket
// is closed (ReadLoop returns nil) or fails maxReadErrors times in a row
// (it returns the last error). Each other error is counted on errs and
// the loop goes on.
func ReadLoop(errs *Counter, read func() error) error {
	run := 0
	for {
		err := read()
		switch {
		case err == nil:
			run = 0
			continue
		case errors.Is(err, net.ErrClosed):
			return nil
		}
		errs.Add(1)
		if run++; run >= maxReadErrors {
			return err
		}
	}
}

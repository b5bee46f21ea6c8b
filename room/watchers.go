package room

import (
	"context"
	"sync"
	"sync/atomic"
)

// Watchers hands a table's events to the channels its Watch gave out.
// A table calls Send in the order of its versions (under its own lock,
// say); a watcher that falls its buffer behind misses events rather than
// holding the table up, as the Rooms contract allows, and Drops counts
// them. The zero value is ready to use.
type Watchers struct {
	mu    sync.Mutex
	chans map[chan Event]struct{}
	drops atomic.Uint64
}

// Watch returns a channel with room for buffer events that receives what
// Send hands out until ctx is done; then it is closed.
func (w *Watchers) Watch(ctx context.Context, buffer int) <-chan Event {
	ch := make(chan Event, buffer)
	w.mu.Lock()
	if w.chans == nil {
		w.chans = make(map[chan Event]struct{})
	}
	w.chans[ch] = struct{}{}
	w.mu.Unlock()
	context.AfterFunc(ctx, func() {
		w.mu.Lock()
		delete(w.chans, ch)
		close(ch)
		w.mu.Unlock()
	})
	return ch
}

// Send hands ev to every watcher with room for it and counts the others.
func (w *Watchers) Send(ev Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.chans {
		select {
		case ch <- ev:
		default:
			w.drops.Add(1)
		}
	}
}

// Drops is the number of events watchers have missed.
func (w *Watchers) Drops() uint64 { return w.drops.Load() }

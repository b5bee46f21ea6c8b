// Package frontend holds what the neighbour-protocol front-ends (lobby/gg2,
// lobby/gunz, lobby/announce) share besides rate limiting (which is
// package limit's, shared with the native edge): counters that are summed
// into one log line per interval rather than one per packet, the handling
// of read errors, and how Foyer's own rooms describe themselves to
// GG2-style browsers.
package frontend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// Counters are cumulative counts by name. The front-ends' rates are bounded
// by their limiters, so one mutex is cheap enough.
type Counters struct {
	mu sync.Mutex
	m  map[string]uint64
}

// Add counts one event of the given name.
func (c *Counters) Add(name string) { c.AddN(name, 1) }

// AddN counts n events of the given name.
func (c *Counters) AddN(name string, n uint64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]uint64)
	}
	c.m[name] += n
	c.mu.Unlock()
}

// Snapshot copies the counts; never nil.
func (c *Counters) Snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return map[string]uint64{}
	}
	return maps.Clone(c.m)
}

// Report logs, every interval until ctx is done, what drops counted since
// the last report, if any: one line per interval, never one per packet.
func Report(ctx context.Context, log zerolog.Logger, every time.Duration, drops *Counters) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := drops.Snapshot()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := drops.Snapshot()
		d := zerolog.Dict()
		grew := false
		for k, v := range now {
			if v > last[k] {
				d.Uint64(k, v-last[k])
				grew = true
			}
		}
		if grew {
			log.Info().Dict("dropped", d).Dur("interval", every).Msg("drops")
		}
		last = now
	}
}

// Clamp16 converts a count to a u16 wire field, saturating.
func Clamp16(n int) uint16 {
	return uint16(min(max(n, 0), 0xFFFF))
}

// RoomKeys is the key/value table a GG2-style list or registration shows
// for one of Foyer's own rooms: its name, game and map, or defaults for
// those it does not set ("Foyer room N", game, "default").
func RoomKeys(r room.Room, game string) gg2wire.KeyValues {
	name, mapName := r.Name, r.Map
	if name == "" {
		name = fmt.Sprintf("Foyer room %d", r.ID)
	}
	if r.Game != "" {
		game = r.Game
	}
	if mapName == "" {
		mapName = "default"
	}
	return gg2wire.KeyValues{
		{Key: "name", Value: []byte(name)},
		{Key: "game", Value: []byte(game)},
		{Key: "map", Value: []byte(mapName)},
	}
}

// maxReadErrors is how many read errors in a row end a UDP loop: a
// transient error is counted and skipped, a socket that only fails must
// not spin.
const maxReadErrors = 100

// ReadError decides what a UDP read error means for a read loop: a closed
// socket ends it cleanly (stop, nil); maxReadErrors errors in a row end it
// with the last (stop, err); anything else is counted as "read_error" and
// skipped. run counts the errors in a row; the loop zeroes it on success.
func ReadError(err error, run *int, drops *Counters) (stop bool, result error) {
	if errors.Is(err, net.ErrClosed) {
		return true, nil
	}
	drops.Add("read_error")
	if *run++; *run >= maxReadErrors {
		return true, err
	}
	return false, nil
}

package lobby

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet"
)

// Stats is a snapshot of the lobby's counters, all cumulative since New
// except the gauges (Sources, Prefixes, CreatesInFlight).
type Stats struct {
	// Requests counts well-formed requests by type: "list", "create",
	// "join" (including those dropped afterwards).
	Requests map[string]uint64
	// Replies counts datagrams sent by type: "room_list", "room_created",
	// "join_success", "join_failed".
	Replies map[string]uint64
	// Drops counts datagrams dropped unanswered, by reason: the packet
	// package's reasons for malformed ones, and "not_request",
	// "rate_limited", "reflection", "retry_pending", "create_busy",
	// "join_busy", "draining", "send_error", "read_error".
	Drops map[string]uint64
	// Failures counts JOIN_FAILED answers (to JOIN and CREATE) by reason:
	// "room_0", "no_room", "full", "not_joinable", "capacity", "no_ports",
	// "spawn", "closed", "canceled", "other".
	Failures map[string]uint64
	// Granted counts successful "create" and "join" answers.
	Granted map[string]uint64
	// LimitedSources counts the times a source IP went from served to
	// rate limited.
	LimitedSources uint64
	// Retries counts requests answered from the retry cache.
	Retries uint64
	// Sources and Prefixes are the entries in the per-IP and per-network
	// tables now (shared with the other edges when Config.Sources and
	// Config.Replies are); CreatesInFlight the CREATEs running now.
	Sources, Prefixes, CreatesInFlight int
}

// counters are the lobby's cumulative counts. The hot ones (requests,
// replies) are atomics; the rest are keyed by reason under a mutex, which
// only the dropped and failed paths take.
type counters struct {
	requests [3]atomic.Uint64 // list, create, join
	replies  [4]atomic.Uint64 // room_list, room_created, join_success, join_failed
	granted  [2]atomic.Uint64 // create, join
	limited  atomic.Uint64
	retries  atomic.Uint64

	mu       sync.Mutex
	drops    map[string]uint64
	failures map[string]uint64
}

var (
	requestNames = [3]string{"list", "create", "join"}
	replyNames   = [4]string{"room_list", "room_created", "join_success", "join_failed"}
	grantedNames = [2]string{"create", "join"}
)

// requestIndex maps request types to their counter; -1 for others.
func requestIndex(t packet.Type) int {
	switch t {
	case packet.ListRooms:
		return 0
	case packet.CreateRoom:
		return 1
	case packet.JoinRoom:
		return 2
	}
	return -1
}

func replyIndex(t packet.Type) int {
	switch t {
	case packet.RoomList:
		return 0
	case packet.RoomCreated:
		return 1
	case packet.JoinSuccess:
		return 2
	}
	return 3
}

func (c *counters) drop(reason string) {
	c.mu.Lock()
	c.drops[reason]++
	c.mu.Unlock()
}

func (c *counters) fail(reason string) {
	c.mu.Lock()
	c.failures[reason]++
	c.mu.Unlock()
}

func named(names []string, vals []atomic.Uint64) map[string]uint64 {
	m := make(map[string]uint64, len(names))
	for i, n := range names {
		m[n] = vals[i].Load()
	}
	return m
}

// snapshot copies the cumulative counters.
func (c *counters) snapshot() Stats {
	c.mu.Lock()
	drops, failures := maps.Clone(c.drops), maps.Clone(c.failures)
	c.mu.Unlock()
	return Stats{
		Requests:       named(requestNames[:], c.requests[:]),
		Replies:        named(replyNames[:], c.replies[:]),
		Granted:        named(grantedNames[:], c.granted[:]),
		Drops:          drops,
		Failures:       failures,
		LimitedSources: c.limited.Load(),
		Retries:        c.retries.Load(),
	}
}

// delta returns now minus before for every key that grew.
func delta(now, before map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range now {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// dict renders a count map as a zerolog dictionary.
func dict(m map[string]uint64) *zerolog.Event {
	d := zerolog.Dict()
	for k, v := range m {
		d.Uint64(k, v)
	}
	return d
}

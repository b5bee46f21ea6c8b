package lobby

import (
	"context"

	"github.com/foyerlobby/foyer/lobby/internal/tally"
	"github.com/foyerlobby/foyer/packet"
)

// Stats is a snapshot of the lobby's counters, all cumulative since New
// except the gauges (Sources, Prefixes, CreatesInFlight).
type Stats struct {
	// Requests counts well-formed requests by type: "list", "create",
	// "join" (including those dropped afterwards), and the extension's
	// "ext_list", "ext_create", "ext_join", "ext_quick".
	Requests map[string]uint64
	// Replies counts datagrams sent by type: "room_list", "room_created",
	// "join_success", "join_failed", and the extension's "ext_rooms",
	// "ext_seat", "ext_refused", "ext_retry".
	Replies map[string]uint64
	// Drops counts datagrams dropped unanswered, by reason: the packet
	// package's reasons for malformed ones, and "not_request",
	// "rate_limited", "reflection", "retry_pending", "create_busy",
	// "join_busy", "draining", "send_error", "read_error"; for the
	// extension, package ext's reasons ("ext_short", ...), "ext_type"
	// (a room's message, or a table without the extension),
	// "ext_unpadded" (a request of a source not validated shorter than
	// the EXT_RETRY it would get), "password_busy".
	Drops map[string]uint64
	// Failures counts JOIN_FAILED and EXT_REFUSED answers by reason:
	// "room_0", "no_room", "full", "not_joinable", "capacity", "no_ports",
	// "spawn", "closed", "canceled", "wrong_password", "rate_limited",
	// "denied", "other".
	Failures map[string]uint64
	// Granted counts successful "create" and "join" answers, and the
	// extension's "ext_create", "ext_join", "ext_quick".
	Granted map[string]uint64
	// LimitedSources counts the times a source IP went from served to
	// rate limited.
	LimitedSources uint64
	// Retries counts requests answered from the retry cache.
	Retries uint64
	// KernelDrops counts the datagrams the kernel dropped at the lobby's
	// sockets before any read: refused by the socket filter
	// (Config.Filter), or with no room left in a receive buffer. It is
	// the sockets' own count, a predecessor's drops included for sockets
	// handed over.
	KernelDrops uint64
	// Sources and Prefixes are the entries in the per-IP and per-network
	// tables now (shared with the other edges when Config.Sources and
	// Config.Replies are); CreatesInFlight the CREATEs running now.
	Sources, Prefixes, CreatesInFlight int
}

// counters are the lobby's cumulative counts, by name for Stats. The hot
// ones, on every request's path, are held by index: one atomic add each.
type counters struct {
	requestsByType, repliesByType, grantedByType, drops, failures tally.Set

	requests [3]*tally.Counter // list, create, join (requestIndex)
	replies  [4]*tally.Counter // room_list, room_created, join_success, join_failed (replyIndex)
	granted  [2]*tally.Counter // create, join
	limited  tally.Counter
	retries  tally.Counter

	readErrors *tally.Counter
}

// init makes the counters of every request, reply and grant type, which
// Stats always lists, zero or not.
func (c *counters) init() {
	copy(c.requests[:], c.requestsByType.Show("list", "create", "join"))
	copy(c.replies[:], c.repliesByType.Show("room_list", "room_created", "join_success", "join_failed"))
	copy(c.granted[:], c.grantedByType.Show("create", "join"))
	c.readErrors = c.drops.Counter("read_error")
}

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

// batchCounts are a read loop's counts of its batch's requests, joins
// granted and replies sent, added to the lobby's counters once a batch
// per type (see Lobby.flush) rather than once a datagram: each add is an
// atomic one, and with several read loops their counters' cache lines
// would go from core to core on every request.
type batchCounts struct {
	requests [len(counters{}.requests)]uint64
	replies  [len(counters{}.replies)]uint64
	joins    uint64
}

// add adds b's counts to c and zeroes them.
func (c *counters) add(b *batchCounts) {
	addEach(c.requests[:], b.requests[:])
	addEach(c.replies[:], b.replies[:])
	if b.joins > 0 {
		c.granted[1].Add(b.joins)
		b.joins = 0
	}
}

// addEach adds ns[i] to cs[i] where it is not zero, and zeroes it.
func addEach(cs []*tally.Counter, ns []uint64) {
	for i, n := range ns {
		if n > 0 {
			cs[i].Add(n)
			ns[i] = 0
		}
	}
}

func (c *counters) drop(reason string) { c.drops.Add(reason) }

func (c *counters) fail(reason string) { c.failures.Add(reason) }

// snapshot copies the cumulative counters.
func (c *counters) snapshot() Stats {
	return Stats{
		Requests:       c.requestsByType.Snapshot(),
		Replies:        c.repliesByType.Snapshot(),
		Granted:        c.grantedByType.Snapshot(),
		Drops:          c.drops.Snapshot(),
		Failures:       c.failures.Snapshot(),
		LimitedSources: c.limited.Load(),
		Retries:        c.retries.Load(),
	}
}

// report logs, every ReportInterval until ctx is done, what was dropped or
// refused since the last report, if anything was; then it closes done.
func (l *Lobby) report(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tally.Report(ctx, l.log, l.cfg.ReportInterval, "lobby drops",
		tally.Names("dropped", &l.stats.drops), tally.Names("refused", &l.stats.failures),
		tally.Total("limited_sources", &l.stats.limited))
}

package lobby

import (
	"maps"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// Every request, reply and grant type is in Stats from the start, and
// replies are counted by their type in either framing.
func TestStatsCountRepliesByType(t *testing.T) {
	l, addr := start(t, testConfig(), newMemRooms(t, 8))
	zero := l.Stats()
	for name, m := range map[string]map[string]uint64{"requests": zero.Requests, "replies": zero.Replies, "granted": zero.Granted} {
		want := map[string]map[string]uint64{
			"requests": {"list": 0, "create": 0, "join": 0},
			"replies":  {"room_list": 0, "room_created": 0, "join_success": 0, "join_failed": 0},
			"granted":  {"create": 0, "join": 0},
		}[name]
		if !maps.Equal(m, want) {
			t.Errorf("%s before any request: %v, want %v", name, m, want)
		}
	}
	for _, f := range []packet.Framing{packet.Compact, packet.Legacy} {
		c := dial(t, "127.0.0.1", addr)
		created := c.roundTrip(hdr(f, packet.CreateRoom, 1), 0)
		c.roundTrip(hdr(f, packet.ListRooms, 2), 0)
		c.roundTrip(hdr(f, packet.JoinRoom, 3), created.RoomID)
		c.roundTrip(hdr(f, packet.JoinRoom, 4), 9999)
	}
	want := map[string]uint64{"room_list": 2, "room_created": 2, "join_success": 2, "join_failed": 2}
	s := statsOnce(t, l, func(s Stats) bool { return maps.Equal(s.Replies, want) })
	if !maps.Equal(s.Replies, want) || s.Granted["create"] != 2 || s.Granted["join"] != 2 || s.Failures["no_room"] != 2 {
		t.Errorf("replies %v, granted %v, failures %v; want replies %v", s.Replies, s.Granted, s.Failures, want)
	}
}

// discard is a socket that sends everything and keeps nothing.
type discard struct{}

func (discard) WriteFrom(b []byte, _ netip.AddrPort, _ netip.Addr) (int, error) { return len(b), nil }

// A discard is also a batch's I/O that sends every reply and reads
// nothing.
func (discard) read([]slot) (int, error)       { return 0, nil }
func (discard) write(out []reply) (int, error) { return len(out), nil }

// BenchmarkHandle is the native edge's cost per datagram, counting
// included, without the sockets: handle on each datagram of a batch of
// batchSize from one client (or, in join-16-sources, each from another
// of 16, as the edge benchmarks' JOINs come: every request its source's
// own run, admitted alone), their replies queued, the batch settled
// with the reply budget and flushed to a socket that discards them, the
// clock read once per batch, as a read loop does with a full batch, and
// the room table handed to the lobby itself, as foyer serve does. The
// requests must allocate nothing, and neither must the drops, which a
// flood makes the commonest path.
func BenchmarkHandle(b *testing.B) {
	encode := func(m packet.Message) []byte {
		enc, err := m.Append(nil)
		if err != nil {
			b.Fatal(err)
		}
		return enc
	}
	list := encode(packet.Message{Header: packet.Header{Type: packet.ListRooms}})
	join := packet.Message{Header: packet.Header{Type: packet.JoinRoom}, RoomID: 1}
	badCRC := encode(packet.Message{Header: packet.Header{Type: packet.ListRooms}})
	badCRC[len(badCRC)-1] ^= 1
	notRequest := encode(packet.Message{Header: packet.Header{Type: packet.JoinFailed}})
	nextJoin := func(i int) []byte { // new each time: no retry-cache hit
		join.Seq = uint16(i)
		enc, _ := join.Append(list[:0:0])
		return enc
	}
	for _, row := range []struct {
		name    string
		limited bool // one request a second from each source
		sources int
		next    func(i int) []byte
	}{
		{"list", false, 1, func(int) []byte { return list }},
		{"join", false, 1, nextJoin},
		{"join-16-sources", false, 16, nextJoin},
		{"drop-malformed", false, 1, func(int) []byte { return badCRC }},
		{"drop-not-request", false, 1, func(int) []byte { return notRequest }},
		{"drop-rate-limited", true, 1, func(int) []byte { return list }},
	} {
		b.Run(row.name, func(b *testing.B) {
			rooms := newMemRooms(b, 1)
			rooms.add(room.Room{ID: 1, Port: 30001, MaxPlayers: 32, State: packet.Waiting})
			cfg := testConfig()
			cfg.Rate, cfg.Burst = math.MaxInt32, math.MaxInt32
			if row.limited {
				cfg.Rate, cfg.Burst = 1, 1
			}
			cfg.ReflectionLimit = math.MaxInt32
			l := cfg.newLobby(rooms.Rooms) // the table itself, as foyer serve hands it
			defer l.stop()
			froms := make([]netip.AddrPort, row.sources)
			for i := range froms {
				froms[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, 0, byte(i + 1)}), 5000)
			}
			dgrams := make([][]byte, 1<<12)
			for i := range dgrams {
				dgrams[i] = row.next(i)
			}
			q := newBatch(udptest.Listen(b, "127.0.0.1"), false, 0)
			q.io = discard{}
			var os offers
			var now time.Time
			handle := func(d []byte, from netip.AddrPort, at arrival, out []byte) []byte {
				return l.handle(q, discard{}, &os, d, from, at, now, out)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%batchSize != 0 {
					continue // an iteration is a datagram, answered with its batch
				}
				l.settle(q, now)
				l.flush(q)
				now = time.Now()
				for k := range batchSize {
					s := &q.in[k]
					s.n, s.from = copy(s.buf, dgrams[(i+k)&(len(dgrams)-1)]), froms[(i/batchSize+k)%len(froms)]
				}
				q.answer(batchSize, handle)
			}
		})
	}
}

// statsAtWrite is a batch's I/O that reads nothing and, as it sends the
// batch's replies, looks at the lobby's counters.
type statsAtWrite struct {
	l    *Lobby
	seen Stats
}

func (w *statsAtWrite) read([]slot) (int, error) { return 0, nil }

func (w *statsAtWrite) write(out []reply) (int, error) {
	w.seen = w.l.Stats()
	return len(out), nil
}

// A read loop counts its batch's requests and joins at once, but before
// their replies go out, as if each were counted on its own: a client
// that has its answer finds its request counted. The replies are counted
// once they have gone out, and nothing is left to count twice.
func TestBatchCountedBeforeItsRepliesGoOut(t *testing.T) {
	rooms := newMemRooms(t, 1)
	rooms.add(room.Room{ID: 1, Port: 30001, MaxPlayers: 4, State: packet.Waiting})
	l := testConfig().newLobby(rooms.Rooms)
	t.Cleanup(l.stop)
	w := &statsAtWrite{l: l}
	q := newBatch(udptest.Listen(t, "127.0.0.1"), false, 0)
	q.io = w
	var os offers
	from := netip.MustParseAddrPort("127.0.0.1:5000")
	for i, m := range []packet.Message{
		{Header: packet.Header{Type: packet.ListRooms, Seq: 1}},
		{Header: packet.Header{Type: packet.JoinRoom, Seq: 2}, RoomID: 1},
		{Header: packet.Header{Type: packet.ListRooms, Seq: 3}},
	} {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		q.in[i].n, q.in[i].from = copy(q.in[i].buf, b), from
	}
	now := time.Now()
	q.answer(3, func(d []byte, from netip.AddrPort, at arrival, out []byte) []byte {
		return l.handle(q, discard{}, &os, d, from, at, now, out)
	})
	l.settle(q, now)
	l.flush(q)
	if r, g := w.seen.Requests, w.seen.Granted; r["list"] != 2 || r["join"] != 1 || g["join"] != 1 || w.seen.Replies["room_list"]+w.seen.Replies["join_success"] != 0 {
		t.Errorf("as the replies went out: requests %v, granted %v, replies %v; want 2 LISTs and a JOIN granted, no reply yet", r, g, w.seen.Replies)
	}
	if s := l.Stats(); s.Replies["room_list"] != 2 || s.Replies["join_success"] != 1 || s.Requests["list"] != 2 || s.Granted["join"] != 1 {
		t.Errorf("after the batch: requests %v, granted %v, replies %v", s.Requests, s.Granted, s.Replies)
	}
	if q.counts != (batchCounts{}) {
		t.Errorf("counts left in the batch: %+v", q.counts)
	}
}

package lobby

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// limits is limit.Config under a name that can be embedded next to Config.
type limits = limit.Config

// setup is what a test lobby is built from: its Config, the limits of its
// own guard, and its log, in one value the tests tweak.
type setup struct {
	Config
	limits
	log zerolog.Logger
}

// testConfig serves on a free loopback port with the default limits.
func testConfig() setup {
	c := DefaultConfig()
	c.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	return setup{Config: c, limits: limit.DefaultConfig(), log: zerolog.Nop()}
}

// newLobby builds a lobby from s without sockets.
func (s setup) newLobby(rooms room.Table) *Lobby {
	return newLobby(s.Config, rooms, limit.NewGuard(s.limits), s.log)
}

// build checks s's limits and builds a lobby from s, as the wiring does.
func (s setup) build(rooms room.Table) (*Lobby, error) {
	if err := s.limits.Check(); err != nil {
		return nil, err
	}
	return New(s.Config, rooms, limit.NewGuard(s.limits), s.log)
}

// start serves rooms until the test ends.
func start(t testing.TB, cfg setup, rooms room.Table) (*Lobby, netip.AddrPort) {
	t.Helper()
	l, err := cfg.build(rooms)
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Serve(t, l.Serve)
	return l, l.Addrs()[0]
}

// client is a UDP socket bound to ip (any port) talking to the lobby.
type client struct {
	t    testing.TB
	conn *net.UDPConn
	to   netip.AddrPort
}

func dial(t testing.TB, ip string, to netip.AddrPort) *client {
	t.Helper()
	return &client{t: t, conn: udptest.Listen(t, ip), to: to}
}

func (c *client) sendRaw(b []byte) {
	c.t.Helper()
	if c.conn.RemoteAddr() != nil { // connected: to its peer, as most clients send
		if _, err := c.conn.Write(b); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	udptest.Send(c.t, c.conn, c.to, b)
}

func (c *client) send(h packet.Header, room uint32) {
	c.t.Helper()
	m := packet.Message{Header: h, RoomID: room}
	b, err := m.Append(nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(b)
}

// recv waits up to wait for a reply; ok is false if none came.
func (c *client) recv(wait time.Duration) (packet.Message, bool) {
	c.t.Helper()
	b, err := udptest.Read(c.conn, c.to, wait)
	if err != nil {
		c.t.Fatal(err)
	}
	if b == nil {
		return packet.Message{}, false
	}
	m, err := packet.Parse(b)
	if err != nil {
		c.t.Fatalf("reply %x: %v", b, err)
	}
	return m, true
}

// roundTrip sends one request and returns its reply, failing the test if
// none comes within a generous bound.
func (c *client) roundTrip(h packet.Header, room uint32) packet.Message {
	c.t.Helper()
	c.send(h, room)
	m, ok := c.recv(5 * time.Second)
	if !ok {
		c.t.Fatalf("no reply to %#x seq %d", h.Type, h.Seq)
	}
	if m.Seq != h.Seq || m.Framing != h.Framing || m.Tick != h.Tick {
		c.t.Fatalf("reply %+v does not echo request %+v", m.Header, h)
	}
	return m
}

// quiet is how long a test waits to conclude no reply is coming. Absence
// cannot be proven faster; every such check is followed by one that a
// reply does come, so a slow machine cannot make a broken lobby pass.
const quiet = 200 * time.Millisecond

func (c *client) expectNothing() {
	c.t.Helper()
	if m, ok := c.recv(quiet); ok {
		c.t.Fatalf("unexpected reply %+v", m)
	}
}

// statsOnce returns the lobby's counters once done says they are complete
// (or, failing that, after a generous bound, for the test to report).
func statsOnce(t testing.TB, l *Lobby, done func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := l.Stats()
		if done(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(time.Millisecond)
	}
}

func hdr(f packet.Framing, t packet.Type, seq uint16) packet.Header {
	h := packet.Header{Framing: f, Type: t, Seq: seq}
	if f == packet.Legacy {
		h.Tick = 0xDEADBEEF - uint32(seq)
	}
	return h
}

func TestFlowsBothFramings(t *testing.T) {
	rooms := newMemRooms(t, 8)
	_, addr := start(t, testConfig(), rooms)
	for _, f := range []packet.Framing{packet.Compact, packet.Legacy} {
		c := dial(t, "127.0.0.1", addr)
		base := uint16(100 * (f + 1))
		created := c.roundTrip(hdr(f, packet.CreateRoom, base), 0)
		if r, ok := rooms.Room(created.RoomID); created.Type != packet.RoomCreated || !ok || created.Port != r.Port {
			t.Fatalf("CREATE answered %+v; the table lists %+v", created, r)
		}
		list := c.roundTrip(hdr(f, packet.ListRooms, base+1), 0)
		if list.Type != packet.RoomList || !slices.ContainsFunc(list.Rooms, func(r packet.Room) bool {
			return r.ID == created.RoomID && r.Players == 1 && r.MaxPlayers == 4
		}) {
			t.Fatalf("LIST answered %+v", list)
		}
		other := dial(t, "127.0.0.1", addr)
		joined := other.roundTrip(hdr(f, packet.JoinRoom, base+2), created.RoomID)
		if joined.Type != packet.JoinSuccess || joined.RoomID != created.RoomID || joined.Port != created.Port {
			t.Fatalf("JOIN answered %+v", joined)
		}
		if failed := other.roundTrip(hdr(f, packet.JoinRoom, base+3), 9999); failed.Type != packet.JoinFailed {
			t.Fatalf("JOIN of a missing room answered %+v", failed)
		}
		if failed := other.roundTrip(hdr(f, packet.JoinRoom, base+4), 0); failed.Type != packet.JoinFailed {
			t.Fatalf("JOIN of room 0 answered %+v", failed)
		}
	}
}

// The reply to LIST seq 7 with the golden two-room table is the golden
// ROOM_LIST patched to seq 7, bit for bit apart from seq and CRC.
func TestListPatchedFromCache(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: packet.Waiting})
	rooms.add(room.Room{ID: 2, Players: 4, MaxPlayers: 4, Port: 30001, State: packet.Playing})
	_, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	golden, _ := hex.DecodeString("0241000000180018000200000001000100047530000000000200040004753102ba7e9222")
	for _, seq := range []uint16{7, 0, 65535} {
		c.send(hdr(packet.Compact, packet.ListRooms, seq), 0)
		b, err := udptest.Read(c.conn, c.to, 5*time.Second)
		if err != nil || b == nil {
			t.Fatalf("seq %d: no reply (%v)", seq, err)
		}
		want := slices.Clone(golden)
		packet.SetSeq(want, seq)
		if !slices.Equal(b, want) {
			t.Errorf("seq %d: got %x, want %x", seq, b, want)
		}
	}
	// A change of the table shows in the next LIST.
	rooms.add(room.Room{ID: 3, MaxPlayers: 4, Port: 30002})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m := c.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0); len(m.Rooms) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the third room never showed")
		}
	}
}

func TestListBeyondOneDatagramPutsJoinableFirst(t *testing.T) {
	var rs []room.Room
	for i := range packet.MaxRooms + 100 {
		r := room.Room{ID: uint32(i + 1), MaxPlayers: 4, State: packet.Playing}
		if i%50 == 0 {
			r.State = packet.Waiting
		}
		if i%100 == 0 {
			r.Players = 4 // waiting but full: not joinable
		}
		rs = append(rs, r)
	}
	got := listed(rs, netip.MustParseAddr("127.0.0.1"))
	if len(got) != packet.MaxRooms {
		t.Fatalf("%d rooms listed", len(got))
	}
	joinable := 0
	for i, r := range got {
		if r.State == packet.Waiting && r.Players < 4 {
			if i != joinable {
				t.Fatalf("joinable room %d at %d, after a non-joinable one", r.ID, i)
			}
			joinable++
		}
	}
	if joinable != len(rs)/100 {
		t.Errorf("%d joinable rooms listed, want %d", joinable, len(rs)/100)
	}
	if small := listed(rs[:3], netip.Addr{}); len(small) != 3 || small[0].ID != 1 || small[2].ID != 3 {
		t.Errorf("a small table is reordered: %+v", small)
	}
}

// The original client reads a lobby reply into 2,048 bytes and drops a
// longer list: a legacy ROOM_LIST carries at most 184 rooms, joinable
// first, while a compact one carries them all.
func TestLegacyListFitsTheOriginalClient(t *testing.T) {
	rooms := newMemRooms(t, 8)
	const n = 300
	for i := range n {
		r := room.Room{ID: uint32(i + 1), Port: uint16(30000 + i), MaxPlayers: 4, State: packet.Playing}
		if i >= n-10 {
			r.State = packet.Waiting // the last ten are the joinable ones
		}
		rooms.add(r)
	}
	_, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	if got := c.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0).Rooms; len(got) != n {
		t.Fatalf("compact list of %d rooms, want %d", len(got), n)
	}
	c.send(hdr(packet.Legacy, packet.ListRooms, 2), 0)
	b, err := udptest.Read(c.conn, c.to, 5*time.Second)
	if err != nil || b == nil {
		t.Fatalf("no legacy list: %v", err)
	}
	m, err := packet.Parse(b)
	if err != nil || len(b) > 2048 || len(m.Rooms) != packet.MaxLegacyListRooms || packet.MaxLegacyListRooms != 184 {
		t.Fatalf("legacy list of %d bytes, %d rooms (%v); want 184 rooms in at most 2048 bytes", len(b), len(m.Rooms), err)
	}
	for i, r := range m.Rooms[:10] {
		if r.State != packet.Waiting {
			t.Fatalf("room %d at %d is not joinable: the joinable ones come first", r.ID, i)
		}
	}
}

// TestMalformedDroppedAndCounted: malformed datagrams and server
// messages get nothing and are counted: by the read loop, by reason,
// without the socket filter; with it, by the kernel, but for the bad CRC,
// which only a parse tells.
func TestMalformedDroppedAndCounted(t *testing.T) {
	for _, filter := range []bool{false, true} {
		t.Run(fmt.Sprintf("filter=%v", filter), func(t *testing.T) { testMalformedDroppedAndCounted(t, filter) })
	}
}

func testMalformedDroppedAndCounted(t *testing.T, filter bool) {
	cfg := testConfig()
	cfg.Filter = filter
	l, addr := start(t, cfg, newMemRooms(t, 8))
	c := dial(t, "127.0.0.1", addr)
	list, _ := hex.DecodeString("0140000700000000" + "5fa3769e")
	join, _ := hex.DecodeString("014400020004000400000001dedf7aae")
	badCRC := slices.Clone(list)
	badCRC[11] ^= 1
	reply, _ := hex.DecodeString("02460009000000000dccfa26") // a server message sent to the server
	// A full list in a small LZ4 block, inflating 200-fold: as a reply it
	// is dropped unparsed, and as a LIST claiming that size it is refused
	// before anything is inflated.
	bomb := packet.Message{Header: packet.Header{Type: packet.RoomList, Compressed: true}, Rooms: make([]packet.Room, packet.MaxRooms)}
	zipped, _ := bomb.Append(nil)
	zippedList := slices.Clone(zipped)
	zippedList[0], zippedList[1] = byte(packet.ClientToServer), byte(packet.ListRooms)
	n := len(zippedList) - packet.CRCLen
	binary.BigEndian.PutUint32(zippedList[n:], crc32.ChecksumIEEE(zippedList[:n]))
	for name, b := range map[string][]byte{
		"empty": {}, "short": list[:7], "truncated": join[:15], "bad crc": badCRC,
		"long": append(slices.Clone(list), 0), "reply": reply, "compressed reply": zipped, "compressed list": zippedList,
		"legacy garbage": {0xA3, 0, 0, 0, 1, 1, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	} {
		c.sendRaw(b)
		if m, ok := c.recv(quiet); ok {
			t.Errorf("%s: answered %+v", name, m)
		}
	}
	c.roundTrip(hdr(packet.Compact, packet.ListRooms, 3), 0) // still serving
	// A reply is counted once its write returned, which can be after the
	// client has it.
	s := statsOnce(t, l, func(s Stats) bool { return s.Replies["room_list"] > 0 })
	var dropped uint64
	for _, n := range s.Drops {
		dropped += n
	}
	switch {
	case !filter && (dropped != 9 || s.Drops["crc"] != 1 || s.Drops["not_request"] != 2 || s.Drops["compression"] != 1 || s.KernelDrops != 0):
		t.Errorf("drops %v, kernel drops %d", s.Drops, s.KernelDrops)
	case filter && (dropped != 1 || s.Drops["crc"] != 1 || s.KernelDrops != 8):
		t.Errorf("filtered: drops %v, kernel drops %d; want the bad CRC and 8", s.Drops, s.KernelDrops)
	}
	if s.Requests["list"] != 1 || s.Replies["room_list"] != 1 {
		t.Errorf("requests %v replies %v", s.Requests, s.Replies)
	}
}

// A source gets its burst and no more of a burst sent faster than its
// bucket refills; the rest is dropped and counted, and another source is
// served meanwhile. The bucket refills one token per 1,000 s, so within the
// test the counts follow from the tokens alone, however slow the machine;
// and they are the lobby's counts, so a datagram the kernel drops changes
// nothing either.
func TestRateLimitPerSource(t *testing.T) {
	const sent, burst = 20, 5
	cfg := testConfig()
	cfg.Rate, cfg.Burst = 0.001, burst
	l, addr := start(t, cfg, newMemRooms(t, 8))
	noisy := dial(t, "127.0.0.1", addr)
	for seq := range uint16(sent) {
		noisy.send(hdr(packet.Compact, packet.ListRooms, seq), 0)
	}
	// Another source's LIST answered, the counts are awaited until every
	// LIST sent is accounted for, whichever reader has it (or, should
	// the kernel drop some, until the wait gives up).
	calm := dial(t, "127.0.0.2", addr)
	calm.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)
	s := statsOnce(t, l, func(s Stats) bool {
		return s.Requests["list"] == sent+1 && s.Replies["room_list"]+s.Drops["rate_limited"] == s.Requests["list"]
	})
	arrived := s.Requests["list"] - 1 // without the calm LIST
	served := s.Replies["room_list"] - 1
	if arrived > sent || served != min(arrived, burst) || s.Drops["rate_limited"] != arrived-served {
		t.Errorf("of %d LISTs sent, %d arrived, %d answered, %d dropped as rate limited; want the burst of %d answered and the rest dropped",
			sent, arrived, served, s.Drops["rate_limited"], burst)
	}
	if s.Drops["rate_limited"] == 0 || s.LimitedSources != 1 || s.Sources != 2 {
		t.Errorf("stats %+v, want a limited source of the two", s)
	}
	answered := 0
	for {
		m, ok := noisy.recv(quiet)
		if !ok {
			break
		}
		if m.Type != packet.RoomList || m.Seq >= sent {
			t.Errorf("the noisy source got %+v", m.Header)
		}
		answered++
	}
	if uint64(answered) > served {
		t.Errorf("the noisy source got %d replies, the lobby sent %d", answered, served)
	}
}

func TestCreateRateLimit(t *testing.T) {
	cfg := testConfig()
	cfg.CreateRate, cfg.CreateBurst = 0.001, 2
	rooms := newMemRooms(t, 64)
	_, addr := start(t, cfg, rooms)
	c := dial(t, "127.0.0.1", addr)
	c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 1), 0)
	c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 2), 0)
	c.send(hdr(packet.Compact, packet.CreateRoom, 3), 0)
	c.expectNothing()
	// A retry of an answered CREATE is not a new CREATE: it is replayed.
	c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 2), 0)
	c.roundTrip(hdr(packet.Compact, packet.ListRooms, 4), 0)
	if n := rooms.creates.Load(); n != 2 {
		t.Errorf("%d creates ran", n)
	}
}

// A CREATE retried while it runs joins the running one; once done, retries
// get the same reply; LIST and JOIN are answered meanwhile.
func TestCreateRetriesAndDoesNotBlock(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 50, MaxPlayers: 4, Port: 30050})
	rooms.gate = make(chan struct{})
	l, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	for range 5 {
		c.send(hdr(packet.Legacy, packet.CreateRoom, 77), 0)
	}
	other := dial(t, "127.0.0.1", addr)
	other.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)
	if m := other.roundTrip(hdr(packet.Compact, packet.JoinRoom, 2), 50); m.Type != packet.JoinSuccess {
		t.Fatalf("JOIN answered %+v", m)
	}
	// With a reader per core, the other client's requests may be read
	// before this one's copies: the CREATE ends once all are in.
	statsOnce(t, l, func(s Stats) bool { return s.Requests["create"] == 5 })
	close(rooms.gate)
	first, ok := c.recv(5 * time.Second)
	if !ok || first.Type != packet.RoomCreated || first.Seq != 77 {
		t.Fatalf("CREATE answered %+v %v", first, ok)
	}
	c.expectNothing() // one reply for the five sends
	for range 10 {
		if again := c.roundTrip(hdr(packet.Legacy, packet.CreateRoom, 77), 0); again.RoomID != first.RoomID {
			t.Fatalf("retry answered room %d, first %d", again.RoomID, first.RoomID)
		}
	}
	if n := rooms.creates.Load(); n != 1 {
		t.Errorf("%d creates ran", n)
	}
	// Every copy that reached the lobby while the first ran was dropped
	// as pending: the lobby's own counts, whatever the kernel delivered.
	s := l.Stats()
	if s.Retries != 10 || s.Granted["create"] != 1 || s.Requests["create"] > 5+10 ||
		s.Drops["retry_pending"] != s.Requests["create"]-1-10 {
		t.Errorf("stats %+v, want one CREATE run, the copies sent while it ran pending and the 10 later retries replayed", s)
	}
}

func TestJoinRetryRunsOnce(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 5, MaxPlayers: 4, Port: 30005})
	_, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	for range 3 {
		if m := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 9), 5); m.Type != packet.JoinSuccess {
			t.Fatalf("JOIN answered %+v", m)
		}
	}
	if n := rooms.joins.Load(); n != 1 {
		t.Errorf("%d joins ran", n)
	}
}

// oneCreateSlotTaken starts a lobby with one CREATE slot, whose rooms
// start only once rooms.gate is closed, and sends it two CREATEs (seq 1 and
// 2, the second dropped as busy) and a LIST (seq 3, answered).
func oneCreateSlotTaken(t *testing.T) (*Lobby, *client, *memRooms) {
	t.Helper()
	cfg := testConfig()
	cfg.MaxCreates = 1
	cfg.CreateBurst = 10
	rooms := newMemRooms(t, 8)
	rooms.gate = make(chan struct{})
	l, addr := start(t, cfg, rooms)
	c := dial(t, "127.0.0.1", addr)
	c.send(hdr(packet.Compact, packet.CreateRoom, 1), 0)
	c.send(hdr(packet.Compact, packet.CreateRoom, 2), 0) // no slot left
	c.roundTrip(hdr(packet.Compact, packet.ListRooms, 3), 0)
	return l, c, rooms
}

func TestCreateBusyAndDraining(t *testing.T) {
	l, c, rooms := oneCreateSlotTaken(t)
	l.Drain()
	c.send(hdr(packet.Compact, packet.CreateRoom, 4), 0)
	c.roundTrip(hdr(packet.Compact, packet.ListRooms, 5), 0)
	close(rooms.gate)
	if m, ok := c.recv(5 * time.Second); !ok || m.Seq != 1 {
		t.Fatalf("first CREATE answered %+v %v", m, ok)
	}
	c.expectNothing()
	if s := l.Stats(); s.Drops["create_busy"] != 1 || s.Drops["draining"] != 1 {
		t.Errorf("drops %v", s.Drops)
	}
}

// A CREATE's slot comes back once it is answered, and so does the one a
// CREATE dropped as busy tried: with one slot, CREATEs one after another
// are all answered, each sent again until it is, as clients do (the slot
// is given back just after the answer is sent).
func TestCreateSlotsComeBack(t *testing.T) {
	_, c, rooms := oneCreateSlotTaken(t)
	close(rooms.gate)
	if m, ok := c.recv(5 * time.Second); !ok || m.Seq != 1 || m.Type != packet.RoomCreated {
		t.Fatalf("first CREATE answered %+v %v", m, ok)
	}
	for seq := uint16(4); seq < 7; seq++ {
		m, ok := packet.Message{}, false
		for try := 0; !ok && try < 50; try++ {
			c.send(hdr(packet.Compact, packet.CreateRoom, seq), 0)
			m, ok = c.recv(100 * time.Millisecond)
		}
		if !ok || m.Seq != seq || m.Type != packet.RoomCreated {
			t.Fatalf("CREATE %d after the first was answered: %+v, %v", seq, m, ok)
		}
	}
}

// A frozen lobby (handing over to its new process) answers LIST and
// drops CREATE and JOIN, counted, without running them; thawed (the
// handover failed), it answers their retries.
func TestFreezeDropsCreateAndJoinUntilThaw(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 50, MaxPlayers: 4, Port: 30050})
	l, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	l.Freeze()
	c.send(hdr(packet.Compact, packet.CreateRoom, 1), 0)
	c.send(hdr(packet.Compact, packet.JoinRoom, 2), 50)
	if m := c.roundTrip(hdr(packet.Compact, packet.ListRooms, 3), 0); m.Type != packet.RoomList {
		t.Fatalf("LIST of a frozen lobby answered %+v", m)
	}
	c.expectNothing()
	if s := l.Stats(); s.Drops["handover"] != 2 || rooms.creates.Load() != 0 || rooms.joins.Load() != 0 {
		t.Fatalf("frozen: drops %v, %d creates and %d joins run", s.Drops, rooms.creates.Load(), rooms.joins.Load())
	}
	l.Thaw()
	if m := c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 1), 0); m.Type != packet.RoomCreated {
		t.Fatalf("CREATE retried after the thaw answered %+v", m)
	}
	if m := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 2), 50); m.Type != packet.JoinSuccess {
		t.Fatalf("JOIN retried after the thaw answered %+v", m)
	}
}

// A CREATE or JOIN the lobby took just before it froze, refused by the
// table the handover holds, is dropped as one that came after: the
// client's retry goes to the new process, which answers it. Here the
// handover thaws again, so this lobby answers the retry itself.
func TestFreezeDropsTheRequestsItCaughtRunning(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 50, MaxPlayers: 4, Port: 30050})
	rooms.gate, rooms.joinGate = make(chan struct{}), make(chan struct{})
	l, addr := start(t, testConfig(), rooms)
	c := dial(t, "127.0.0.1", addr)
	c.send(hdr(packet.Compact, packet.CreateRoom, 1), 0)
	c.send(hdr(packet.Compact, packet.JoinRoom, 2), 50)
	statsOnce(t, l, func(Stats) bool { return rooms.creates.Load() == 1 && rooms.joins.Load() == 1 })
	l.Freeze()
	rooms.Hold(true) // as the supervisor's Release does
	close(rooms.gate)
	close(rooms.joinGate)
	c.expectNothing()
	if s := statsOnce(t, l, func(s Stats) bool { return s.Drops["handover"] == 2 }); s.Drops["handover"] != 2 || len(s.Failures) != 0 {
		t.Fatalf("drops %v, failures %v: want both requests dropped, none refused", s.Drops, s.Failures)
	}
	l.Thaw()
	rooms.Hold(false)
	if m := c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 1), 0); m.Type != packet.RoomCreated {
		t.Fatalf("CREATE retried after the thaw answered %+v", m)
	}
	if m := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 2), 50); m.Type != packet.JoinSuccess {
		t.Fatalf("JOIN retried after the thaw answered %+v", m)
	}
}

// A JOIN run on the read loop (the table never waits) that the handover
// catches, the lobby freezing and the table held as it runs, is dropped
// and forgotten as one that came after: its retry, once the handover
// thaws, runs anew and is answered.
func TestFreezeDropsAJoinCaughtOnTheReadLoop(t *testing.T) {
	rooms := newMemRooms(t, 8)
	rooms.add(room.Room{ID: 50, MaxPlayers: 4, Port: 30050})
	l, addr := start(t, testConfig(), rooms)
	if !l.inlineJoin {
		t.Fatal("the JOIN would not run on the read loop")
	}
	freeze := func() {
		l.Freeze()
		rooms.Hold(true)
	}
	rooms.beforeJoin.Store(&freeze)
	c := dial(t, "127.0.0.1", addr)
	c.send(hdr(packet.Compact, packet.JoinRoom, 2), 50)
	c.expectNothing()
	if s := l.Stats(); s.Drops["handover"] != 1 || len(s.Failures) != 0 || rooms.joins.Load() != 1 {
		t.Fatalf("drops %v, failures %v, %d joins run: want the JOIN dropped, not refused", s.Drops, s.Failures, rooms.joins.Load())
	}
	rooms.beforeJoin.Store(nil)
	l.Thaw()
	rooms.Hold(false)
	if m := c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 2), 50); m.Type != packet.JoinSuccess {
		t.Fatalf("JOIN retried after the thaw answered %+v", m)
	}
	if n := rooms.joins.Load(); n != 2 {
		t.Errorf("%d joins run, want the retry run anew", n)
	}
}

func TestCreateFailureIsJoinFailed(t *testing.T) {
	l, addr := start(t, testConfig(), newMemRooms(t, 0))
	c := dial(t, "127.0.0.1", addr)
	if m := c.roundTrip(hdr(packet.Compact, packet.CreateRoom, 1), 0); m.Type != packet.JoinFailed {
		t.Fatalf("CREATE past capacity answered %+v", m)
	}
	if s := l.Stats(); s.Failures["capacity"] != 1 {
		t.Errorf("failures %v", s.Failures)
	}
}

func TestReflectionGuard(t *testing.T) {
	rooms := newMemRooms(t, 8)
	for i := range 4000 { // a ~52 KB list
		rooms.add(room.Room{ID: uint32(i + 1), MaxPlayers: 4})
	}
	cfg := testConfig()
	cfg.ReflectionLimit = 1024 // the bucket still holds one full datagram
	l, addr := start(t, cfg, rooms)
	a := dial(t, "127.0.0.1", addr)
	a.roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)
	// Another address of the same /24: the network's budget is spent.
	b := dial(t, "127.0.0.3", addr)
	b.send(hdr(packet.Compact, packet.ListRooms, 2), 0)
	b.expectNothing()
	// Another /24 has its own budget.
	dial(t, "127.0.1.1", addr).roundTrip(hdr(packet.Compact, packet.ListRooms, 3), 0)
	if s := l.Stats(); s.Drops["reflection"] != 1 || s.Prefixes != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestSourcesTableBounded(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSources = 8
	l, addr := start(t, cfg, newMemRooms(t, 8))
	for i := range 20 {
		c := dial(t, netip.AddrFrom4([4]byte{127, 0, 2, byte(i + 1)}).String(), addr)
		c.roundTrip(hdr(packet.Compact, packet.ListRooms, uint16(i)), 0)
	}
	if s := l.Stats(); s.Sources != 8 {
		t.Errorf("%d sources tracked, bound is 8", s.Sources)
	}
}

func TestRetriesBounded(t *testing.T) {
	r := newRetries(2, maxAnswer, time.Minute)
	now := time.Now()
	k := func(seq uint16) retryKey {
		return newRetryKey(netip.AddrPort{}, packet.Header{Type: packet.JoinRoom, Seq: seq}, 5)
	}
	for seq := range uint16(3) {
		if _, found := r.begin(k(seq), now, nil); found {
			t.Fatalf("seq %d found before it ran", seq)
		}
		if reply, found := r.begin(k(seq), now, nil); !found || len(reply) != 0 {
			t.Fatalf("seq %d running: %v %v", seq, reply, found)
		}
		r.finish(k(seq), []byte{byte(seq), 9})
	}
	if _, found := r.begin(k(0), now, nil); found {
		t.Error("the oldest entry survived the bound")
	}
	if reply, found := r.begin(k(2), now, []byte{7}); !found || !slices.Equal(reply, []byte{7, 2, 9}) {
		t.Errorf("newest entry: %v %v", reply, found)
	}
	if _, found := r.begin(k(2), now.Add(2*time.Minute), nil); found {
		t.Error("an entry outlived the window")
	}
	if r.len() > 2 {
		t.Errorf("%d entries, bound is 2", r.len())
	}
	r.abandon(k(2)) // running again since it expired: forgotten
	if _, found := r.begin(k(2), now.Add(2*time.Minute), nil); found {
		t.Error("an abandoned entry was found")
	}
}

// A retry is the same request again: another room, framing or type with
// the same sequence is a new request, not a retry.
func TestRetryKeyIsTheWholeRequest(t *testing.T) {
	from := netip.MustParseAddrPort("192.0.2.1:9")
	join := packet.Header{Type: packet.JoinRoom, Seq: 0}
	base := newRetryKey(from, join, 5)
	for name, other := range map[string]retryKey{
		"another room":     newRetryKey(from, join, 6),
		"another sequence": newRetryKey(from, packet.Header{Type: packet.JoinRoom, Seq: 1}, 5),
		"another framing":  newRetryKey(from, packet.Header{Framing: packet.Legacy, Type: packet.JoinRoom}, 5),
		"a create":         newRetryKey(from, packet.Header{Type: packet.CreateRoom}, 5),
		"another port":     newRetryKey(netip.MustParseAddrPort("192.0.2.1:10"), join, 5),
	} {
		if other == base {
			t.Errorf("%s has the same retry key", name)
		}
	}
	if newRetryKey(from, join, 5) != base {
		t.Error("the same request has another key")
	}
}

// An entry that ran again after it expired lives in a new slot of the
// ring; recycling its old slot must not forget it.
func TestRetriesRecycledSlotKeepsNewerEntry(t *testing.T) {
	r := newRetries(2, maxAnswer, time.Minute)
	now := time.Now()
	k := func(seq uint16) retryKey {
		return newRetryKey(netip.MustParseAddrPort("192.0.2.1:9"), packet.Header{Type: packet.JoinRoom, Seq: seq}, 5)
	}
	r.begin(k(1), now, nil)
	r.finish(k(1), []byte{1})
	later := now.Add(2 * time.Minute)
	if _, found := r.begin(k(1), later, nil); found {
		t.Fatal("expired entry found")
	}
	r.finish(k(1), []byte{2})
	r.begin(k(2), later, nil) // takes k(1)'s first slot
	if reply, found := r.begin(k(1), later, nil); !found || !slices.Equal(reply, []byte{2}) {
		t.Errorf("entry after recycling its old slot: %v %v", reply, found)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 0
	if _, err := cfg.build(newMemRooms(t, 1)); err == nil {
		t.Error("rate 0 accepted")
	}
	_, addr := start(t, testConfig(), newMemRooms(t, 1))
	cfg = testConfig()
	cfg.Listen = append(cfg.Listen, addr) // taken: the whole New fails
	if _, err := cfg.build(newMemRooms(t, 1)); err == nil {
		t.Error("a port in use was bound")
	}
}

func TestServesEveryListenAddress(t *testing.T) {
	cfg := testConfig()
	cfg.Listen = append(cfg.Listen, netip.MustParseAddrPort("[::1]:0"))
	l, _ := start(t, cfg, newMemRooms(t, 1))
	addrs := l.Addrs()
	if len(addrs) != 2 || !addrs[1].Addr().Is6() {
		t.Fatalf("bound %v", addrs)
	}
	dial(t, "127.0.0.1", addrs[0]).roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)
	dial(t, "::1", addrs[1]).roundTrip(hdr(packet.Legacy, packet.ListRooms, 2), 0)
}

// "0.0.0.0:P" is IPv4 only and "[::]:P" IPv6 only, so the documented
// ["0.0.0.0:7777", "[::]:7777"] binds both on one port.
func TestWildcardsBindOneFamilyEach(t *testing.T) {
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(probe.LocalAddr().(*net.UDPAddr).Port)
	probe.Close()
	cfg := testConfig()
	cfg.Listen = []netip.AddrPort{
		netip.AddrPortFrom(netip.IPv4Unspecified(), port),
		netip.AddrPortFrom(netip.IPv6Unspecified(), port),
	}
	l, _ := start(t, cfg, newMemRooms(t, 1))
	if a := l.Addrs(); len(a) != 2 || !a[0].Addr().Is4() || a[1].Addr() != netip.IPv6Unspecified() {
		t.Fatalf("bound %v", a)
	}
	dial(t, "127.0.0.1", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)).
		roundTrip(hdr(packet.Compact, packet.ListRooms, 1), 0)
	dial(t, "::1", netip.AddrPortFrom(netip.IPv6Loopback(), port)).
		roundTrip(hdr(packet.Compact, packet.ListRooms, 2), 0)
}

// A supervisor that does not answer JOIN stalls neither LIST nor the read
// loop: JOINs queue, then are dropped and counted.
func TestSlowJoinDoesNotBlockTheLoop(t *testing.T) {
	rooms := newMemRooms(t, 1)
	rooms.add(room.Room{ID: 1, MaxPlayers: 4})
	rooms.joinGate = make(chan struct{})
	cfg := testConfig()
	cfg.Rate, cfg.Burst = 1e6, 1e6
	l, addr := start(t, cfg, rooms)
	defer close(rooms.joinGate) // before the lobby's cleanup waits for its workers
	c := dial(t, "127.0.0.1", addr)
	// JOINs go in rounds the socket buffer holds, each followed by a LIST
	// that must be answered while every worker is stuck, until the lobby
	// says a JOIN found the queue full. A LIST answered proves that the
	// JOINs before it were handled: the loop reads its socket in order.
	const round, maxRounds = 256, 40
	seq := uint16(0)
	for r := 0; l.Stats().Drops["join_busy"] == 0; r++ {
		if r == maxRounds {
			t.Fatalf("no JOIN dropped after %d sent to %d stuck workers and a queue of %d: %+v",
				int(seq), joinWorkers, joinQueue, l.Stats())
		}
		for range round {
			c.send(hdr(packet.Compact, packet.JoinRoom, seq), 1)
			seq++
		}
		c.roundTrip(hdr(packet.Compact, packet.ListRooms, uint16(60000+r)), 0)
	}
	// A JOIN is dropped only when the queue is full, and nothing leaves
	// it while the workers are stuck: between the queue and the queue
	// plus one JOIN in each worker were taken.
	s := l.Stats()
	taken := s.Requests["join"] - s.Drops["join_busy"]
	if taken < joinQueue || taken > joinWorkers+joinQueue {
		t.Errorf("%d JOINs taken (requests %v, drops %v), want %d to %d", taken, s.Requests, s.Drops, joinQueue, joinWorkers+joinQueue)
	}
	if n := rooms.joins.Load(); n > joinWorkers {
		t.Errorf("%d Joins running, more than the %d workers", n, joinWorkers)
	}
}

// Drops and refusals reach the log as one summary line per interval,
// not one line per datagram.
func TestDropsReportedPeriodically(t *testing.T) {
	var logs logtest.Buffer
	cfg := testConfig()
	cfg.ReportInterval = 250 * time.Millisecond
	cfg.log = zerolog.New(&logs)
	cfg.Filter = false // the loop counts the garbage, not the kernel
	l, addr := start(t, cfg, newMemRooms(t, 1))
	c := dial(t, "127.0.0.1", addr)
	for range 100 {
		c.sendRaw([]byte{1, 2, 3})
	}
	c.roundTrip(hdr(packet.Compact, packet.JoinRoom, 1), 7) // refused: no room 7
	// The JOIN's reply follows the garbage on the socket, so the lobby's
	// counts are final now; the reports must add up to them. They may
	// straddle intervals: add up the report lines.
	s := l.Stats()
	want := report{short: float64(s.Drops["short"]), noRoom: float64(s.Failures["no_room"])}
	if want.short < 2 || want.noRoom != 1 {
		t.Fatalf("the lobby counted %v short datagrams of 100 and %v JOINs of a missing room", want.short, want.noRoom)
	}
	var got report
	for deadline := time.Now().Add(30 * time.Second); got.short != want.short || got.noRoom != want.noRoom; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("reports add up to %v short, %v no_room, want %v and %v:\n%s", got.short, got.noRoom, want.short, want.noRoom, logs.String())
		}
		got = sumReports(logs.String())
	}
	// One line summed several datagrams. A line per datagram never does;
	// and a summary could fail to only if sending 100 datagrams in a row
	// took 99 intervals, some 25 s, beyond the deadline above.
	if got.mostShort < 2 {
		t.Errorf("%v report lines, none with more than one drop: a line per datagram?\n%s", got.lines, logs.String())
	}
}

// report is what the "lobby drops" lines of a log say, added up.
type report struct {
	short, noRoom, lines float64
	mostShort            float64 // the most short drops one line reported
}

func sumReports(log string) report {
	var r report
	for _, line := range strings.Split(log, "\n") {
		var m struct {
			Message string
			Dropped map[string]float64
			Refused map[string]float64
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Message == "lobby drops" {
			r.short += m.Dropped["short"]
			r.noRoom += m.Refused["no_room"]
			r.mostShort = max(r.mostShort, m.Dropped["short"])
			r.lines++
		}
	}
	return r
}

// The retry cache answers as a model of its rule would, through any
// sequence of begins, finishes, abandons, runs and expiries: each endpoint's
// latest perEndpoint requests are remembered for the window, whatever the
// other endpoints do, and a request abandoned while it runs is forgotten.
func TestRetriesMatchAModel(t *testing.T) {
	const endpoints, window = 5, 100
	r := newRetries(endpoints*perEndpoint, maxAnswer, window)
	type entry struct {
		key   retryKey
		at    int
		reply []byte
		live  bool
	}
	// The model: each endpoint's latest requests, in the order they began.
	latest := make([][]*entry, endpoints)
	lookup := func(n int, key retryKey) *entry {
		for _, e := range latest[n] {
			if e.live && e.key == key {
				return e
			}
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := 0
	for step := range 200000 {
		now += rng.IntN(3)
		n := rng.IntN(endpoints)
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(n)}), 9)
		key := newRetryKey(from, packet.Header{Type: packet.JoinRoom, Seq: uint16(rng.IntN(8))}, 5)
		at := r.epoch.Add(time.Duration(now))
		e := lookup(n, key)
		op := rng.IntN(6)
		switch op {
		case 0, 1, 4, 5:
			var got []byte
			var found bool
			reply := []byte{byte(step), 2}
			if op < 4 {
				got, found = r.begin(key, at, nil)
			} else { // run: begin and, keeping the reply (4) or not (5), finish or abandon
				got, found = r.run(key, at, nil, func(b []byte) ([]byte, bool) { return append(b, reply...), op == 4 })
			}
			if e != nil && now-e.at < window {
				if !found || !slices.Equal(got, e.reply) {
					t.Fatalf("step %d: begin found %v %v, want %v", step, found, got, e.reply)
				}
				continue
			}
			if found {
				t.Fatalf("step %d: begin found an expired or unknown key", step)
			}
			if e != nil {
				e.live = false
			}
			e = &entry{key: key, at: now, live: op != 5}
			if op == 4 {
				e.reply = reply
			}
			latest[n] = append(latest[n], e)
			if len(latest[n]) > perEndpoint {
				latest[n] = latest[n][1:]
			}
		case 2:
			reply := []byte{byte(step), 1}
			r.finish(key, reply)
			if e != nil && e.reply == nil {
				e.reply = reply
			}
		case 3:
			r.abandon(key)
			if e != nil && e.reply == nil {
				e.live = false
			}
		}
		live := 0
		for _, es := range latest {
			for _, e := range es {
				if e.live {
					live++
				}
			}
		}
		if r.len() != live {
			t.Fatalf("step %d: %d answers held, want %d", step, r.len(), live)
		}
	}
}

// A flood of requests from new endpoints, more than the cache holds,
// pushes out only endpoints that went quiet: a client retrying meanwhile
// keeps its answer, and the cache stays within its bound.
func TestRetriesKeepActiveEndpointsThroughAFlood(t *testing.T) {
	const size = 8 * perEndpoint
	r := newRetries(size, maxAnswer, time.Minute)
	now := time.Now()
	client := newRetryKey(netip.MustParseAddrPort("192.0.2.1:9"), packet.Header{Type: packet.CreateRoom, Seq: 7}, 0)
	for i := range 1000 {
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 9)
		k := newRetryKey(from, packet.Header{Type: packet.JoinRoom}, 5)
		r.begin(k, now, nil)
		r.finish(k, []byte{4})
		switch {
		case i == 10: // the client comes once the flood fills the cache
			r.begin(client, now, nil)
			r.finish(client, []byte{1, 2, 3})
		case i > 10 && i%2 == 1:
			if got, found := r.begin(client, now, nil); !found || !slices.Equal(got, []byte{1, 2, 3}) {
				t.Fatalf("after %d flooding endpoints the client's retry found %v %v", i+1, got, found)
			}
		}
		if n := r.len(); n > size {
			t.Fatalf("%d answers held, bound is %d", n, size)
		}
	}
}

package lobby

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// extClient speaks the extension to a test lobby, echoing the retry
// token it was handed.
type extClient struct {
	*client
	token []byte
	seq   uint16
}

// ask sends m (padded while no token is known) and returns the answer,
// fetching a token first when the lobby asks for one.
func (c *extClient) ask(m ext.Message) ext.Message {
	c.t.Helper()
	for range 2 {
		c.seq++
		m.Seq, m.Token, m.Pad = c.seq, c.token, 0
		if c.token == nil {
			m.Pad = 64
		}
		c.sendRaw(encodeExt(c.t, m))
		r, ok := c.recvExt(5 * time.Second) // a password's hash takes a while on a loaded machine
		if !ok {
			c.t.Fatalf("no answer to %s", ext.Name(m.Type))
		}
		if r.Type != ext.Retry {
			return r
		}
		c.token = r.Token
	}
	c.t.Fatalf("%s: the lobby asks for a token again", ext.Name(m.Type))
	return ext.Message{}
}

func (c *extClient) recvExt(wait time.Duration) (ext.Message, bool) {
	c.t.Helper()
	b, err := udptest.Read(c.conn, c.to, wait)
	if err != nil {
		c.t.Fatal(err)
	}
	if b == nil {
		return ext.Message{}, false
	}
	m, err := ext.Parse(b)
	if err != nil {
		c.t.Fatalf("reply %x: %v", b, err)
	}
	if len(b) > ext.MaxDatagram {
		c.t.Fatalf("a reply of %d bytes", len(b))
	}
	return m, true
}

func encodeExt(t testing.TB, m ext.Message) []byte {
	t.Helper()
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newExtClient(t *testing.T, to netip.AddrPort) *extClient {
	return &extClient{client: dial(t, "127.0.0.1", to)}
}

// TestExtAddressValidation: a source the lobby has not validated gets
// nothing for a request shorter than the retry it would draw, an
// EXT_RETRY no longer than its request otherwise, and its answer once it
// echoes the token; a token that is not its own is refused again.
func TestExtAddressValidation(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	l, addr := start(t, testConfig(), rooms)
	c := newExtClient(t, addr)
	short := encodeExt(t, ext.Message{Header: packet.Header{Type: ext.List, Seq: 1}})
	c.sendRaw(short)
	if m, ok := c.recvExt(200 * time.Millisecond); ok {
		t.Fatalf("an unpadded request of %d bytes from a new source got %s", len(short), ext.Name(m.Type))
	}
	if l.Stats().Drops["ext_unpadded"] != 1 {
		t.Errorf("drops: %v", l.Stats().Drops)
	}
	padded := encodeExt(t, ext.Message{Header: packet.Header{Type: ext.Create, Seq: 2}, Pad: 40})
	c.sendRaw(padded)
	r, ok := c.recvExt(time.Second)
	if !ok || r.Type != ext.Retry || len(encodeExt(t, r)) > len(padded) {
		t.Fatalf("a padded CREATE of %d bytes from a new source got %+v", len(padded), r)
	}
	if rooms.Stats().Created != 0 {
		t.Fatal("a room was started for a source that did not show it receives")
	}
	forged := append([]byte(nil), r.Token...)
	forged[len(forged)-1] ^= 1
	c.sendRaw(encodeExt(t, ext.Message{Header: packet.Header{Type: ext.List, Seq: 3}, Token: forged, Pad: 40}))
	if again, _ := c.recvExt(time.Second); again.Type != ext.Retry {
		t.Fatalf("a forged token got %s", ext.Name(again.Type))
	}
	c.sendRaw(encodeExt(t, ext.Message{Header: packet.Header{Type: ext.List, Seq: 4}, Token: r.Token}))
	if page, _ := c.recvExt(time.Second); page.Type != ext.Rooms || page.Seq != 4 {
		t.Fatalf("the token echoed got %+v", page)
	}
}

// TestExtPagesAndFilters: 600 rooms list in pages that each fit one
// datagram, every public room once by its cursor, none private; filters
// pick by mode, map, tag, name prefix, state and free places.
func TestExtPagesAndFilters(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	const n = 600
	for i := range n {
		r := room.Room{MaxPlayers: 4, Players: i % 5 % 4, Name: fmt.Sprintf("room %03d of a fairly long name", i),
			Mode: []string{"ctf", "dm", "race"}[i%3], Map: fmt.Sprintf("map%d", i%7),
			Tags:    room.TagsOf([]room.Tag{{Key: "region", Value: []string{"eu", "us"}[i%2]}, {Key: "n", Value: fmt.Sprint(i)}}),
			Private: i%10 == 9, State: packet.RoomState(i % 4 % 2)}
		rooms.Add(r)
	}
	cfg := testConfig()
	cfg.Rate, cfg.Burst = 1e6, 1e6 // the pages come as fast as the lobby answers
	_, addr := start(t, cfg, rooms)
	c := newExtClient(t, addr)
	list := func(f ext.Filter) []ext.Entry {
		var all []ext.Entry
		cursor := uint32(0)
		for pages := 0; ; pages++ {
			p := c.ask(ext.Message{Header: packet.Header{Type: ext.List}, Cursor: cursor, Filter: f})
			if p.Type != ext.Rooms || pages > n {
				t.Fatalf("page %d: %+v", pages, p)
			}
			all = append(all, p.Entries...)
			if p.Next == 0 {
				return all
			}
			cursor = p.Next
		}
	}
	everyone := list(ext.Filter{})
	seen := map[uint32]bool{}
	for _, e := range everyone {
		if seen[e.ID] {
			t.Fatalf("room %d listed twice", e.ID)
		}
		seen[e.ID] = true
	}
	if want := n - n/10; len(everyone) != want {
		t.Fatalf("listed %d rooms, want the %d public ones", len(everyone), want)
	}
	for _, c := range []struct {
		f     ext.Filter
		match func(ext.Entry) bool
	}{
		{ext.Filter{Mode: "ctf"}, func(e ext.Entry) bool { return e.Mode == "ctf" }},
		{ext.Filter{Map: "map3", Mode: "dm"}, func(e ext.Entry) bool { return e.Map == "map3" && e.Mode == "dm" }},
		{ext.Filter{Tags: []ext.Tag{{Key: "region", Value: "us"}}}, func(e ext.Entry) bool { return e.Tags[0].Value == "us" }},
		{ext.Filter{NamePrefix: "room 01"}, func(e ext.Entry) bool { return e.Name[:7] == "room 01" }},
		{ext.Filter{States: 1 << packet.Countdown}, func(e ext.Entry) bool { return e.State == packet.Countdown }},
		{ext.Filter{MinFree: 3}, func(e ext.Entry) bool { return e.MaxPlayers-e.Players >= 3 }},
	} {
		got := list(c.f)
		want := 0
		for _, e := range everyone {
			if c.match(e) {
				want++
			}
		}
		for _, e := range got {
			if !c.match(e) {
				t.Errorf("filter %+v listed %+v", c.f, e)
			}
		}
		if len(got) != want || want == 0 {
			t.Errorf("filter %+v listed %d rooms, want %d", c.f, len(got), want)
		}
	}
	if p := c.ask(ext.Message{Header: packet.Header{Type: ext.List}, Limit: 3}); len(p.Entries) != 3 || p.Next != p.Entries[2].ID {
		t.Errorf("a page of at most 3: %d rooms, next %d", len(p.Entries), p.Next)
	}
}

// TestExtCreateJoinCodePassword: an extended CREATE gets a seat with a
// code and a token; a private room is joined by its code and not by its
// id, and never listed, by either protocol; a password is wanted, and
// wrong guesses are refused, then throttled.
func TestExtCreateJoinCodePassword(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	l, addr := start(t, testConfig(), rooms)
	creator := newExtClient(t, addr)
	seat := creator.ask(ext.Message{Header: packet.Header{Type: ext.Create}, Private: true, Password: "pw",
		Meta: ext.Meta{Name: "Ann's", Mode: "ctf"}})
	if seat.Type != ext.Seat || !ext.ValidCode(seat.Code) || len(seat.SeatToken) != ext.TokenLen || seat.Addr.IsValid() {
		t.Fatalf("create: %+v", seat)
	}
	r, ok := rooms.Room(seat.RoomID)
	if !ok || r.Name != "Ann's" || r.Mode != "ctf" || !r.Private || !r.Password || r.Code != seat.Code {
		t.Fatalf("the room: %+v", r)
	}
	guest := newExtClient(t, addr)
	refused := func(m ext.Message, code room.Code) {
		t.Helper()
		if a := guest.ask(m); a.Type != ext.Refused || room.Code(a.Reason) != code {
			t.Fatalf("%+v: %s %v, want refused %v", m, ext.Name(a.Type), room.Code(a.Reason), code)
		}
	}
	join := ext.Message{Header: packet.Header{Type: ext.Join}}
	byID, byCode := join, join
	byID.RoomID, byID.Password = seat.RoomID, "pw"
	byCode.Code = seat.Code
	refused(byID, room.CodeNotFound)
	refused(byCode, room.CodeWrongPassword)
	byCode.Password = "wrong"
	refused(byCode, room.CodeWrongPassword)
	byCode.Password = "pw"
	if a := guest.ask(byCode); a.Type != ext.Seat || a.RoomID != seat.RoomID {
		t.Fatalf("join by code with the password: %+v", a)
	}
	if p := guest.ask(ext.Message{Header: packet.Header{Type: ext.List}}); len(p.Entries) != 0 {
		t.Errorf("a private room is listed: %+v", p.Entries)
	}
	seed := dial(t, "127.0.0.1", addr)
	seed.send(packet.Header{Type: packet.ListRooms}, 0)
	if m, _ := seed.recv(time.Second); m.Type != packet.RoomList || len(m.Rooms) != 0 {
		t.Errorf("a seed LIST shows %+v", m)
	}
	// The source has made one wrong guess; its burst of guesses, and a
	// refill while the test runs, are all it gets.
	byCode.Password = "guess"
	wrong := 1
	for ; ; wrong++ {
		a := guest.ask(byCode)
		if room.Code(a.Reason) == room.CodeRateLimited {
			break
		}
		if room.Code(a.Reason) != room.CodeWrongPassword || wrong > guessBurst+1 {
			t.Fatalf("wrong guess %d: %s %v", wrong+1, ext.Name(a.Type), room.Code(a.Reason))
		}
	}
	if l.Stats().Failures["rate_limited"] == 0 {
		t.Errorf("failures: %v", l.Stats().Failures)
	}
}

// TestExtMalformedDropped: extension datagrams that do not parse, and
// a room's message sent to the lobby, get nothing and are counted: by
// the read loop without the socket filter; with it, by the kernel, but
// for the wrong version, which only a parse tells.
func TestExtMalformedDropped(t *testing.T) {
	for _, filter := range []bool{false, true} {
		t.Run(fmt.Sprintf("filter=%v", filter), func(t *testing.T) { testExtMalformedDropped(t, filter) })
	}
}

func testExtMalformedDropped(t *testing.T, filter bool) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	cfg := testConfig()
	cfg.Filter = filter
	l, addr := start(t, cfg, rooms)
	c := newExtClient(t, addr)
	bad := encodeExt(t, ext.Message{Header: packet.Header{Type: ext.List}, Pad: 64})
	bad[8] = 7 // the version
	bad = packet.AppendFrame(nil, packet.Header{Type: ext.List}, packet.ClientToServer, bad[8:len(bad)-4])
	present := encodeExt(t, ext.Message{Header: packet.Header{Type: ext.Present}, SeatToken: make([]byte, ext.TokenLen)})
	for _, b := range [][]byte{bad, present, {0x01, 0x80, 0, 0}} {
		c.sendRaw(b)
	}
	if m, ok := c.recvExt(300 * time.Millisecond); ok {
		t.Fatalf("got %+v", m)
	}
	s := l.Stats()
	d := s.Drops
	switch {
	case !filter && (d["ext_version"] != 1 || d["ext_type"] != 1 || d["short"] != 1 || s.KernelDrops != 0):
		t.Errorf("drops: %v, kernel drops %d", d, s.KernelDrops)
	case filter && (d["ext_version"] != 1 || len(d) != 1 || s.KernelDrops != 2):
		t.Errorf("filtered: drops %v, kernel drops %d; want the version and 2", d, s.KernelDrops)
	}
}

// An extension CREATE or JOIN sent again, same sequence, is a retry: it
// gets the answer the first got, from the cache, and runs no second time.
func TestExtRetryAnsweredFromTheCache(t *testing.T) {
	rooms := roomtabletest.New(t, roomtable.Config{})
	l, addr := start(t, testConfig(), rooms)
	c := newExtClient(t, addr)
	c.ask(ext.Message{Header: packet.Header{Type: ext.List}}) // its retry token
	twice := func(m ext.Message) ext.Message {
		t.Helper()
		c.seq++
		m.Seq, m.Token = c.seq, c.token
		var first ext.Message
		for i := range 2 {
			c.sendRaw(encodeExt(t, m))
			r, ok := c.recvExt(5 * time.Second)
			if !ok || r.Type != ext.Seat {
				t.Fatalf("%s, sent %d times: %+v (%v)", ext.Name(m.Type), i+1, r, ok)
			}
			if i == 0 {
				first = r
			} else if r.RoomID != first.RoomID || string(r.SeatToken) != string(first.SeatToken) {
				t.Fatalf("%s retried: %+v, first %+v", ext.Name(m.Type), r, first)
			}
		}
		return first
	}
	seat := twice(ext.Message{Header: packet.Header{Type: ext.Create}})
	if n := rooms.Stats().Created; n != 1 {
		t.Fatalf("%d rooms created for a CREATE and its retry", n)
	}
	guest := newExtClient(t, addr)
	guest.ask(ext.Message{Header: packet.Header{Type: ext.List}})
	c = guest
	before := rooms.Stats().SeatsHeld
	twice(ext.Message{Header: packet.Header{Type: ext.Join}, RoomID: seat.RoomID})
	if held := rooms.Stats().SeatsHeld - before; held != 1 {
		t.Errorf("%d seats held for a JOIN and its retry, want 1", held)
	}
	if n := l.Stats().Retries; n != 2 {
		t.Errorf("%d retries answered from the cache, want 2", n)
	}
}

// An extension JOIN that the handover catches as it runs, the lobby
// freezing and the table held, is dropped and forgotten, as a seed JOIN
// is, wherever it runs: on its read loop, on a worker (a table whose JOIN
// may wait), or on the password checker. Its retry, once the handover
// thaws, runs anew and gets its seat.
func TestFreezeDropsAnExtensionJoinItCaught(t *testing.T) {
	for _, tc := range []struct {
		name, password string
		worker         bool // the table's JOIN may wait: none runs inline
	}{
		{"read loop", "", false},
		{"worker", "", true},
		{"password", "pw", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rooms := newMemRooms(t, 8)
			if tc.worker {
				rooms.joinGate = make(chan struct{})
				close(rooms.joinGate)
			}
			l, addr := start(t, testConfig(), rooms)
			if l.inlineJoin == tc.worker {
				t.Fatalf("JOINs inline: %v", l.inlineJoin)
			}
			seat := newExtClient(t, addr).ask(ext.Message{Header: packet.Header{Type: ext.Create}, Password: tc.password})
			if seat.Type != ext.Seat {
				t.Fatalf("create: %+v", seat)
			}
			c := newExtClient(t, addr)
			c.ask(ext.Message{Header: packet.Header{Type: ext.List}}) // its retry token
			freeze := func() {
				l.Freeze()
				rooms.Hold(true)
			}
			rooms.beforeJoin.Store(&freeze)
			c.seq++
			join := encodeExt(t, ext.Message{Header: packet.Header{Type: ext.Join, Seq: c.seq}, Token: c.token,
				RoomID: seat.RoomID, Password: tc.password})
			c.sendRaw(join)
			if m, ok := c.recvExt(300 * time.Millisecond); ok {
				t.Fatalf("the JOIN caught by the handover was answered %+v", m)
			}
			s := statsOnce(t, l, func(s Stats) bool { return s.Drops["handover"] == 1 })
			if s.Drops["handover"] != 1 || len(s.Failures) != 0 || rooms.joins.Load() != 1 {
				t.Fatalf("drops %v, failures %v, %d joins run: want the JOIN dropped, not refused",
					s.Drops, s.Failures, rooms.joins.Load())
			}
			rooms.beforeJoin.Store(nil)
			l.Thaw()
			rooms.Hold(false)
			c.sendRaw(join) // its retry
			if m, ok := c.recvExt(5 * time.Second); !ok || m.Type != ext.Seat || m.RoomID != seat.RoomID {
				t.Fatalf("the JOIN retried after the thaw: %+v (%v)", m, ok)
			}
			if n := rooms.joins.Load(); n != 2 {
				t.Errorf("%d joins run, want the retry run anew", n)
			}
		})
	}
}

// An extension CREATE or QUICK that the handover catches as it runs, on
// its worker, the lobby freezing and the table held, is dropped and
// forgotten as a JOIN is: no room is made for it, and its retry, once the
// handover thaws, runs anew and is answered.
func TestFreezeDropsAnExtensionCreateItCaught(t *testing.T) {
	for _, typ := range []packet.Type{ext.Create, ext.Quick} {
		t.Run(ext.Name(typ), func(t *testing.T) {
			rooms := newMemRooms(t, 8)
			l, addr := start(t, testConfig(), rooms)
			c := newExtClient(t, addr)
			c.ask(ext.Message{Header: packet.Header{Type: ext.List}}) // its retry token
			var caught atomic.Int32
			freeze := func() {
				caught.Add(1)
				l.Freeze()
				rooms.Hold(true)
			}
			rooms.beforeCreate.Store(&freeze)
			c.seq++
			req := encodeExt(t, ext.Message{Header: packet.Header{Type: typ, Seq: c.seq}, Token: c.token})
			c.sendRaw(req)
			if m, ok := c.recvExt(300 * time.Millisecond); ok {
				t.Fatalf("the %s caught by the handover was answered %+v", ext.Name(typ), m)
			}
			s := statsOnce(t, l, func(s Stats) bool { return s.Drops["handover"] == 1 })
			if s.Drops["handover"] != 1 || len(s.Failures) != 0 || caught.Load() != 1 {
				t.Fatalf("drops %v, failures %v, %d run: want it dropped, not refused", s.Drops, s.Failures, caught.Load())
			}
			if n := len(rooms.List().Rooms); n != 0 {
				t.Fatalf("%d rooms made for a request dropped", n)
			}
			rooms.beforeCreate.Store(nil)
			l.Thaw()
			rooms.Hold(false)
			c.sendRaw(req) // its retry
			m, ok := c.recvExt(5 * time.Second)
			if !ok || m.Type != ext.Seat {
				t.Fatalf("the %s retried after the thaw: %+v (%v)", ext.Name(typ), m, ok)
			}
			if got := rooms.List().Rooms; len(got) != 1 || got[0].ID != m.RoomID {
				t.Errorf("rooms %+v after the retry seated in %d: want that one alone", got, m.RoomID)
			}
		})
	}
}

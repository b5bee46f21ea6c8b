package lobby

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// A batch reads what is queued on its socket, hands each datagram to the
// handler with reply space, and sends the replies it queued in one go;
// with the batched I/O (package mmsg) and with the standard library's, over
// IPv4 and IPv6. A reply the handler does not queue is not sent.
func TestBatchReadsAnswersAndFlushes(t *testing.T) {
	for _, batched := range []bool{true, false} {
		for _, ip := range []string{"127.0.0.1", "::1"} {
			srv, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := dial(t, ip, srv.LocalAddr().(*net.UDPAddr).AddrPort())
			sent := [][]byte{[]byte("one"), []byte("drop"), []byte("three")}
			for _, b := range sent {
				c.sendRaw(b)
			}
			q := newBatch(srv, batched, 1) // raw where a processor is left
			srv.SetReadDeadline(time.Now().Add(5 * time.Second))
			var got [][]byte
			var flushed []string
			for len(got) < len(sent) {
				n, err := q.read()
				if err != nil {
					t.Fatalf("batched %v, %s: read: %v", batched, ip, err)
				}
				q.answer(n, func(b []byte, from netip.AddrPort, _ arrival, out []byte) []byte {
					got = append(got, slices.Clone(b))
					out = append(append(out, "re:"...), b...)
					if !bytes.Equal(b, []byte("drop")) {
						q.WriteFrom(out, from, netip.Addr{})
					}
					return out
				})
				q.flush(func(b []byte, ok bool) {
					if !ok {
						t.Errorf("batched %v, %s: %q not sent", batched, ip, b)
					}
					flushed = append(flushed, string(b))
				})
			}
			if !slices.EqualFunc(got, sent, bytes.Equal) {
				t.Errorf("batched %v, %s: read %q, sent %q", batched, ip, got, sent)
			}
			if !slices.Equal(flushed, []string{"re:one", "re:three"}) {
				t.Errorf("batched %v, %s: flushed %q", batched, ip, flushed)
			}
			for _, want := range flushed {
				b, err := udptest.Read(c.conn, c.to, 5*time.Second)
				if err != nil || string(b) != want {
					t.Errorf("batched %v, %s: client got %q, %v; want %q", batched, ip, b, err, want)
				}
			}
		}
	}
}

// JOIN runs on the read loop only for a Rooms that says its Join never
// waits; any other gets the worker pool.
func TestInlineJoinOnlyWhenRoomsNeverWaits(t *testing.T) {
	gated := newMemRooms(t, 1)
	gated.joinGate = make(chan struct{})
	for _, c := range []struct {
		name   string
		rooms  room.Table
		inline bool
	}{
		{"never waits", newMemRooms(t, 1), true},
		{"says it may wait", gated, false},
		{"says nothing", struct{ room.Table }{newMemRooms(t, 1)}, false},
	} {
		l := testConfig().newLobby(c.rooms)
		if l.inlineJoin != c.inline || (l.jobs == nil) != c.inline {
			t.Errorf("%s: inline %v, queue %v", c.name, l.inlineJoin, l.jobs != nil)
		}
		l.stop()
	}
}

// A reply that cannot be sent (to port 0, which the kernel refuses) is
// reported unsent, and the replies queued after it still go out, batched
// or not.
func TestFlushGoesOnPastAFailedReply(t *testing.T) {
	for _, batched := range []bool{true, false} {
		srv := udptest.Listen(t, "127.0.0.1")
		c := dial(t, "127.0.0.1", srv.LocalAddr().(*net.UDPAddr).AddrPort())
		to := c.conn.LocalAddr().(*net.UDPAddr).AddrPort()
		q := newBatch(srv, batched, 1) // raw where a processor is left
		for _, r := range []struct {
			b  string
			to netip.AddrPort
		}{{"one", to}, {"lost", netip.MustParseAddrPort("127.0.0.1:0")}, {"three", to}, {"four", to}} {
			q.WriteFrom([]byte(r.b), r.to, netip.Addr{})
		}
		var sent, unsent []string
		q.flush(func(b []byte, ok bool) {
			if ok {
				sent = append(sent, string(b))
			} else {
				unsent = append(unsent, string(b))
			}
		})
		if !slices.Equal(sent, []string{"one", "three", "four"}) || !slices.Equal(unsent, []string{"lost"}) {
			t.Errorf("batched %v: sent %q, unsent %q", batched, sent, unsent)
		}
		for _, want := range []string{"one", "three", "four"} {
			b, err := udptest.Read(c.conn, c.to, 5*time.Second)
			if err != nil || string(b) != want {
				t.Errorf("batched %v: client got %q, %v; want %q", batched, b, err, want)
			}
		}
	}
}

// settle asks the reply budget once per network for the replies a batch
// owes it; when they do not fit together, each asks alone, and the ones
// that do not fit are dropped, the rest keeping their order. Replies
// queued already charged are left alone, and no reply buffer is lost.
func TestSettleChargesANetworkOnce(t *testing.T) {
	q := newBatch(udptest.Listen(t, "127.0.0.1"), false, 0)
	budget := map[netip.Prefix]int{ // bytes left per network
		netip.MustParsePrefix("192.0.2.0/24"):    100,
		netip.MustParsePrefix("198.51.100.0/24"): 5,
		netip.MustParsePrefix("2001:db8::/56"):   3,
	}
	var asked []string
	allow := func(to netip.Addr, n int) bool {
		p := limit.PrefixOf(to)
		asked = append(asked, fmt.Sprint(p, " ", n))
		if budget[p] < n {
			return false
		}
		budget[p] -= n
		return true
	}
	for _, r := range []struct {
		b, to string
		owed  bool
	}{
		{"aaaa", "192.0.2.1:1", true},
		{"bb", "198.51.100.7:1", true},
		{"cccc", "198.51.100.8:1", true},
		{"charged", "198.51.100.9:1", false},
		{"ddd", "192.0.2.200:2", true},
		{"e", "198.51.100.7:1", true},
		{"ffff", "[2001:db8::1]:1", true},
	} {
		to := netip.MustParseAddrPort(r.to)
		if r.owed {
			q.owe([]byte(r.b), to, netip.Addr{})
		} else {
			q.WriteFrom([]byte(r.b), to, netip.Addr{})
		}
	}
	buffers := map[*byte]bool{}
	for _, r := range q.out {
		buffers[unsafe.SliceData(r.oob[:cap(r.oob)])] = true
	}
	dropped := 0
	q.settle(allow, func() { dropped++ })
	var kept []string
	for _, r := range q.out[:q.queued] {
		kept = append(kept, string(r.b))
	}
	// 198.51.100.0/24 owes 7 bytes, more than its 5: alone, bb (2) and
	// e (1) fit, cccc (4) no longer does.
	want := []string{"aaaa", "bb", "charged", "ddd", "e"}
	if !slices.Equal(kept, want) || dropped != 2 {
		t.Errorf("kept %q, %d dropped; want %q, 2 dropped", kept, dropped, want)
	}
	wantAsked := []string{"192.0.2.0/24 7", "198.51.100.0/24 7", "198.51.100.0/24 2", "198.51.100.0/24 4",
		"198.51.100.0/24 1", "2001:db8::/56 4"}
	if !slices.Equal(asked, wantAsked) {
		t.Errorf("asked %q, want %q", asked, wantAsked)
	}
	for _, r := range q.out {
		delete(buffers, unsafe.SliceData(r.oob[:cap(r.oob)]))
		if r.owed {
			t.Errorf("%q still owed after settle", r.b)
		}
	}
	if len(buffers) != 0 {
		t.Errorf("%d reply buffers lost", len(buffers))
	}
}

// A run of a source's requests in a batch asks at once, the first of it
// for all, and each takes its verdict in order from the one answer; a
// datagram of the source that is not alike ends its run, and the next
// alike one starts another. A source whose answer says each asks alone,
// and one with a single request, ask alone. A new batch asks anew.
func TestBatchAdmitsARunAtOnce(t *testing.T) {
	a, b, c := netip.MustParseAddrPort("192.0.2.1:1"), netip.MustParseAddrPort("192.0.2.2:1"), netip.MustParseAddrPort("192.0.2.3:1")
	answers := map[string]limit.Admission{
		"192.0.2.1 2": {Served: 1, Verdict: limit.Served, Refused: limit.NewlyLimited},
		"192.0.2.1 3": {Served: 0, Refused: limit.Limited},
		"192.0.2.1 4": {Served: 4, Verdict: limit.ServedUnverified},
	}
	q := newBatch(udptest.Listen(t, "127.0.0.1"), false, 0)
	type dg struct {
		from netip.AddrPort
		b    string
	}
	var asked []string
	batch := func(ds ...dg) []string {
		for i, d := range ds {
			s := &q.in[i]
			s.n, s.from = copy(s.buf, d.b), d.from
		}
		var got []string
		q.answer(len(ds), func(d []byte, from netip.AddrPort, _ arrival, out []byte) []byte {
			ip := from.Addr()
			alone := func() limit.Verdict {
				asked = append(asked, fmt.Sprint(ip, " alone"))
				return limit.Unverified // a verdict the answers never give
			}
			if string(d) != "alike" { // asks alone, without the batch
				got = append(got, fmt.Sprint(alone()))
				return out
			}
			v := q.admitted(ip, func(b []byte) bool { return string(b) == "alike" }, func(n int) (limit.Admission, bool) {
				k := fmt.Sprint(ip, " ", n)
				asked = append(asked, k)
				ans, ok := answers[k]
				return ans, ok
			}, alone)
			got = append(got, fmt.Sprint(v))
			return out
		})
		return got
	}
	got := batch(dg{a, "alike"}, dg{b, "alike"}, dg{a, "alike"}, dg{a, "other"}, dg{a, "alike"},
		dg{c, "alike"}, dg{b, "alike"}, dg{a, "alike"}, dg{a, "alike"})
	v := func(vs ...limit.Verdict) (s []string) {
		for _, v := range vs {
			s = append(s, fmt.Sprint(v))
		}
		return s
	}
	want := v(limit.Served, limit.Unverified, limit.NewlyLimited, limit.Unverified, limit.Limited,
		limit.Unverified, limit.Unverified, limit.Limited, limit.Limited)
	wantAsked := []string{"192.0.2.1 2", "192.0.2.2 2", "192.0.2.2 alone", "192.0.2.1 alone", "192.0.2.1 3",
		"192.0.2.3 alone", "192.0.2.2 alone"}
	if !slices.Equal(got, want) || !slices.Equal(asked, wantAsked) {
		t.Errorf("verdicts %v, asked %q;\nwant %v, %q", got, asked, want, wantAsked)
	}
	asked = nil
	got = batch(dg{a, "alike"}, dg{a, "alike"}, dg{b, "other"}, dg{a, "alike"}, dg{a, "alike"})
	if want := v(limit.ServedUnverified, limit.ServedUnverified, limit.Unverified, limit.ServedUnverified, limit.ServedUnverified); !slices.Equal(got, want) ||
		!slices.Equal(asked, []string{"192.0.2.1 4", "192.0.2.2 alone"}) {
		t.Errorf("next batch: verdicts %v, asked %q", got, asked)
	}
}

// A lobby answers a batch as it answers the same datagrams one batch
// each, read at the same time: the same replies, in the same order, and
// the same counts, for a source past its burst whose requests come in
// runs broken by a datagram that is no request, for others, and for new
// sources whose first request is a CREATE; and so
// while it drains (CREATE is dropped) or is frozen for a handover (all
// but LIST are), when the requests dropped before the guard must not
// count into a run.
func TestBatchAnswersAsOneByOne(t *testing.T) {
	a, b := netip.MustParseAddrPort("192.0.2.1:1000"), netip.MustParseAddrPort("198.51.100.1:1000")
	d, e := netip.MustParseAddrPort("203.0.113.1:1000"), netip.MustParseAddrPort("203.0.113.2:1000")
	encode := func(typ packet.Type, seq uint16, id uint32) []byte {
		m := packet.Message{Header: hdr(packet.Compact, typ, seq), RoomID: id}
		enc, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	type dg struct {
		from netip.AddrPort
		b    []byte
	}
	datagrams := func() []dg {
		var ds []dg
		for i := range uint16(batchSize - 3) {
			switch {
			case i == 4 || i == 9:
				ds = append(ds, dg{a, []byte("no request")})
			case i%3 == 1:
				ds = append(ds, dg{a, encode(packet.JoinRoom, i, 1)})
			case i%5 == 2:
				ds = append(ds, dg{a, encode(packet.CreateRoom, i, 0)})
			default:
				ds = append(ds, dg{a, encode(packet.ListRooms, i, 0)})
			}
		}
		ds = append(ds, dg{b, encode(packet.ListRooms, 100, 0)}, dg{b, encode(packet.JoinRoom, 101, 1)}, dg{b, encode(packet.ListRooms, 102, 0)})
		// New sources whose first request is a CREATE: unverified, the
		// first takes the one unverified CREATE there is, the second,
		// followed by a LIST, is refused it.
		return append(ds, dg{e, encode(packet.CreateRoom, 200, 0)}, dg{d, encode(packet.CreateRoom, 300, 0)}, dg{d, encode(packet.ListRooms, 301, 0)})
	}
	now := time.Now()
	run := func(ds []dg, mode func(*Lobby), per int) ([]string, Stats) {
		rooms := newMemRooms(t, 1)
		rooms.add(room.Room{ID: 1, Port: 30001, MaxPlayers: 8, State: packet.Waiting})
		cfg := testConfig()
		cfg.Rate, cfg.Burst = 0.001, 6
		cfg.MaxCreates = 0 // a CREATE admitted is dropped as busy, not run later
		cfg.UnverifiedCreateRate, cfg.UnverifiedCreateBurst = 0.001, 1
		l := cfg.newLobby(rooms)
		t.Cleanup(l.stop)
		mode(l)
		q := newBatch(udptest.Listen(t, "127.0.0.1"), false, 0)
		var os offers
		handle := func(d []byte, from netip.AddrPort, at arrival, out []byte) []byte {
			return l.handle(q, discard{}, &os, d, from, at, now, out)
		}
		var replies []string
		for start := 0; start < len(ds); start += per {
			n := min(per, len(ds)-start)
			for i, d := range ds[start : start+n] {
				s := &q.in[i]
				s.n, s.from = copy(s.buf, d.b), d.from
			}
			q.answer(n, handle)
			l.settle(q, now)
			for _, r := range q.out[:q.queued] {
				m, err := packet.Parse(r.b)
				replies = append(replies, fmt.Sprintf("%v %#x seq %d (%v)", r.to, m.Type, m.Seq, err))
			}
			l.flush(q)
		}
		return replies, l.Stats()
	}
	ds := datagrams()
	for _, c := range []struct {
		name    string
		mode    func(*Lobby)
		replies int
	}{
		{"serving", func(*Lobby) {}, 5 + 3 + 1},
		{"draining", (*Lobby).Drain, 6 + 3 + 1},
		{"frozen", (*Lobby).Freeze, 6 + 2 + 1},
	} {
		together, s := run(ds, c.mode, batchSize)
		alone, sAlone := run(ds, c.mode, 1)
		if !slices.Equal(together, alone) {
			t.Errorf("%s: a batch's replies:\n%q\none by one:\n%q", c.name, together, alone)
		}
		if len(together) != c.replies || s.LimitedSources != sAlone.LimitedSources || !maps.Equal(s.Drops, sAlone.Drops) || !maps.Equal(s.Replies, sAlone.Replies) {
			t.Errorf("%s: %d replies, want %d; a batch's counts: limited %d, drops %v, replies %v; one by one: %d, %v, %v",
				c.name, len(together), c.replies, s.LimitedSources, s.Drops, s.Replies, sAlone.LimitedSources, sAlone.Drops, sAlone.Replies)
		}
	}
}

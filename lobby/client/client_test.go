package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/lobby/client/clienttest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// fast keeps tests that wait for lost replies short. Its attempts are
// many, so that an answer slower than the timeout costs one more attempt,
// not the test: the timing is not asserted.
var fast = []client.Option{client.WithTimeout(50 * time.Millisecond), client.WithAttempts(fastAttempts)}

const fastAttempts = 50

func dial(t *testing.T, l *clienttest.Lobby, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(l.Addr.String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var twoRooms = []packet.Room{
	{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: packet.Waiting},
	{ID: 2, Players: 4, MaxPlayers: 4, Port: 30001, State: packet.Playing},
}

func TestList(t *testing.T) {
	l := clienttest.Start(t)
	c := dial(t, l)
	rooms, err := c.List(t.Context())
	if err != nil || len(rooms) != 0 {
		t.Fatalf("List on an empty lobby = %v, %v; want no rooms", rooms, err)
	}
	l.SetRooms(twoRooms...)
	rooms, err = c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rooms, twoRooms) {
		t.Fatalf("List = %+v, want %+v", rooms, twoRooms)
	}
}

func TestCreateAndJoin(t *testing.T) {
	l := clienttest.Start(t)
	c := dial(t, l)
	seat, err := c.Create(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := client.Seat{Room: 1, Port: clienttest.FirstPort, Addr: netip.AddrPortFrom(l.Addr.Addr(), clienttest.FirstPort)}
	if seat != want {
		t.Fatalf("Create = %+v, want %+v", seat, want)
	}
	seat, err = c.Join(t.Context(), 1)
	if err != nil || seat != want {
		t.Fatalf("Join(1) = %+v, %v; want %+v", seat, err, want)
	}
	if got := l.Rooms()[0].Players; got != 2 {
		t.Fatalf("room 1 has %d players after create and join, want 2", got)
	}
}

func TestJoinFailed(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(twoRooms...)
	c := dial(t, l)
	for _, id := range []uint32{2, 42} { // full and playing; unknown
		_, err := c.Join(t.Context(), id)
		if !errors.Is(err, client.ErrJoinFailed) {
			t.Fatalf("Join(%d) error = %v, want ErrJoinFailed", id, err)
		}
		want := fmt.Sprintf("join %s room %d: lobby answered JOIN_FAILED (room unknown, full, or not waiting)", l.Addr, id)
		if err.Error() != want {
			t.Errorf("Join(%d) error = %q, want %q", id, err, want)
		}
	}
}

// TestWhy: after a refused JOIN the room list says what it can of the
// reason: a room not listed, full, or whose match began; a room listed as
// joinable leaves the reason to the lobby's log. The refusal still
// matches ErrJoinFailed.
func TestWhy(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(twoRooms...)
	c := dial(t, l)
	for _, tc := range []struct {
		id   uint32
		want room.Code
		says string
	}{
		{42, room.CodeNotFound, "no such room (or not one you may join by id))"},
		{2, room.CodeStarted, "the match has begun: playing 4/4)"},
	} {
		_, err := c.Join(t.Context(), tc.id)
		err = c.Why(t.Context(), err)
		var r *client.Refusal
		if !errors.As(err, &r) || r.Reason != tc.want || !errors.Is(err, client.ErrJoinFailed) || !strings.HasSuffix(err.Error(), tc.says) {
			t.Errorf("room %d: %v (%+v), want %v and %q", tc.id, err, r, tc.want, tc.says)
		}
	}
	full := packet.Room{ID: 7, State: packet.Waiting, Players: 2, MaxPlayers: 2, Port: 30007}
	open := packet.Room{ID: 8, State: packet.Waiting, Players: 1, MaxPlayers: 2, Port: 30008}
	l.SetRooms(full, open)
	l.FailJoins(true)
	_, err := c.Join(t.Context(), 7)
	if err = c.Why(t.Context(), err); !strings.HasSuffix(err.Error(), "the room is full: waiting 2/2)") {
		t.Errorf("a full room: %v", err)
	}
	_, err = c.Join(t.Context(), 8)
	if err = c.Why(t.Context(), err); !strings.Contains(err.Error(), "room is listed waiting 1/2, so the lobby refused for another reason") {
		t.Errorf("a room listed as joinable: %v", err)
	}
}

func TestCreateFailed(t *testing.T) {
	l := clienttest.Start(t)
	l.FailCreate(true)
	c := dial(t, l)
	_, err := c.Create(t.Context())
	if !errors.Is(err, client.ErrJoinFailed) || !strings.HasPrefix(err.Error(), "create "+l.Addr.String()+": ") {
		t.Fatalf("Create error = %v, want ErrJoinFailed naming %s", err, l.Addr)
	}
}

// requestsSeen returns the requests l has read once there are at least n:
// the lobby reads a request in its own goroutine, possibly after the
// client has given up on it.
func requestsSeen(t *testing.T, l *clienttest.Lobby, n int) []packet.Message {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		reqs := l.Requests()
		if len(reqs) >= n {
			return reqs
		}
		if time.Now().After(deadline) {
			t.Fatalf("lobby saw %d requests, want %d: %+v", len(reqs), n, reqs)
		}
	}
}

// sameSeq checks that the lobby saw at least n copies of one request, and
// no other request.
func sameSeq(t *testing.T, l *clienttest.Lobby, n int, typ packet.Type) []packet.Message {
	t.Helper()
	reqs := requestsSeen(t, l, n)
	for _, r := range reqs {
		if r.Type != typ || r.Seq != reqs[0].Seq {
			t.Fatalf("retries differ: %+v", reqs)
		}
	}
	return reqs
}

// answeredClient is a client of l that the lobby has answered already: its
// CREATE goes out without a LIST first. The lobby's record starts after.
func answeredClient(t *testing.T, l *clienttest.Lobby, opts ...client.Option) *client.Client {
	t.Helper()
	c := dial(t, l, opts...)
	if _, err := c.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.ForgetRequests()
	return c
}

// A client the lobby never answered lists the rooms before its first
// CREATE, which then comes from a sender the lobby saw receive; after an
// answer it does not list again.
func TestFirstCreateListsFirst(t *testing.T) {
	l := clienttest.Start(t)
	c := dial(t, l, fast...)
	for range 2 {
		if _, err := c.Create(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var types []packet.Type
	for _, r := range l.Requests() {
		types = append(types, r.Type)
	}
	if want := []packet.Type{packet.ListRooms, packet.CreateRoom, packet.CreateRoom}; !slices.Equal(types, want) {
		t.Fatalf("requests %v, want %v", types, want)
	}
}

func TestRetriesReuseSequence(t *testing.T) {
	l := clienttest.Start(t)
	c := answeredClient(t, l, fast...)
	l.DropFirst(2)
	seat, err := c.Create(t.Context())
	if err != nil {
		t.Fatalf("Create with two requests lost: %v", err)
	}
	if seat.Room != 1 {
		t.Fatalf("Create = %+v, want room 1", seat)
	}
	sameSeq(t, l, 3, packet.CreateRoom) // the two lost, then at least one answered
}

func TestRetriedCreateMakesOneRoom(t *testing.T) {
	l := clienttest.Start(t)
	c := answeredClient(t, l, fast...)
	l.LoseReplies(2) // the lobby acts at once, the answers get lost
	seat, err := c.Create(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sameSeq(t, l, 3, packet.CreateRoom)
	if rooms := l.Rooms(); len(rooms) != 1 || rooms[0].ID != seat.Room {
		t.Fatalf("lobby rooms after a retried create = %+v, want only room %d", rooms, seat.Room)
	}
}

func TestTimeout(t *testing.T) {
	l := clienttest.Start(t)
	l.Silence(true)
	c := dial(t, l, client.WithTimeout(20*time.Millisecond), client.WithAttempts(2))
	_, err := c.List(t.Context())
	if !errors.Is(err, client.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("List from a silent lobby: %v, want ErrTimeout and DeadlineExceeded", err)
	}
	want := fmt.Sprintf("list %s: timeout: no ROOM_LIST after 2 attempts of 20ms", l.Addr)
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if reqs := sameSeq(t, l, 2, packet.ListRooms); len(reqs) != 2 {
		t.Errorf("lobby saw %d requests after 2 attempts: %+v", len(reqs), reqs)
	}
}

func TestContextEnds(t *testing.T) {
	l := clienttest.Start(t)
	l.Silence(true)
	c := dial(t, l) // default 5 s per attempt: the context ends first

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err := c.Join(ctx, 7)
	if !errors.Is(err, client.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join past the deadline: %v, want ErrTimeout and DeadlineExceeded", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	_, err = c.Create(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrTimeout) {
		t.Fatalf("Create with a canceled context: %v, want Canceled only", err)
	}
}

// A port nobody listens on refuses, and the client says so, naming it.
// The refusal is an ICMP message, which a kernel may not send on a busy
// machine: some kernels count it against one budget for the whole
// machine, loopback included, which other tests sending to closed ports
// can spend for a while. And the port, free a moment before, may have
// been bound since by another test. So a List that timed out, or that met
// a port taken meanwhile, is asked again at another closed port until one
// is refused or a minute has passed; any other outcome fails at once.
func TestRefused(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	for try := 1; ; try++ {
		addr, err := listClosedPort(t)
		if errors.Is(err, client.ErrRefused) {
			if !strings.Contains(err.Error(), addr) {
				t.Fatalf("List from a closed port: %v, want ErrRefused naming %s", err, addr)
			}
			return
		}
		taken := portTaken(addr)
		if !taken && !errors.Is(err, client.ErrTimeout) || time.Now().After(deadline) {
			t.Fatalf("List from a closed port, try %d: %v (port taken since: %v), want ErrRefused", try, err, taken)
		}
		t.Logf("try %d: %v (port taken since: %v)", try, err, taken)
	}
}

// listClosedPort asks for the room list at a port that was free a moment
// before and returns the port's address and the error.
func listClosedPort(t *testing.T) (string, error) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	c, err := client.Dial(addr, fast...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.List(t.Context())
	return addr, err
}

// portTaken reports whether a UDP socket holds addr's port now.
func portTaken(addr string) bool {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	pc.Close()
	return false
}

// attempts records what WithAttemptFunc reports.
type attempts struct {
	mu  sync.Mutex
	got []client.Attempt
}

func (a *attempts) add(at client.Attempt) {
	a.mu.Lock()
	a.got = append(a.got, at)
	a.mu.Unlock()
}

func TestAttemptFuncSeesEveryAttempt(t *testing.T) {
	l := clienttest.Start(t)
	var rec attempts
	c := answeredClient(t, l, append(fast, client.WithAttemptFunc(rec.add))...)
	rec.got = nil  // the LIST's attempt
	l.DropFirst(1) // as a lobby rate-limiting this host would
	if _, err := c.Create(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := client.Attempt{Request: packet.CreateRoom, Lobby: l.Addr, N: 1, Of: fastAttempts,
		Timeout: 50 * time.Millisecond, Awaiting: "ROOM_CREATED or JOIN_FAILED"}
	second := first
	second.N = 2
	if want := []client.Attempt{first, second}; !reflect.DeepEqual(rec.got, want) {
		t.Fatalf("attempts = %+v, want %+v", rec.got, want)
	}
}

func TestAttemptFuncSeesRefusal(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()

	var rec attempts
	c, err := client.Dial(addr, client.WithAttempts(2), client.WithAttemptFunc(rec.add))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Join(t.Context(), 7); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("Join on a closed port: %v, want ErrRefused", err)
	}
	if len(rec.got) != 2 || rec.got[0].Refused || !rec.got[1].Refused ||
		rec.got[1].Request != packet.JoinRoom || rec.got[1].Awaiting != "JOIN_SUCCESS or JOIN_FAILED" {
		t.Fatalf("attempts = %+v, want two JOINs, the second after a refusal", rec.got)
	}
}

func TestLegacyFraming(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(twoRooms...)
	c := dial(t, l, client.WithFraming(packet.Legacy))
	rooms, err := c.List(t.Context())
	if err != nil || !reflect.DeepEqual(rooms, twoRooms) {
		t.Fatalf("legacy List = %+v, %v", rooms, err)
	}
	if _, err := c.Join(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range requestsSeen(t, l, 2) { // the LIST and the JOIN
		if r.Framing != packet.Legacy {
			t.Fatalf("request sent in %v framing, want legacy", r.Framing)
		}
	}
}

func TestCompressedList(t *testing.T) {
	l := clienttest.Start(t)
	// Only the IDs differ, so the list shrinks under LZ4.
	var many []packet.Room
	for i := range 300 {
		many = append(many, packet.Room{ID: uint32(i + 1), MaxPlayers: 8, Port: 30000, State: packet.Waiting})
	}
	l.SetRooms(many...)
	l.Compress(true)

	// The lobby must really compress, or this test proves nothing.
	raw := exchange(t, l.Addr, packet.Message{Header: packet.Header{Type: packet.ListRooms, Seq: 9}})
	f, err := packet.ParseFrame(raw)
	if err != nil || !f.Compressed {
		t.Fatalf("lobby reply: compressed=%v err=%v, want an LZ4 block", f.Compressed, err)
	}

	rooms, err := dial(t, l).List(t.Context())
	if err != nil || !reflect.DeepEqual(rooms, many) {
		t.Fatalf("List of a compressed list: %d rooms, %v; want %d rooms", len(rooms), err, len(many))
	}
}

// exchange sends one request from a fresh socket and returns the reply.
func exchange(t *testing.T, to netip.AddrPort, req packet.Message) []byte {
	t.Helper()
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pkt, err := req.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(pkt); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestStraysIgnored(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(twoRooms...)
	l.SendStrays(true)
	c := dial(t, l)
	rooms, err := c.List(t.Context())
	if err != nil || !reflect.DeepEqual(rooms, twoRooms) {
		t.Fatalf("List among strays = %+v, %v", rooms, err)
	}
	seat, err := c.Create(t.Context())
	if err != nil || seat.Room != 3 {
		t.Fatalf("Create among strays = %+v, %v; want room 3", seat, err)
	}
	seat, err = c.Join(t.Context(), 1)
	if err != nil || seat.Room != 1 || seat.Port != 30000 {
		t.Fatalf("Join(1) among strays = %+v, %v; want room 1 port 30000", seat, err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(twoRooms...)
	c := dial(t, l)
	const n = 40
	seats := make([]client.Seat, n)
	errs := make([]error, 3*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { seats[i], errs[i] = c.Create(t.Context()) })
		wg.Go(func() { _, errs[n+i] = c.List(t.Context()) })
		wg.Go(func() {
			if _, err := c.Join(t.Context(), 2); !errors.Is(err, client.ErrJoinFailed) {
				errs[2*n+i] = fmt.Errorf("join of a full room: %v", err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	for _, s := range seats {
		if seen[s.Room] {
			t.Fatalf("two creates got room %d", s.Room)
		}
		seen[s.Room] = true
	}
	if got := len(l.Rooms()); got != len(twoRooms)+n {
		t.Fatalf("lobby has %d rooms, want %d", got, len(twoRooms)+n)
	}
}

func TestClose(t *testing.T) {
	l := clienttest.Start(t)
	c := dial(t, l)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.List(t.Context()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("List after Close: %v, want ErrClosed", err)
	}
}

func TestDialErrors(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:notaport"} {
		if c, err := client.Dial(addr); err == nil {
			c.Close()
			t.Errorf("Dial(%q) succeeded", addr)
		}
	}
}

func TestDiscover(t *testing.T) {
	a := clienttest.Start(t)
	a.SetRooms(twoRooms[0])
	// A second lobby on another loopback address, same port: what two
	// hosts on one LAN look like.
	b := clienttest.StartAt(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), a.Addr.Port()))
	b.SetRooms(twoRooms[1])
	b.Compress(true)
	silent := clienttest.StartAt(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.3"), a.Addr.Port()))
	silent.Silence(true)

	for _, framing := range []packet.Framing{packet.Compact, packet.Legacy} {
		// Discover listens until the context ends: the lobbies answer at
		// once, and this is long enough for that on a loaded machine.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		lobbies, err := client.Discover(ctx, a.Addr.Port(),
			client.WithBroadcast(a.Addr.Addr(), b.Addr.Addr(), silent.Addr.Addr()), client.WithFraming(framing))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		want := []client.Lobby{
			{Addr: a.Addr, Rooms: []packet.Room{twoRooms[0]}},
			{Addr: b.Addr, Rooms: []packet.Room{twoRooms[1]}},
		}
		if !reflect.DeepEqual(lobbies, want) {
			t.Fatalf("Discover (%v) = %+v, want %+v", framing, lobbies, want)
		}
	}
	requestsSeen(t, silent, 1) // the silent lobby was asked too
}

func TestDiscoverNobody(t *testing.T) {
	l := clienttest.Start(t)
	l.Silence(true)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	lobbies, err := client.Discover(ctx, l.Addr.Port(), client.WithBroadcast(l.Addr.Addr()))
	if err != nil || len(lobbies) != 0 {
		t.Fatalf("Discover with nobody answering = %+v, %v; want nothing, no error", lobbies, err)
	}
}

func BenchmarkList(b *testing.B) {
	l := clienttest.Start(b)
	l.SetRooms(twoRooms...)
	c, err := client.Dial(l.Addr.String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.List(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

func Example() {
	c, err := client.Dial("127.0.0.1:7777")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seat, err := c.Create(ctx)
	if errors.Is(err, client.ErrJoinFailed) {
		fmt.Println("the lobby has no room to spare")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("room %d: send game traffic to %s\n", seat.Room, seat.Addr)
}

func ExampleDiscover() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lobbies, err := client.Discover(ctx, 7777)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lobbies {
		fmt.Printf("%s: %d rooms\n", l.Addr, len(l.Rooms))
	}
}

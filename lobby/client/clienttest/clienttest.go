// Package clienttest runs a small, scriptable lobby on a loopback UDP
// socket, for tests of code built on package client.
//
// It speaks the native protocol as a lobby does, in the framing each
// request came in: it answers LIST with its room table, CREATE with a new
// room, JOIN with a seat or JOIN_FAILED, and it keeps a replay cache, so a
// retried request (same source, same sequence id) gets the first answer
// again and never acts twice. It has no supervisor and starts no game:
// rooms are rows in a table. For tests that need real rooms, run the real
// lobby.
package clienttest

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/foyerlobby/foyer/packet"
)

// FirstPort is the game port of the first room the lobby creates; room n
// gets FirstPort+n-1 unless CreatePort says otherwise. Nothing listens
// there.
const FirstPort = 30000

// Lobby is a scripted lobby on 127.0.0.1. Its methods are safe for
// concurrent use.
type Lobby struct {
	// Addr is where the lobby listens.
	Addr netip.AddrPort

	conn *net.UDPConn
	done chan struct{}

	mu         sync.Mutex
	rooms      []packet.Room
	nextID     uint32
	drop       int
	lose       int
	silent     bool
	compress   bool
	stray      bool
	failCreate bool
	failJoin   bool
	createPort uint16
	copies     map[replayKey]int
	replies    map[replayKey][]byte
	requests   []packet.Message
}

type replayKey struct {
	from netip.AddrPort
	seq  uint16
	typ  packet.Type
}

// Start runs a lobby on 127.0.0.1 on a free port; it stops at the end of
// the test.
func Start(t testing.TB) *Lobby {
	t.Helper()
	return StartAt(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0))
}

// StartAt runs a lobby on addr, which must be a loopback address; port 0
// picks a free one. It stops at the end of the test.
func StartAt(t testing.TB, addr netip.AddrPort) *Lobby {
	t.Helper()
	if !addr.Addr().IsLoopback() {
		t.Fatalf("clienttest: %s is not a loopback address", addr)
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatalf("clienttest: listen %s: %v", addr, err)
	}
	bound := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	l := &Lobby{
		Addr:    netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port()),
		conn:    conn,
		done:    make(chan struct{}),
		nextID:  1,
		copies:  make(map[replayKey]int),
		replies: make(map[replayKey][]byte),
	}
	go l.serve()
	t.Cleanup(func() {
		conn.Close()
		<-l.done
	})
	return l
}

// SetRooms replaces the room table. Rooms created later get IDs above the
// highest one given.
func (l *Lobby) SetRooms(rooms ...packet.Room) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rooms = append([]packet.Room(nil), rooms...)
	for _, r := range rooms {
		l.nextID = max(l.nextID, r.ID+1)
	}
}

// Rooms returns the room table.
func (l *Lobby) Rooms() []packet.Room {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]packet.Room(nil), l.rooms...)
}

// DropFirst makes the lobby ignore the first n copies of every request, as
// a lossy network would.
func (l *Lobby) DropFirst(n int) { l.set(func() { l.drop = n }) }

// LoseReplies makes the lobby act on the first n copies of every request
// it does not drop, but lose its replies, as a lossy network would: the
// client's retries then meet the replay cache.
func (l *Lobby) LoseReplies(n int) { l.set(func() { l.lose = n }) }

// Silence makes the lobby read requests and answer none.
func (l *Lobby) Silence(on bool) { l.set(func() { l.silent = on }) }

// Compress makes the lobby send ROOM_LISTs as LZ4 blocks (when that is
// smaller, as a lobby does).
func (l *Lobby) Compress(on bool) { l.set(func() { l.compress = on }) }

// FailCreate makes the lobby answer CREATE with JOIN_FAILED, as one at its
// room limit does.
func (l *Lobby) FailCreate(on bool) { l.set(func() { l.failCreate = on }) }

// FailJoins makes every JOIN fail (JOIN_FAILED) while on, whatever the
// room, as a lobby does for reasons its list does not show.
func (l *Lobby) FailJoins(on bool) { l.set(func() { l.failJoin = on }) }

// CreatePort gives every room created from now on game port port, where a
// test may run a real room; 0 restores FirstPort+n-1.
func (l *Lobby) CreatePort(port uint16) { l.set(func() { l.createPort = port }) }

// SendStrays makes the lobby send, before each reply, datagrams a client
// must ignore: garbage, the reply with a broken CRC, the reply under
// another sequence id, a reply of the wrong type under the right one, and
// the request itself echoed back.
func (l *Lobby) SendStrays(on bool) { l.set(func() { l.stray = on }) }

func (l *Lobby) set(f func()) {
	l.mu.Lock()
	f()
	l.mu.Unlock()
}

// Requests returns every well-formed request received, copies included, in
// arrival order.
func (l *Lobby) Requests() []packet.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]packet.Message(nil), l.requests...)
}

// ForgetRequests clears the record Requests returns.
func (l *Lobby) ForgetRequests() { l.set(func() { l.requests = nil }) }

func (l *Lobby) serve() {
	defer close(l.done)
	buf := make([]byte, 64<<10)
	for {
		n, from, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		req, err := packet.ParseRequest(buf[:n])
		if err != nil {
			continue
		}
		for _, out := range l.handle(from, req, buf[:n]) {
			l.conn.WriteToUDPAddrPort(out, from)
		}
	}
}

// handle decides what to send back for one request: nothing, or strays
// and then the reply.
func (l *Lobby) handle(from netip.AddrPort, req packet.Message, raw []byte) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, req)
	key := replayKey{from, req.Seq, req.Type}
	l.copies[key]++
	if l.silent || l.copies[key] <= l.drop {
		return nil
	}
	reply, ok := l.replies[key]
	if !ok {
		m := l.answer(req)
		var err error
		if reply, err = m.Append(nil); err != nil {
			panic("clienttest: encode reply: " + err.Error())
		}
		l.replies[key] = reply
	}
	if l.copies[key] <= l.drop+l.lose {
		return nil
	}
	var out [][]byte
	if l.stray {
		out = strays(req, reply, raw)
	}
	return append(out, reply)
}

// answer acts on a request the first time it is seen.
func (l *Lobby) answer(req packet.Message) packet.Message {
	reply := packet.Message{Header: packet.Header{Framing: req.Framing, Seq: req.Seq, Tick: req.Tick, Type: packet.JoinFailed}}
	switch req.Type {
	case packet.ListRooms:
		reply.Type = packet.RoomList
		reply.Compressed = l.compress
		reply.Rooms = append([]packet.Room(nil), l.rooms...)
	case packet.CreateRoom:
		if l.failCreate {
			break
		}
		r := packet.Room{ID: l.nextID, Players: 1, MaxPlayers: 4, Port: FirstPort + uint16(l.nextID-1), State: packet.Waiting}
		if l.createPort != 0 {
			r.Port = l.createPort
		}
		l.nextID++
		l.rooms = append(l.rooms, r)
		reply.Type, reply.RoomID, reply.Port = packet.RoomCreated, r.ID, r.Port
	case packet.JoinRoom:
		if l.failJoin {
			break
		}
		for i := range l.rooms {
			r := &l.rooms[i]
			if r.ID != req.RoomID || r.Players >= r.MaxPlayers || r.State > packet.Countdown {
				continue
			}
			r.Players++
			reply.Type, reply.RoomID, reply.Port = packet.JoinSuccess, r.ID, r.Port
		}
	}
	return reply
}

func strays(req packet.Message, reply, raw []byte) [][]byte {
	badCRC := append([]byte(nil), reply...)
	badCRC[len(badCRC)-1] ^= 0xFF
	otherSeq := append([]byte(nil), reply...)
	packet.SetSeq(otherSeq, req.Seq+1)
	wrongType := packet.Message{Header: packet.Header{Framing: req.Framing, Seq: req.Seq, Type: packet.RoomCreated}, RoomID: 999, Port: 1}
	if req.Type == packet.CreateRoom {
		wrongType = packet.Message{Header: packet.Header{Framing: req.Framing, Seq: req.Seq, Type: packet.RoomList}}
	}
	wrong, err := wrongType.Append(nil)
	if err != nil {
		panic("clienttest: encode stray: " + err.Error())
	}
	out := [][]byte{[]byte("not a lobby packet"), badCRC, otherSeq, wrong, append([]byte(nil), raw...)}
	if req.Type == packet.JoinRoom {
		// A seat in another room under the right sequence id.
		other, err := (&packet.Message{Header: packet.Header{Framing: req.Framing, Seq: req.Seq, Type: packet.JoinSuccess}, RoomID: req.RoomID + 1, Port: 1}).Append(nil)
		if err != nil {
			panic("clienttest: encode stray: " + err.Error())
		}
		out = append(out, other)
	}
	return out
}

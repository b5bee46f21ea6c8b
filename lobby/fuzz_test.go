package lobby

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// sent records what the lobby would have written to the socket.
type sent struct {
	mu  sync.Mutex
	out [][]byte
}

func (s *sent) WriteFrom(b []byte, _ netip.AddrPort, _ netip.Addr) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = append(s.out, append([]byte(nil), b...))
	return len(b), nil
}

// FuzzHandle feeds one datagram to the lobby's handler and checks the
// contract both ways: a datagram packet.Parse refuses, or that is not a
// request, gets no reply and runs nothing; a request gets exactly one
// reply, in its framing, echoing its sequence and tick, of the type that
// answers it. The seed corpus (testdata) holds valid requests of both
// framings, server messages and a truncation.
func FuzzHandle(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		rooms := newMemRooms(t, 4)
		rooms.add(room.Room{ID: 1, MaxPlayers: 4, Port: 30001})
		l := testConfig().newLobby(rooms)
		defer l.stop()
		w := &sent{}
		from := netip.MustParseAddrPort("127.0.0.1:5000")
		l.handle(w, w, &offers{}, b, from, arrival{to: from.Addr()}, time.Now(), nil)
		l.work.Wait() // a CREATE answers from its own goroutine (JOIN inline: the table never waits)
		req, err := packet.Parse(b)
		isRequest := err == nil && requestIndex(req.Type) >= 0
		if !isRequest {
			if len(w.out) != 0 {
				t.Fatalf("%x (%v) answered with %x", b, err, w.out)
			}
			return
		}
		if len(w.out) != 1 {
			t.Fatalf("request %+v answered %d times", req.Header, len(w.out))
		}
		rep, err := packet.Parse(w.out[0])
		if err != nil {
			t.Fatalf("reply %x does not parse: %v", w.out[0], err)
		}
		if rep.Seq != req.Seq || rep.Framing != req.Framing || rep.Tick != req.Tick {
			t.Fatalf("reply %+v does not echo %+v", rep.Header, req.Header)
		}
		want := map[packet.Type][]packet.Type{
			packet.ListRooms:  {packet.RoomList},
			packet.CreateRoom: {packet.RoomCreated},
			packet.JoinRoom:   {packet.JoinSuccess, packet.JoinFailed},
		}[req.Type]
		if rep.Type != want[0] && (len(want) == 1 || rep.Type != want[1]) {
			t.Fatalf("%#x answered with %#x", req.Type, rep.Type)
		}
		if req.Type == packet.JoinRoom && (rep.Type == packet.JoinSuccess) != (req.RoomID == 1) {
			t.Fatalf("JOIN of room %d answered %#x", req.RoomID, rep.Type)
		}
	})
}

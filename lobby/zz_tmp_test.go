package lobby

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

func BenchmarkZZJoin16(b *testing.B) {
	rooms := newMemRooms(b, 1)
	for id := uint32(1); id <= 10; id++ {
		rooms.add(room.Room{ID: id, Port: 30000 + uint16(id), MaxPlayers: 32, State: packet.Waiting})
	}
	cfg := testConfig()
	cfg.Rate, cfg.Burst = math.MaxInt32, math.MaxInt32
	cfg.ReflectionLimit = math.MaxInt32
	l := cfg.newLobby(rooms.Rooms)
	defer l.stop()
	var froms [16]netip.AddrPort
	for i := range froms {
		froms[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, 0, byte(i + 1)}), 40000)
	}
	dgrams := make([][]byte, 1<<12)
	for i := range dgrams {
		m := packet.Message{Header: packet.Header{Type: packet.JoinRoom, Seq: uint16(i)}, RoomID: uint32(i%10 + 1)}
		dgrams[i], _ = m.Append(nil)
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
			continue
		}
		l.settle(q, now)
		l.flush(q)
		now = time.Now()
		for k := range batchSize {
			s := &q.in[k]
			s.n, s.from = copy(s.buf, dgrams[(i+k)&(len(dgrams)-1)]), froms[(i/batchSize*5+k)%16]
		}
		q.answer(batchSize, handle)
	}
}

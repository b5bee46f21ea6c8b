package packet

import (
	"fmt"
	"testing"
)

// benchMessages is one message of every type and ROOM_LIST at 10 and
// MaxRooms rooms.
func benchMessages() []Message {
	return []Message{
		{Header: Header{Type: ListRooms, Seq: 1}},
		{Header: Header{Type: CreateRoom, Seq: 1}},
		{Header: Header{Type: JoinRoom, Seq: 1}, RoomID: 7},
		{Header: Header{Type: RoomCreated, Seq: 1}, RoomID: 7, Port: 30007},
		{Header: Header{Type: JoinSuccess, Seq: 1}, RoomID: 7, Port: 30007},
		{Header: Header{Type: JoinFailed, Seq: 1}},
		{Header: Header{Type: RoomList, Seq: 1}, Rooms: sampleRooms(10)},
		{Header: Header{Type: RoomList, Seq: 1}, Rooms: sampleRooms(MaxRooms)},
	}
}

func benchName(m Message) string {
	if m.Type == RoomList {
		return fmt.Sprintf("%v/rooms=%d", m.Type, len(m.Rooms))
	}
	return m.Type.String()
}

func BenchmarkAppend(b *testing.B) {
	for _, m := range benchMessages() {
		b.Run(benchName(m), func(b *testing.B) {
			buf := make([]byte, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Append(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, m := range benchMessages() {
		b.Run(benchName(m), func(b *testing.B) {
			pkt, err := m.Append(nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompressed measures the LZ4 path both ways for a full list.
func BenchmarkCompressed(b *testing.B) {
	m := Message{Header: Header{Type: RoomList, Compressed: true}, Rooms: sampleRooms(MaxRooms)}
	pkt, err := m.Append(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Append", func(b *testing.B) {
		buf := make([]byte, 0, 1<<16)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Append(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(pkt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSetSeqTick is the lobby's per-reply cost of a cached
// ROOM_LIST.
func BenchmarkSetSeqTick(b *testing.B) {
	for _, n := range []int{10, MaxRooms} {
		b.Run(fmt.Sprintf("rooms=%d", n), func(b *testing.B) {
			m := Message{Header: Header{Framing: Legacy, Type: RoomList}, Rooms: sampleRooms(n)}
			pkt, _ := m.Append(nil)
			b.ReportAllocs()
			var seq uint16
			for b.Loop() {
				seq++
				SetSeqTick(pkt, seq, uint32(seq))
			}
		})
	}
}

// BenchmarkRefuse is the cost of dropping garbage at the edge.
// BenchmarkRefuse is what refusing costs: a bad CRC; a LIST claiming a
// whole list in a small LZ4 block, refused before inflating; the same
// block as a reply, which Parse must inflate and ParseRequest refuses
// unread.
func BenchmarkRefuse(b *testing.B) {
	full := Message{Header: Header{Type: RoomList, Compressed: true}, Rooms: sampleRooms(MaxRooms)}
	reply, _ := full.Append(nil)
	list := fix(append([]byte{byte(ClientToServer), byte(ListRooms)}, reply[2:]...))
	for _, tc := range []struct {
		name  string
		parse func([]byte) (Message, error)
		pkt   []byte
		want  error
	}{
		{"bad-crc", Parse, []byte{1, 0x40, 0, 0, 0, 0, 0, 0, 0xDE, 0xAD, 0xBE, 0xEF}, ErrCRC},
		{"compressed-list", Parse, list, ErrCompression},
		{"compressed-reply/Parse", Parse, reply, nil},
		{"compressed-reply/ParseRequest", ParseRequest, reply, ErrNotRequest},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.parse(tc.pkt); err != tc.want {
					b.Fatal(err)
				}
			}
		})
	}
}

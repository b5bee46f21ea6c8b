package packet_test

import (
	"fmt"

	"github.com/foyerlobby/foyer/packet"
)

// A lobby parses a request, answers in the client's own framing and echoes
// its sequence id.
func Example() {
	req := []byte{0x01, 0x44, 0x00, 0x02, 0x00, 0x04, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0xde, 0xdf, 0x7a, 0xae}
	m, err := packet.Parse(req)
	if err != nil {
		fmt.Println("drop:", packet.Reason(err)) // malformed: no reply at all
		return
	}
	fmt.Println(m.Type, "room", m.RoomID, "seq", m.Seq)

	reply := packet.Message{
		Header: packet.Header{Framing: m.Framing, Type: packet.JoinSuccess, Seq: m.Seq, Tick: m.Tick},
		RoomID: m.RoomID,
		Port:   30000,
	}
	out, err := reply.Append(nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", out)
	// Output:
	// JOIN_ROOM room 1 seq 2
	// 0245000200060006000000017530ad82bd8b
}

// Every way a datagram can be wrong has its own error and counter label.
func ExampleReason() {
	corrupt := []byte{0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xed, 0x83, 0xaa, 0x8f}
	_, err := packet.Parse(corrupt)
	fmt.Println(err, "->", packet.Reason(err))
	// Output: packet: CRC mismatch -> crc
}

// A lobby encodes its room list once and patches the sequence id and tick
// of each reply.
func ExampleSetSeqTick() {
	list := packet.Message{
		Header: packet.Header{Framing: packet.Legacy, Type: packet.RoomList},
		Rooms:  []packet.Room{{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: packet.Waiting}},
	}
	cached, _ := list.Append(nil)
	packet.SetSeqTick(cached, 41, 9000)
	m, _ := packet.Parse(cached)
	fmt.Println(m.Type, "seq", m.Seq, "tick", m.Tick, "room", m.Rooms[0].ID, m.Rooms[0].State)
	// Output: ROOM_LIST seq 41 tick 9000 room 1 waiting
}

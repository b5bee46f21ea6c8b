package game_test

import (
	"fmt"

	"github.com/foyerlobby/foyer/packet/game"
)

func ExampleMessage_Append() {
	ping := game.Message{Type: game.ClientPing, Seq: 3, Token: 0xCAFEBABE}
	b, err := ping.Append(nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", b)
	m, err := game.Parse(b)
	fmt.Println(m.Type, m.Token == ping.Token, err)
	// Output:
	// 0104000300040004cafebabefcb2cf95
	// CLIENT_PING true <nil>
}

// The original game's client pings with an empty payload in the 17-byte
// framing; a room answers with an empty pong that echoes the ping's
// sequence and tick.
func ExampleParse_legacy() {
	ping, err := game.Parse([]byte("\xa3\x5f\xc8\x1d\x01\x01\x04\x00\x02\x00\x00\x00\x07\x00\x00\x00\x00\xb8\x68\xe5\xfd"))
	if err != nil {
		panic(err)
	}
	pong := game.Message{Framing: ping.Framing, Type: game.ServerPong, Seq: ping.Seq, Tick: ping.Tick}
	b, _ := pong.Append(nil)
	fmt.Println(ping.Framing, ping.Type, ping.Seq, ping.Tick)
	fmt.Printf("%x\n", b)
	// Output:
	// legacy CLIENT_PING 2 7
	// a35fc81d01021300020000000700000000483be645
}

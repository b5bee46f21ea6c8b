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

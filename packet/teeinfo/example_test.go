package teeinfo_test

import (
	"fmt"

	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// A game socket sets info requests apart by their first bytes and answers
// each in its own form.
func Example() {
	datagram := teeinfo.Request{Extended: true, ExtraToken: 0x0102, Token: 3}.Append(nil)
	if !teeinfo.IsRequest(datagram) {
		return // one of the game's own packets
	}
	req, err := teeinfo.ParseRequest(datagram)
	if err != nil {
		return // malformed: no answer
	}
	info := teeinfo.Info{
		Token: req.ReplyToken(), Version: "0.6.4", Name: "Room 7", Map: "arena", GameType: "DM",
		NumPlayers: 1, MaxPlayers: 8, NumClients: 1, MaxClients: 8,
		Players: []teeinfo.Player{{Name: "tee", Country: -1, IsPlayer: true}},
	}
	pkts, err := info.AppendExtended(nil)
	if err != nil {
		return
	}
	rep, _ := teeinfo.ParseReply(pkts[0])
	fmt.Println(len(pkts), rep.Kind, rep.Info.Token, rep.Info.Players[0].Name)
	// Output: 1 iext 66051 tee
}

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// teeServer is a foreign game server for the exec driver: it knows nothing
// of Foyer and answers Teeworlds info requests on 127.0.0.1:port, listing
// as many clients as it was last told. A datagram "players N" sets N and
// is answered "ok"; the long names make a few clients span several
// extended reply datagrams.
func teeServer(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testroom tee PORT MAX")
		return 2
	}
	port, err1 := strconv.ParseUint(args[0], 10, 16)
	maxClients, err2 := strconv.Atoi(args[1])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("tee server listening on", conn.LocalAddr())
	in := teeinfo.Info{Version: "0.6.4", Name: "tee", Map: "dm1", GameType: "DM", MaxPlayers: maxClients, MaxClients: maxClients}
	buf := make([]byte, 2048)
	var pkts [][]byte
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return 1
		}
		if req, err := teeinfo.ParseRequest(buf[:n]); err == nil {
			in.Token = req.ReplyToken()
			if !req.Extended {
				conn.WriteToUDPAddrPort(in.AppendVanilla(nil), from)
				continue
			}
			pkts, _ = in.AppendExtended(pkts[:0])
			for _, p := range pkts {
				conn.WriteToUDPAddrPort(p, from)
			}
			continue
		}
		if arg, ok := strings.CutPrefix(string(buf[:n]), "players "); ok {
			k, err := strconv.Atoi(arg)
			if err != nil || k < 0 || k > teeinfo.MaxPlayers {
				continue
			}
			in.Players = in.Players[:0]
			for i := range k {
				in.Players = append(in.Players, teeinfo.Player{
					Name: fmt.Sprintf("player %d %s", i, strings.Repeat("x", 200)), Clan: strings.Repeat("c", 200),
					Country: -1, IsPlayer: true,
				})
			}
			in.NumPlayers, in.NumClients = k, k
			conn.WriteToUDPAddrPort([]byte("ok"), from)
		}
	}
}

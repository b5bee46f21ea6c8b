// Package teeinfotest asks Teeworlds servers for their info, for tests
// that check who a server answers.
package teeinfotest

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// Answers reports whether the Teeworlds server at to answers an extended
// info request sent from c, asking tries times and waiting wait for each
// answer.
func Answers(t testing.TB, c *net.UDPConn, to netip.AddrPort, tries int, wait time.Duration) bool {
	t.Helper()
	buf := make([]byte, 2048)
	for i := range tries {
		req := teeinfo.Request{Extended: true, ExtraToken: 0x4242, Token: uint8(i)}
		if _, err := c.WriteToUDPAddrPort(req.Append(nil), to); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(wait))
		for {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			if rep, err := teeinfo.ParseReply(buf[:n]); err == nil && rep.Info.Token == req.ReplyToken() {
				return true
			}
		}
	}
	return false
}

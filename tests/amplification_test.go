package tests

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// amplification is one responder's answer to a never-seen source.
type amplification struct {
	responder    string
	in, out, pkt int // request bytes, reply bytes, reply datagrams
}

func (a amplification) factor() float64 { return float64(a.out) / float64(a.in) }

// probe sends req to to from a socket on ip, an address the lobby has
// never seen, and collects what comes back within wait.
func probe(t *testing.T, ip string, to netip.AddrPort, req []byte, wait time.Duration) amplification {
	t.Helper()
	c := udptest.Listen(t, ip)
	udptest.Send(t, c, to, req)
	a := amplification{in: len(req)}
	for {
		b, err := udptest.Read(c, to, wait)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return a
		}
		a.out += len(b)
		a.pkt++
		wait = 200 * time.Millisecond // the rest of a reply follows at once
	}
}

// Nothing an attacker registers grows a reply sent to a source that has
// not shown it receives. With the room table grown by a thousand GG2
// servers that passed their checks (registered from forged sources at a
// port that answers) and hundreds let in over UDP, every UDP responder
// answers a never-seen source as before: the GunZ locator within 3x its
// request, native LIST and JOIN as before, GG2 registrations with nothing.
// A room's own port answers with one datagram of what the room holds. A
// source that has shown it receives (a TCP exchange) is told of the
// registered servers. The test logs each responder's bytes out per byte
// in.
func TestAmplificationToNeverSeenSources(t *testing.T) {
	requiretest.RawSocket(t) // forged registrations
	gunzPort := freeUDPPort(t)
	f := gg2Start(t, fmt.Sprintf("legacy_listen = \"127.0.0.1:0\"\nudp_transport = true\n[gunz]\nenabled = true\nlisten = \"127.0.0.1:%d\"", gunzPort))
	legacyAddr := gg2LegacyAddr(t, f.logs.String)
	gunzAddr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(gunzPort))
	gunzReq := gunzHex(t, "64 00 0b 00 73 00 05 00 41 9c 00")

	fresh := 0
	never := func() string { fresh++; return fmt.Sprintf("127.99.%d.%d", fresh/200, 1+fresh%200) }
	type request struct {
		name string
		to   netip.AddrPort
		req  []byte
	}
	measure := func(state string, reqs []request) []amplification {
		var out []amplification
		for _, m := range reqs {
			a := probe(t, never(), m.to, m.req, time.Second)
			a.responder = m.name
			out = append(out, a)
			t.Logf("%s, %s: %d bytes in, %d out in %d datagram(s): %.2fx", state, a.responder, a.in, a.out, a.pkt, a.factor())
		}
		return out
	}
	lobbyReqs := []request{
		{"native LIST", f.lobby, encode(compact, listRooms, 1, 0, nil)},
		{"native LIST, original framing", f.lobby, encode(legacy, listRooms, 1, 0, nil)},
		{"native JOIN, no such room", f.lobby, encode(compact, joinRoom, 1, 0, joinPayload(1))},
		{"GunZ locator", gunzAddr, gunzReq},
		{"GG2 registration", f.gg2, encodeRegistration(t, gg2Registration(t, gg2.Counted, gg2.TCP, 9, "x", 8, 0))},
		{"GG2 unregister", f.gg2, gg2.Unregister{}.Append(nil)},
		{"GG2 legacy registration", legacyAddr, legacyDatagram([]byte{1}, 9, "x [0/8]")},
	}
	before := measure("no rooms", lobbyReqs)

	// Grow the table: a thousand TCP servers, from forged sources of 125
	// networks (8 each, their networks' check budget), at a port that
	// answers on every loopback address; and UDP ones, listed unchecked.
	open, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go func() {
		for {
			conn, err := open.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	openPort := uint16(open.Addr().(*net.TCPAddr).Port)
	big := gg2Registration(t, gg2.Counted, gg2.TCP, openPort, strings.Repeat("FREE SKINS ", 20), 64, 64)
	forge(t, f.gg2, encodeRegistration(t, big), 1000, 125, 400, "a thousand servers listed",
		func() bool { return f.metrics(t)["foyer_gg2_registered"] >= 1000 })
	udp := gg2Registration(t, gg2.Counted, gg2.UDP, 27015, strings.Repeat("FREE SKINS ", 20), 64, 64)
	forge(t, f.gg2, encodeRegistration(t, udp), 500, 100, 400, "UDP servers listed",
		func() bool { return f.metrics(t)["foyer_gg2_registered"] >= 1400 })
	after := measure("1,400 servers registered", lobbyReqs)
	for i, a := range after {
		switch b := before[i]; {
		case a.pkt > 1:
			t.Errorf("%s: %d datagrams to a never-seen source", a.responder, a.pkt)
		case a.out != b.out:
			t.Errorf("%s: %d bytes before the registrations, %d after", a.responder, b.out, a.out)
		case strings.HasPrefix(a.responder, "GG2") && a.out != 0:
			t.Errorf("%s is answered", a.responder)
		case a.responder == "GunZ locator" && a.factor() > 3:
			t.Errorf("GunZ: %.2fx", a.factor())
		}
	}

	// A room of the host's own: the lists grow by one entry, and its port
	// answers a never-seen source with one datagram. The game's
	// CLIENT_HELLO goes last: the room lets its sender in.
	c := newClient(t, "127.0.0.1", f.lobby)
	_, roomPort := c.request(compact, createRoom, 1, nil).roomPort(t)
	roomAddr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), roomPort)
	hello, err := (&game.Message{Framing: packet.Compact, Type: game.ClientHello, Seq: 1}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	own := measure("one room of the host's own", append(lobbyReqs[:4:4],
		request{"room port: Teeworlds info", roomAddr, teeinfo.Request{Token: 7}.Append(nil)},
		request{"room port: Teeworlds extended info", roomAddr, teeinfo.Request{Extended: true, Token: 7}.Append(nil)},
		request{"room port: game CLIENT_HELLO", roomAddr, hello}))
	for _, a := range own {
		switch {
		case a.responder == "room port: game CLIENT_HELLO":
			// The room's door: no seat, no answer at all.
			if a.pkt != 0 {
				t.Errorf("%s without a seat: %d bytes in %d datagrams, want none", a.responder, a.out, a.pkt)
			}
		case a.pkt != 1 || a.out > teeinfo.MaxDatagram:
			t.Errorf("%s: %d bytes in %d datagrams", a.responder, a.out, a.pkt)
		}
	}
	if own[0].out != before[0].out+11 || own[3].out != before[3].out+15 {
		t.Errorf("one own room grows native LIST by %d bytes and GunZ by %d, want 11 and 15",
			own[0].out-before[0].out, own[3].out-before[3].out)
	}

	// A source that showed it receives, by a TCP exchange, is told of the
	// registered servers; the unchecked ones stay out.
	ip := never()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := d.DialContext(context.Background(), "tcp", f.gg2.String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// The listener counts the handshake once it accepts the connection,
	// a moment after the dial returns: ask until it has.
	want := 23 + 15*(1000+1)
	var a amplification
	for deadline := time.Now().Add(10 * time.Second); ; {
		if a = probe(t, ip, gunzAddr, gunzReq, 5*time.Second); a.out >= want || time.Now().After(deadline) {
			break
		}
	}
	if a.out < want || a.out >= 23+15*(1400+1) {
		t.Errorf("a receiver's GunZ reply is %d bytes, want the checked servers and the own room (%d bytes)", a.out, want)
	}
	t.Logf("a source that showed it receives: GunZ reply %d bytes (%.0fx)", a.out, a.factor())
}

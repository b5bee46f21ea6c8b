package tests

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gunz"
)

// gunzSeedRequest is the locator request of the protocol's own
// description: command 40001, serial 0.
const gunzSeedRequest = "64 00 0b 00 73 00 05 00 41 9c 00"

func gunzHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gunzRecv waits up to wait for one datagram on c; nil if none came.
func gunzRecv(t testing.TB, c *net.UDPConn, wait time.Duration) []byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := c.Read(buf)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// The seed's request is answered with a checksummed response listing the
// room table: each room's address and port, max and current players
// (seats held included, as in the native list), type match, status online
// while a seat is free. Garbage gets nothing.
func TestGunzLocatorAnswersTheSeedRequest(t *testing.T) {
	port := freeUDPPort(t)
	s := startServer(t, "", fmt.Sprintf("\n[gunz]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", port))
	c := newClient(t, "127.0.0.1", s.lobby)
	openID, openPort := c.request(compact, createRoom, 1, nil).roomPort(t)
	fullID, fullPort := c.request(compact, createRoom, 2, nil).roomPort(t)
	for i := range 3 { // with the creator's seat, the room's 4 seats are held
		j := newClient(t, fmt.Sprintf("127.0.0.%d", 10+i), s.lobby)
		if r := j.request(compact, joinRoom, uint16(10+i), joinPayload(fullID)); r.typ != joinSuccess {
			t.Fatalf("JOIN %d answered %#x", i, r.typ)
		}
	}

	u, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	seed := gunzHex(t, gunzSeedRequest)
	corrupt := slices.Clone(seed)
	corrupt[4] ^= 1 // checksum
	otherCommand := slices.Clone(seed)
	otherCommand[8] ^= 2 // 40003, checksum not fixed up
	for name, b := range map[string][]byte{
		"empty": {}, "truncated": seed[:10], "bad checksum": corrupt, "other command": otherCommand,
		"trailing byte": append(slices.Clone(seed), 0), "text": []byte("GET / HTTP/1.0\r\n\r\n"),
	} {
		if _, err := u.Write(b); err != nil {
			t.Fatal(err)
		}
		if got := gunzRecv(t, u, quiet); got != nil {
			t.Errorf("%s answered with %x", name, got)
		}
	}

	if _, err := u.Write(seed); err != nil {
		t.Fatal(err)
	}
	b := gunzRecv(t, u, 10*time.Second)
	if b == nil {
		t.Fatalf("no answer to the seed request:\n%s", s.logs)
	}
	resp, err := gunz.ParseResponse(b)
	if err != nil {
		t.Fatalf("response %x: %v", b, err)
	}
	if resp.Serial != 0 || len(resp.Servers) != 2 {
		t.Fatalf("response %+v, want serial 0 and both rooms", resp)
	}
	byPort := map[uint32]gunz.Server{}
	for _, srv := range resp.Servers {
		byPort[srv.Port] = srv
	}
	// Players count the seats held, as in every listing: the creator's in
	// the open room, all four in the full one.
	want := map[uint16]struct {
		players uint16
		status  gunz.Status
	}{openPort: {1, gunz.Online}, fullPort: {4, gunz.Offline}}
	for port, w := range want {
		srv, ok := byPort[uint32(port)]
		if !ok || srv.Addr != netip.MustParseAddr("127.0.0.1") || srv.MaxPlayers != 4 || srv.Players != w.players ||
			srv.Type != gunz.Match || srv.Status != w.status || srv.ID == 0 {
			t.Errorf("room at port %d (ids %d, %d) listed as %+v, want %d players, status %d", port, openID, fullID, srv, w.players, w.status)
		}
	}
}

// foyer serve gives a source one allowance across its edges: [lobby]'s
// burst of 4, spent on two GunZ queries and two native LISTs, leaves
// nothing for a fifth request on either edge, while another source is
// served.
func TestGunzSharesTheNativeEdgesSourceBudget(t *testing.T) {
	port := freeUDPPort(t)
	s := startServer(t, "rate = 0.001\nburst = 4", fmt.Sprintf("\n[gunz]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", port))
	gunzAddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)))
	// 127.0.0.2 and .3: the server's readiness probe spent 127.0.0.1's.
	u, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, gunzAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	// query sends the seed request and waits up to wait for the answer.
	query := func(wait time.Duration) []byte {
		t.Helper()
		if _, err := u.Write(gunzHex(t, gunzSeedRequest)); err != nil {
			t.Fatal(err)
		}
		return gunzRecv(t, u, wait)
	}
	c := newClient(t, "127.0.0.2", s.lobby)
	for i := range 2 {
		if query(10*time.Second) == nil {
			t.Fatalf("GunZ query %d within the burst not answered", i)
		}
		c.list(uint16(i))
	}
	if b := query(quiet); b != nil {
		t.Errorf("GunZ query past the shared burst answered %x", b)
	}
	c.send(encode(compact, listRooms, 9, 0, nil))
	if r, ok := c.recv(quiet); ok {
		t.Errorf("LIST past the shared burst answered %+v", r)
	}
	newClient(t, "127.0.0.3", s.lobby).list(10)
}

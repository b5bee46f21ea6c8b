package tests

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/packet/game"
)

// The lobby protocol's extension (docs/protocol.md, "The extension"),
// each of its points shown against `foyer serve`.

// The refusal codes of EXT_REFUSED (docs/protocol.md).
const (
	reasonNotFound      = 1
	reasonFull          = 2
	reasonStarted       = 3
	reasonWrongPassword = 4
	reasonQuota         = 5
	reasonRateLimited   = 6
	reasonNoCapacity    = 7
)

// extPeer speaks the extension to the binary's lobby from a socket of its
// own, echoing the retry token the lobby hands it: a client written from
// the protocol's page, not the client library's.
type extPeer struct {
	t     *testing.T
	conn  *net.UDPConn
	token []byte
	seq   uint16
	id    [8]byte
}

func newExtPeer(t *testing.T, ip string, lobby netip.AddrPort) *extPeer {
	t.Helper()
	conn, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)), net.UDPAddrFromAddrPort(lobby))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p := &extPeer{t: t, conn: conn}
	p.id[0] = byte(len(ip))
	copy(p.id[1:], ip)
	return p
}

// ask sends m until an answer other than EXT_RETRY comes, padding it
// while it has no token, and returns the answer.
func (p *extPeer) ask(m ext.Message) ext.Message {
	p.t.Helper()
	buf := make([]byte, 2048)
	for range 10 {
		p.seq++
		m.Seq, m.Token, m.Pad, m.Client = p.seq, p.token, 0, p.id
		if p.token == nil {
			m.Pad = 48
		}
		b, err := m.Append(nil)
		if err != nil {
			p.t.Fatal(err)
		}
		for range 3 { // the same request again, for a lost datagram
			p.conn.Write(b)
			p.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := p.conn.Read(buf)
			if err != nil {
				continue
			}
			r, err := ext.Parse(buf[:n])
			if err != nil || r.Seq != p.seq {
				continue
			}
			if r.Type == ext.Retry {
				p.token = r.Token
				break
			}
			return r
		}
	}
	p.t.Fatalf("no answer to %s", ext.Name(m.Type))
	return ext.Message{}
}

// seat asks m and wants an EXT_SEAT.
func (p *extPeer) seat(m ext.Message) ext.Message {
	p.t.Helper()
	r := p.ask(m)
	if r.Type != ext.Seat {
		p.t.Fatalf("%s: %s reason %d", ext.Name(m.Type), ext.Name(r.Type), r.Reason)
	}
	return r
}

// refused asks m and wants EXT_REFUSED with reason.
func (p *extPeer) refused(m ext.Message, reason uint8) {
	p.t.Helper()
	if r := p.ask(m); r.Type != ext.Refused || r.Reason != reason {
		p.t.Fatalf("%s: %s reason %d, want refused %d", ext.Name(m.Type), ext.Name(r.Type), r.Reason, reason)
	}
}

func createMsg() ext.Message { return ext.Message{Header: packet.Header{Type: ext.Create}} }

func joinCode(code, password string) ext.Message {
	return ext.Message{Header: packet.Header{Type: ext.Join}, Code: code, Password: password}
}

// gameAddr is where the room of seat s runs: the lobby's address.
func gameAddr(lobby netip.AddrPort, s ext.Message) netip.AddrPort {
	return netip.AddrPortFrom(lobby.Addr(), s.Port)
}

// gameSocket is a player's socket to a room, bound to ip.
type gameSocket struct {
	t    testing.TB
	conn *net.UDPConn
	seq  uint16
}

func dialGame(t testing.TB, ip string, room netip.AddrPort) *gameSocket {
	t.Helper()
	conn, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)), net.UDPAddrFromAddrPort(room))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &gameSocket{t: t, conn: conn}
}

func (g *gameSocket) send(typ game.Type) {
	g.t.Helper()
	g.seq++
	b, err := (&game.Message{Type: typ, Seq: g.seq, Token: uint32(g.seq)}).Append(nil)
	if err != nil {
		g.t.Fatal(err)
	}
	_, _ = g.conn.Write(b)
}

// await reads until a message of type want comes, within wait; false if
// none did.
func (g *gameSocket) await(want game.Type, wait time.Duration) (game.Message, bool) {
	buf := make([]byte, 2048)
	deadline := time.Now().Add(wait)
	for {
		_ = g.conn.SetReadDeadline(deadline)
		n, err := g.conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return game.Message{}, false
			}
			continue // a refusal of an earlier datagram
		}
		if m, err := game.Parse(buf[:n]); err == nil && m.Type == want {
			return m, true
		}
	}
}

// hello says CLIENT_HELLO until SERVER_HELLO comes, a few times at most.
func (g *gameSocket) hello() (game.Message, bool) {
	for range 5 {
		g.send(game.ClientHello)
		if m, ok := g.await(game.ServerHello, time.Second); ok {
			return m, true
		}
	}
	return game.Message{}, false
}

// present shows token to the room from g's socket until the room answers
// EXT_ADMITTED for room, three times at most.
func (g *gameSocket) present(room uint32, token []byte) bool { return g.presentN(room, token, 3) }

// presentN is present, n times at most.
func (g *gameSocket) presentN(room uint32, token []byte, n int) bool {
	b, err := (&ext.Message{Header: packet.Header{Type: ext.Present}, SeatToken: token}).Append(nil)
	if err != nil {
		g.t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for range n {
		g.conn.Write(b)
		g.conn.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := g.conn.Read(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			if m, err := ext.Parse(buf[:n]); err == nil && m.Type == ext.Admitted && m.RoomID == room {
				return true
			}
		}
	}
	return false
}

// TestExtensionNamesFiltersAndBrowsers (points 1 and 2): rooms created
// with a name, a mode, a map and tags show them in the extension's
// filtered listings, by code, and in the Teeworlds info their room's port
// answers; a seed client's listing is the same bytes as ever.
func TestExtensionNamesFiltersAndBrowsers(t *testing.T) {
	l := cliLobby(t, foyertest.MaxInstances(4))
	lobby := l.Addr().String()
	out := cliOK(t, "create", "--name", "Ann's room", "--mode", "ctf", "--map", "dust", "--tag", "region=eu", "--json", lobby)
	var ann struct {
		cliSeatJSON
		Code  string `json:"code"`
		Token string `json:"token"`
	}
	cliDecode(t, out, &ann)
	if !ext.ValidCode(ann.Code) || len(ann.Token) != 2*ext.TokenLen {
		t.Fatalf("create --json: %s", out)
	}
	cliOK(t, "create", "--name", "Bob's", "--mode", "dm", lobby)
	cliOK(t, "create", lobby) // a seed CREATE: no name

	var listed struct {
		Rooms []struct {
			ID   uint32            `json:"id"`
			Code string            `json:"code"`
			Name string            `json:"name"`
			Mode string            `json:"mode"`
			Map  string            `json:"map"`
			Tags map[string]string `json:"tags"`
		} `json:"rooms"`
	}
	cliDecode(t, cliOK(t, "rooms", "--json", "--filter", "mode=ctf,region=eu", lobby), &listed)
	if len(listed.Rooms) != 1 || listed.Rooms[0].ID != ann.Room || listed.Rooms[0].Name != "Ann's room" ||
		listed.Rooms[0].Code != ann.Code || listed.Rooms[0].Map != "dust" || listed.Rooms[0].Tags["region"] != "eu" {
		t.Fatalf("rooms --filter mode=ctf,region=eu: %+v", listed.Rooms)
	}
	cliDecode(t, cliOK(t, "rooms", "--json", "--filter", "name=B", lobby), &listed)
	if len(listed.Rooms) != 1 || listed.Rooms[0].Name != "Bob's" {
		t.Fatalf("rooms --filter name=B: %+v", listed.Rooms)
	}
	if table := cliOK(t, "rooms", "--ext", lobby); !strings.Contains(table, ann.Code) || !strings.Contains(table, "Ann's room") {
		t.Fatalf("rooms --ext:\n%s", table)
	}
	// The seed listing is as it always was: three rooms, 11 bytes each.
	var seed cliRoomsJSON
	cliDecode(t, cliOK(t, "rooms", "--json", lobby), &seed)
	if len(seed.Rooms) != 3 {
		t.Fatalf("seed rooms: %+v", seed.Rooms)
	}
	info, _ := teeInfo(t, netip.AddrPortFrom(l.Addr().Addr(), ann.Port))
	if info.Name != "Ann's room" || info.Map != "dust" || info.GameType != "ctf" {
		t.Fatalf("the room's Teeworlds info: name %q, map %q, game type %q", info.Name, info.Map, info.GameType)
	}
}

// TestExtensionPrivateRoomsCodesAndPasswords (point 3): a private room
// is listed nowhere and joined by its code only; its password is wanted,
// wrong guesses are refused and then throttled.
func TestExtensionPrivateRoomsCodesAndPasswords(t *testing.T) {
	l := cliLobby(t)
	lobby := l.Addr().String()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := cliOK(t, "create", "--private", "--password-file", pw, "--name", "secret", lobby)
	var id uint32
	var port uint16
	var code string
	if _, err := fmt.Sscanf(out, "created room %d, port %d, code %s", &id, &port, &code); err != nil {
		t.Fatalf("create --private: %q: %v", out, err)
	}
	code = strings.TrimSuffix(code, ":")
	if out := cliOK(t, "rooms", "--ext", lobby); strings.Contains(out, code) {
		t.Fatalf("a private room is listed:\n%s", out)
	}
	var seed cliRoomsJSON
	cliDecode(t, cliOK(t, "rooms", "--json", lobby), &seed)
	if len(seed.Rooms) != 0 {
		t.Fatalf("a seed listing shows the private room: %+v", seed.Rooms)
	}
	cliFails(t, 1, []string{"wrong password"}, "join", lobby, strings.ToLower(code))
	cliFails(t, 1, []string{"no such room"}, "join", "--password-file", pw, lobby, fmt.Sprint(id))
	cliFails(t, 1, []string{"JOIN_FAILED"}, "join", lobby, fmt.Sprint(id)) // a seed JOIN
	if out := cliOK(t, "join", "--password-file", pw, lobby, code); !strings.Contains(out, fmt.Sprintf("joined room %d", id)) {
		t.Fatalf("join by code with the password: %q", out)
	}
	guesser := newExtPeer(t, "127.0.0.5", l.Addr())
	throttled := false
	for i := range 12 {
		r := guesser.ask(joinCode(code, fmt.Sprintf("guess %d", i)))
		if r.Type == ext.Refused && r.Reason == reasonRateLimited {
			throttled = true
			break
		}
		if r.Type != ext.Refused || r.Reason != reasonWrongPassword {
			t.Fatalf("guess %d: %s reason %d", i, ext.Name(r.Type), r.Reason)
		}
	}
	if !throttled {
		t.Fatal("12 wrong guesses in a row were all checked")
	}
}

// TestExtensionQuickJoinRace (point 4): 100 clients quick-joining at
// once fill rooms exactly: none over max_players, every client seated,
// no room left with a free place while another was started.
func TestExtensionQuickJoinRace(t *testing.T) {
	const clients, size = 100, 10
	l := cliLobby(t, foyertest.MaxPlayers(size), foyertest.MaxInstances(clients/size+2),
		foyertest.IdleTimeout(time.Minute))
	var wg sync.WaitGroup
	seats := make([]ext.Message, clients)
	peers := make([]*extPeer, clients)
	for i := range clients {
		// Each from an address of its own, as players are.
		peers[i] = newExtPeer(t, fmt.Sprintf("127.3.%d.%d", i/200, 1+i%200), l.Addr())
		peers[i].ask(ext.Message{Header: packet.Header{Type: ext.List}}) // its retry token, beforehand
	}
	for i := range clients {
		wg.Go(func() {
			seats[i] = peers[i].ask(ext.Message{Header: packet.Header{Type: ext.Quick}, Filter: ext.Filter{Mode: "race"}})
		})
	}
	wg.Wait()
	per := map[uint32]int{}
	for i, s := range seats {
		if s.Type != ext.Seat {
			t.Fatalf("client %d: %s reason %d\n%s", i, ext.Name(s.Type), s.Reason, l.Log())
		}
		per[s.RoomID]++
	}
	for id, n := range per {
		if n != size {
			t.Errorf("room %d got %d quick joins, want %d", id, n, size)
		}
	}
	if len(per) != clients/size {
		t.Errorf("%d clients in %d rooms, want %d", clients, len(per), clients/size)
	}
}

// TestExtensionSeatTokens (point 5): the seat token of an extended
// CREATE seats its holder at the room's door from any address, checked
// offline by the room; a forged token, or another room's, seats no one.
func TestExtensionSeatTokens(t *testing.T) {
	l := cliLobby(t)
	p := newExtPeer(t, "127.0.0.1", l.Addr())
	seat, other := p.seat(createMsg()), p.seat(createMsg())
	addr := gameAddr(l.Addr(), seat)
	// 127.0.0.3 holds no seat: the lobby seated 127.0.0.1. (Each check
	// is one attempt: the creator's seat waits seat_ttl for it.)
	stranger := dialGame(t, "127.0.0.3", addr)
	stranger.send(game.ClientHello)
	if _, ok := stranger.await(game.ServerHello, time.Second); ok {
		t.Fatal("a stranger's hello was answered")
	}
	holder := dialGame(t, "127.0.0.2", addr)
	forged := append([]byte(nil), seat.SeatToken...)
	forged[len(forged)-1] ^= 1
	if holder.presentN(seat.RoomID, forged, 1) || holder.presentN(seat.RoomID, other.SeatToken, 1) {
		t.Fatal("a forged token, or another room's, was admitted")
	}
	if !holder.present(seat.RoomID, seat.SeatToken) {
		t.Fatal("the seat's own token was not admitted")
	}
	if m, ok := holder.hello(); !ok || m.RoomID != seat.RoomID {
		t.Fatalf("the token's holder was not let in: %+v", m)
	}
}

// TestExtensionReconnect (point 6): a player that drops for 5 s in the
// middle of a match and comes back from a new port with its token is in
// its seat again: same slot, pings answered, the match's end delivered
// to its new address.
func TestExtensionReconnect(t *testing.T) {
	l := cliLobby(t, foyertest.MinPlayers(2), foyertest.Countdown(0), foyertest.MatchDuration(12*time.Second))
	a, b := newExtPeer(t, "127.0.0.1", l.Addr()), newExtPeer(t, "127.0.0.2", l.Addr())
	seatA := a.seat(createMsg())
	seatB := b.seat(joinCode(seatA.Code, ""))
	addr := gameAddr(l.Addr(), seatA)
	ga, gb := dialGame(t, "127.0.0.1", addr), dialGame(t, "127.0.0.2", addr)
	var helloA game.Message
	for i, p := range []struct {
		g    *gameSocket
		seat ext.Message
	}{{ga, seatA}, {gb, seatB}} {
		if !p.g.present(p.seat.RoomID, p.seat.SeatToken) {
			t.Fatal("not admitted")
		}
		h, ok := p.g.hello()
		if !ok {
			t.Fatal("no hello")
		}
		if i == 0 {
			helloA = h
		}
		p.g.send(game.ClientReady)
	}
	if _, ok := ga.await(game.GameStart, 5*time.Second); !ok {
		t.Fatal("the match did not start")
	}
	// A's network goes away for 5 s; B keeps pinging.
	ga.conn.Close()
	for range 5 {
		gb.send(game.ClientPing)
		time.Sleep(time.Second)
	}
	back := dialGame(t, "127.0.0.1", addr)
	if !back.present(seatA.RoomID, seatA.SeatToken) {
		t.Fatal("the room does not take the token back from the player's new port")
	}
	back.send(game.ClientPing)
	if _, ok := back.await(game.ServerPong, 2*time.Second); !ok {
		t.Fatal("the room does not answer the player back from its new port")
	}
	if m, ok := back.hello(); !ok || m.Slot != helloA.Slot {
		t.Fatalf("back in slot %d, was %d", m.Slot, helloA.Slot)
	}
	if _, ok := back.await(game.GameEnd, 15*time.Second); !ok {
		t.Fatal("the match's end did not reach the player's new address")
	}
}

// TestExtensionAddressValidation (point 7): an extended CREATE from a
// source the lobby has not seen receive starts nothing: it gets an
// EXT_RETRY no longer than itself (or nothing, unpadded), and only its
// echo starts the room.
func TestExtensionAddressValidation(t *testing.T) {
	l := cliLobby(t)
	conn, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.9:0")), net.UDPAddrFromAddrPort(l.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// ask sends m and waits up to wait for an answer: briefly where none
	// must come, long where one must (a room's start under load).
	ask := func(m ext.Message, wait time.Duration) (ext.Message, int, bool) {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(b)
		buf := make([]byte, 2048)
		conn.SetReadDeadline(time.Now().Add(wait))
		n, err := conn.Read(buf)
		if err != nil {
			return ext.Message{}, len(b), false
		}
		r, err := ext.Parse(buf[:n])
		if err != nil {
			t.Fatalf("%x: %v", buf[:n], err)
		}
		if n > len(b) && r.Type == ext.Retry {
			t.Fatalf("an EXT_RETRY of %d bytes to a request of %d", n, len(b))
		}
		return r, len(b), true
	}
	create := ext.Message{Header: packet.Header{Type: ext.Create, Seq: 1}, Meta: ext.Meta{Name: "x"}}
	if r, n, ok := ask(create, time.Second); ok {
		t.Fatalf("an unpadded CREATE of %d bytes got %s", n, ext.Name(r.Type))
	}
	create.Pad = 40
	r, _, ok := ask(create, 10*time.Second)
	if !ok || r.Type != ext.Retry {
		t.Fatalf("a padded CREATE got %+v", r)
	}
	var seed cliRoomsJSON
	cliDecode(t, cliOK(t, "rooms", "--json", l.Addr().String()), &seed)
	if len(seed.Rooms) != 0 {
		t.Fatalf("a room was started before the source showed it receives: %+v", seed.Rooms)
	}
	create.Seq, create.Token, create.Pad = 2, r.Token, 0
	if r, _, ok := ask(create, 10*time.Second); !ok || r.Type != ext.Seat {
		t.Fatalf("the CREATE echoing its token got %+v", r)
	}
}

// TestExtensionReasons (point 8): refusals say why, by code: not found,
// full, started, quota, no capacity; wrong password and rate limited are
// TestExtensionPrivateRoomsCodesAndPasswords's.
func TestExtensionReasons(t *testing.T) {
	l := cliLobby(t, foyertest.MaxPlayers(2), foyertest.MaxInstances(2), foyertest.MinPlayers(1), foyertest.Countdown(0))
	p, other := newExtPeer(t, "127.0.0.1", l.Addr()), newExtPeer(t, "127.0.0.2", l.Addr())
	p.refused(joinCode("ZZZZZZ", ""), reasonNotFound)
	full := p.seat(createMsg())
	newExtPeer(t, "127.0.0.3", l.Addr()).seat(joinCode(full.Code, "")) // its second place
	other.refused(joinCode(full.Code, ""), reasonFull)
	started := p.seat(createMsg())
	g := dialGame(t, "127.0.0.1", gameAddr(l.Addr(), started))
	if !g.present(started.RoomID, started.SeatToken) {
		t.Fatal("not admitted")
	}
	g.hello()
	g.send(game.ClientReady)
	if _, ok := g.await(game.GameStart, 5*time.Second); !ok {
		t.Fatal("the match did not start")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := other.ask(joinCode(started.Code, ""))
		if r.Type == ext.Refused && r.Reason == reasonStarted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a begun match: %s reason %d", ext.Name(r.Type), r.Reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// 127.0.0.0/24 holds rooms_per_network (max_instances here) rooms:
	// its quota; another network finds the host full.
	p.refused(createMsg(), reasonQuota)
	newExtPeer(t, "127.9.0.1", l.Addr()).refused(createMsg(), reasonNoCapacity)
}

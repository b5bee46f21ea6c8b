package host_test

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet/teeinfo"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// browser is a Teeworlds-style server browser on a real UDP socket.
type browser struct {
	t    *testing.T
	conn *net.UDPConn
}

func newBrowser(t *testing.T, port uint16) *browser {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &browser{t: t, conn: c}
}

func (b *browser) send(datagrams ...[]byte) {
	b.t.Helper()
	for _, d := range datagrams {
		if _, err := b.conn.Write(d); err != nil {
			b.t.Fatal(err)
		}
	}
}

// untilEcho sends marker, which the test game echoes, and returns the
// info replies that came before the echo. Anything else before it fails
// the test: it would be a datagram the game echoed, so one that reached
// it.
func (b *browser) untilEcho(marker string) []teeinfo.Reply {
	b.t.Helper()
	b.send([]byte(marker))
	var replies []teeinfo.Reply
	buf := make([]byte, 2048)
	b.conn.SetReadDeadline(time.Now().Add(patience))
	for {
		n, err := b.conn.Read(buf)
		if err != nil {
			b.t.Fatalf("waiting for the echo of %q: %v", marker, err)
		}
		if string(buf[:n]) == marker {
			return replies
		}
		r, err := teeinfo.ParseReply(buf[:n])
		if err != nil {
			b.t.Fatalf("the game got %q: %v", buf[:n], err)
		}
		replies = append(replies, r)
	}
}

// startWith starts p on a free port with maxPlayers and settings.
func startWith(t *testing.T, p *host.Process, maxPlayers int, settings map[string]string) uint16 {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	a := instance.Assignment{RoomID: 9, Port: port, MaxPlayers: maxPlayers, Settings: settings, Bind: loopback}
	if err := p.Start(ctx, a); err != nil {
		t.Fatalf("Start: %v", err)
	}
	seatLoopback(t, p)
	return port
}

// waitPlayers reads p's status until it reports n players.
func waitPlayers(t *testing.T, p *host.Process, n int) {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case s := <-p.Status():
			if s.Players == n {
				return
			}
		case <-timeout:
			t.Fatalf("never saw %d players", n)
		}
	}
}

func TestInfoAnswers(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	port := startWith(t, p, 200, map[string]string{"room_name": "Tee room", "player_names": "alice,,carol"})
	const players = 150 // more than one datagram carries
	send(t, port, "join "+strconv.Itoa(players))
	waitPlayers(t, p, players)

	b := newBrowser(t, port)
	connless := "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
	b.send(
		// Connless datagrams that are not requests: qstat's older ones, a
		// request one byte too long, an extended header with a bad type.
		[]byte(connless+"gie"), []byte(connless+"gie2\x00"), []byte(connless+"gie3\x00\x00"),
		[]byte("xe\x00\x01\x00\x00\xff\xff\xff\xffgie4\x00"),
		teeinfo.Request{Token: 0x5a}.Append(nil),
		teeinfo.Request{Extended: true, ExtraToken: 0xbeef, Token: 0x11}.Append(nil),
	)
	replies := b.untilEcho("hello")

	name := func(i int) string {
		switch i {
		case 0:
			return "alice"
		case 2:
			return "carol"
		}
		return "player " + strconv.Itoa(i+1)
	}
	if len(replies) != 2 || replies[0].Kind != teeinfo.Vanilla {
		t.Fatalf("%d replies, want a vanilla one then an extended one of one datagram", len(replies))
	}
	v := replies[0].Info
	if v.Token != 0x5a || v.Name != "Tee room" || v.Map != instance.DefaultMap || v.GameType != instance.DefaultGameType ||
		v.Version != instance.InfoVersion || v.Flags != 0 ||
		v.NumPlayers != teeinfo.VanillaMaxClients || v.MaxPlayers != teeinfo.VanillaMaxClients ||
		len(v.Players) != teeinfo.VanillaMaxClients {
		t.Fatalf("vanilla reply %+v", v)
	}
	for i, pl := range v.Players {
		if pl.Name != name(i) || !pl.IsPlayer {
			t.Fatalf("vanilla player %d: %+v, want %q", i, pl, name(i))
		}
	}

	ext := replies[1:]
	if len(ext) > instance.MaxInfoPackets {
		t.Fatalf("extended reply in %d datagrams, more than %d", len(ext), instance.MaxInfoPackets)
	}
	var asm teeinfo.Assembler
	for i := range ext {
		done, err := asm.Add(&ext[i])
		if err != nil || done != (i == len(ext)-1) {
			t.Fatalf("extended datagram %d of %d: complete %v, %v", i+1, len(ext), done, err)
		}
	}
	// One datagram lists the players that fit, and counts as clients as
	// many as it lists.
	e := asm.Info()
	if e.Token != 0xbeef11 || e.Name != "Tee room" || e.NumPlayers != players || e.NumClients != len(e.Players) ||
		e.MaxPlayers != 200 || e.MaxClients != 200 || len(e.Players) >= players || len(e.Players) < 16 {
		t.Fatalf("extended reply: token %#x, name %q, players %d/%d, clients %d/%d, %d listed",
			e.Token, e.Name, e.NumPlayers, e.MaxPlayers, e.NumClients, e.MaxClients, len(e.Players))
	}
	for i, pl := range e.Players {
		if pl.Name != name(i) {
			t.Fatalf("extended player %d is %q, want %q", i, pl.Name, name(i))
		}
	}
}

func TestInfoFloodIsLimited(t *testing.T) {
	t.Parallel()
	p := launch(t, "game", zerolog.Nop())
	port := start(t, p, nil)
	b := newBrowser(t, port)
	const flood = 200
	began := time.Now()
	for i := range flood {
		b.send(teeinfo.Request{Token: uint8(i)}.Append(nil))
	}
	replies := b.untilEcho("done")
	// The budget refills while the flood is read, so the bound grows with
	// the time it took; it says nothing about speed.
	limit := instance.InfoBurst + int(time.Since(began)/instance.InfoInterval) + 1
	if len(replies) == 0 || len(replies) > limit || len(replies) >= flood {
		t.Fatalf("%d replies to %d requests, want 1 to %d", len(replies), flood, limit)
	}
	for i, r := range replies {
		if r.Kind != teeinfo.Vanilla || r.Info.MaxPlayers != 4 {
			t.Fatalf("reply %d: %+v", i, r)
		}
	}
}

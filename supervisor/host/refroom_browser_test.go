package host_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/game"
	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// askInfo sends req to port from a fresh socket and returns the whole
// answer, assembled.
func askInfo(t *testing.T, port uint16, req teeinfo.Request) teeinfo.Info {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(req.Append(nil)); err != nil {
		t.Fatal(err)
	}
	var asm teeinfo.Assembler
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(patience))
	for {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("waiting for the info answer: %v", err)
		}
		r, err := teeinfo.ParseReply(buf[:n])
		if err != nil {
			t.Fatalf("answer %q: %v", buf[:n], err)
		}
		if done, err := asm.Add(&r); err != nil {
			t.Fatal(err)
		} else if done {
			return asm.Info()
		}
	}
}

// The reference room shows up in Teeworlds-style browsers with its players
// and its maximum, and plays on as before.
func TestRefRoomBrowsersSeeTheRoom(t *testing.T) {
	t.Parallel()
	const maxPlayers = 6
	_, port, err := openRefRoom(t, maxPlayers, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One player in each framing: both are players to the browsers.
	alice, bob := dial(t, port), dialLegacy(t, port)
	for _, c := range []*client{alice, bob} {
		c.send(game.ClientHello)
		c.expect(game.ServerHello) // the room reports the player before it answers
	}

	check := func(kind string, in teeinfo.Info, token int) {
		t.Helper()
		if in.Token != token || in.Name != "Foyer room 42" || in.Map != instance.DefaultMap ||
			in.GameType != instance.DefaultGameType || in.NumPlayers != 2 || in.MaxPlayers != maxPlayers ||
			in.NumClients != 2 || in.MaxClients != maxPlayers || len(in.Players) != 2 ||
			in.Players[0].Name != "player 1" || in.Players[1].Name != "player 2" {
			t.Fatalf("%s answer %+v", kind, in)
		}
	}
	check("vanilla", askInfo(t, port, teeinfo.Request{Token: 7}), 7)
	check("extended", askInfo(t, port, teeinfo.Request{Extended: true, ExtraToken: 0x1234, Token: 0x56}), 0x123456)

	out := quakestat(t, port)
	// TEES,address,name,map,max players,players,ping,retries; then one
	// line per player, which qstat 2.17 misreads past the first name.
	line, _, _ := strings.Cut(out, "\n")
	want := fmt.Sprintf("TEES,127.0.0.1:%d,Foyer room 42,%s,%d,2,", port, instance.DefaultMap, maxPlayers)
	if !strings.HasPrefix(line, want) {
		t.Fatalf("quakestat server line %q, want it to start %q; output:\n%s", line, want, out)
	}

	// The game's own packets still reach the room, in both framings.
	alice.send(game.ClientPing)
	alice.expect(game.ServerPong)
	bob.send(game.ClientPing)
	bob.expect(game.ServerPong)
}

// quakestat runs Debian's qstat against the room and returns its raw,
// comma-separated output.
func quakestat(t *testing.T, port uint16) string {
	t.Helper()
	bin := requiretest.Command(t, "quakestat")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	addr := "127.0.0.1:" + strconv.Itoa(int(port))
	out, err := exec.CommandContext(ctx, bin, "-tees", addr, "-P", "-raw", ",", "-retry", "3", "-timeout", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("quakestat: %v\n%s", err, out)
	}
	return string(out)
}

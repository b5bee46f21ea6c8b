package teeinfo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// lookTool finds a Debian game or tool binary, on PATH or in /usr/games;
// the tests that need one call it first (make test installs it).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	return requiretest.Command(t, name, "/usr/games/"+name)
}

// lockedBuffer collects a child's output for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freeUDPPort returns a port nothing listens on at this moment on addr.
func freeUDPPort(t *testing.T, ip string) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// ddnetServer runs DDNet-Server on [::1] (with bindaddr 127.0.0.1 it also
// tries an IPv6 socket on that address and gives up) and returns a socket
// connected to it.
func ddnetServer(t *testing.T, name string) *net.UDPConn {
	bin := lookTool(t, "DDNet-Server")
	for attempt := 0; attempt < 3; attempt++ {
		port := freeUDPPort(t, "::1")
		dir := t.TempDir()
		cmd := exec.Command(bin, fmt.Sprintf(
			"bindaddr ::1; sv_port %d; sv_register 0; sv_name %s; sv_max_clients 8; sv_map Tutorial", port, name))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("DDNet-Server output:\n%s", out.String())
			}
		})
		conn, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv6loopback, Port: port})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		// Ready when it answers; retry the request until then.
		probe := Request{Token: 1}.Append(nil)
		buf := make([]byte, 2048)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				t.Logf("DDNet-Server exited on port %d, retrying", port)
				deadline = time.Time{}
				continue
			default:
			}
			conn.Write(probe)
			conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := conn.Read(buf); err == nil {
				return conn
			}
		}
		if !deadline.IsZero() {
			t.Fatalf("DDNet-Server on port %d never answered:\n%s", port, out.String())
		}
	}
	t.Fatal("DDNet-Server did not start in 3 attempts")
	return nil
}

// ask sends req and reads datagrams until one parses as a reply with the
// token req calls for.
func ask(t *testing.T, conn *net.UDPConn, req Request) []Reply {
	t.Helper()
	if _, err := conn.Write(req.Append(nil)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	var a Assembler
	var reps []Reply
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no complete reply to %+v: %v", req, err)
		}
		rep, err := ParseReply(buf[:n])
		if err != nil {
			t.Fatalf("DDNet-Server sent %q: %v", buf[:n], err)
		}
		if rep.Info.Token != req.ReplyToken() {
			continue // an answer to the readiness probe
		}
		reps = append(reps, rep)
		if done, err := a.Add(&rep); err != nil {
			t.Fatal(err)
		} else if done {
			return reps
		}
	}
}

func TestDDNetServer(t *testing.T) {
	const name = "Foyer_teeinfo"
	conn := ddnetServer(t, name)

	vanilla := ask(t, conn, Request{Token: 0x5a})
	v := vanilla[0].Info
	if len(vanilla) != 1 || vanilla[0].Kind != Vanilla || v.Name != name || v.Map != "Tutorial" ||
		v.MaxClients != 8 || v.NumClients != 0 || len(v.Players) != 0 || v.Version == "" || v.GameType == "" {
		t.Fatalf("vanilla reply %+v", vanilla)
	}

	req := Request{Extended: true, ExtraToken: 0xbeef, Token: 0x5a}
	ext := ask(t, conn, req)
	e := ext[0].Info
	if len(ext) != 1 || ext[0].Kind != Extended || e.Token != 0xbeef5a || e.Name != name || e.Map != "Tutorial" ||
		e.MaxClients != 8 || e.NumClients != 0 || e.MapSize <= 0 || e.MapCRC == 0 || e.Version != v.Version {
		t.Fatalf("extended reply %+v", ext)
	}
	// What we parsed re-encodes to what a DDNet client parses the same.
	rep := ext[0]
	if again, err := ParseReply(rep.Append(nil)); err != nil || again.Info.Name != name || again.Info.MapCRC != e.MapCRC {
		t.Fatalf("re-encoded: %+v, %v", again, err)
	}
}

// serveInfo answers info requests on a loopback socket the way a Foyer
// instance does, until ctx ends.
func serveInfo(ctx context.Context, t *testing.T, in *Info) *net.UDPAddr {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-ctx.Done(); c.Close() }()
	go func() {
		buf := make([]byte, 2048)
		var pkts [][]byte
		for {
			n, from, err := c.ReadFromUDP(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			req, err := ParseRequest(buf[:n])
			if err != nil {
				continue // quakestat also sends older requests: no answer
			}
			reply := *in
			reply.Token = req.ReplyToken()
			if !req.Extended {
				c.WriteToUDP(reply.AppendVanilla(nil), from)
				continue
			}
			pkts, _ = reply.AppendExtended(pkts[:0])
			for _, p := range pkts {
				c.WriteToUDP(p, from)
			}
		}
	}()
	return c.LocalAddr().(*net.UDPAddr)
}

// quakestat (qstat's Teeworlds client) reads our vanilla reply.
func TestQuakestatReadsVanilla(t *testing.T) {
	bin := lookTool(t, "quakestat")
	in := Info{
		Version: "0.6.4", Name: "Foyer room 3", Map: "arena", GameType: "DM",
		NumPlayers: 2, MaxPlayers: 8, NumClients: 2, MaxClients: 8,
		Players: []Player{
			{Name: "alice", Country: -1, Score: 3, IsPlayer: true},
			{Name: "bob", Clan: "tees", Country: 276, Score: 1, IsPlayer: true},
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := serveInfo(ctx, t, &in)
	out, err := exec.CommandContext(ctx, bin, "-tees", addr.String(), "-P", "-raw", ",", "-retry", "3", "-timeout", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("quakestat: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	// TEES,address,name,map,max players,players,ping,retries
	f := strings.Split(lines[0], ",")
	if len(f) < 6 || f[0] != "TEES" || f[1] != addr.String() || f[2] != in.Name || f[3] != in.Map || f[4] != "8" || f[5] != "2" {
		t.Fatalf("quakestat server line %q", lines[0])
	}
	// qstat 2.17 reads num_players clients as (name, score) pairs, not the
	// five fields of inf3, so only the first name comes out right; what it
	// does show is that the list starts where our fixed fields end and
	// that num_players clients follow.
	var names []string
	for _, l := range lines[1:] {
		names = append(names, strings.Split(l, ",")[0])
	}
	if len(names) != in.NumPlayers || !slices.Contains(names, "alice") {
		t.Fatalf("quakestat players %q in\n%s", names, out)
	}
}

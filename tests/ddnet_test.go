package tests

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// ddnetBinary finds Debian's DDNet-Server, on PATH or where Debian puts
// it; the test needs it (make test installs the ddnet-server package).
func ddnetBinary(t *testing.T) string {
	t.Helper()
	return requiretest.Command(t, "DDNet-Server", "/usr/games/DDNet-Server")
}

// teeInfo asks the Teeworlds server at to for its extended info, retrying
// until a complete reply with the request's token arrives.
func teeInfo(t *testing.T, to netip.AddrPort) (teeinfo.Info, []teeinfo.Reply) {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := teeinfo.Request{Extended: true, ExtraToken: 0xf0e1, Token: 0x2d}
	buf := make([]byte, 2048)
	for range 20 {
		if _, err := c.Write(req.Append(nil)); err != nil {
			t.Fatal(err)
		}
		var a teeinfo.Assembler
		var reps []teeinfo.Reply
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		for {
			n, err := c.Read(buf)
			if err != nil {
				break // timed out: ask again
			}
			rep, err := teeinfo.ParseReply(buf[:n])
			if err != nil {
				t.Fatalf("DDNet-Server sent %x: %v", buf[:n], err)
			}
			if rep.Info.Token != req.ReplyToken() {
				continue // an answer to an earlier request
			}
			reps = append(reps, rep)
			done, err := a.Add(&rep)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				return a.Info(), reps
			}
		}
	}
	t.Fatalf("no info reply from %v", to)
	return teeinfo.Info{}, nil
}

// TestDDNetThroughTheExecDriver runs DDNet-Server as the room command of
// a real `foyer serve`: CREATE starts it on a pool port, LIST shows it
// with the maximum the server reports, the server answers info requests
// there, and a kill -9 of it takes the room off the list.
func TestDDNetThroughTheExecDriver(t *testing.T) {
	ddnet := ddnetBinary(t)
	// DDNet cannot bind 127.0.0.1 alone (it opens an IPv6 socket on the
	// same address too), so it binds [::1]; the probe finds it there. The
	// room must end by the kill below, as crashed, never by a probe slow
	// on a loaded machine: the health timeout is generous.
	s := startServer(t, "", fmt.Sprintf(`command = [%q, "sv_port {port}; sv_name Room {room_id}; sv_register 0; bindaddr ::1; sv_max_clients {max_players}; sv_map Tutorial"]
probe = "teeworlds"
max_players = 6
health_timeout = "30s"
`, ddnet))
	c := newClient(t, "127.0.0.1", s.lobby)
	created := c.request(compact, createRoom, 1, nil)
	id, port := created.roomPort(t)
	if created.typ != roomCreated || id == 0 || int(port) < s.ports[0] || int(port) > s.ports[1] {
		t.Fatalf("CREATE answered %#x room %d port %d (pool %v)", created.typ, id, port, s.ports)
	}
	rooms := c.list(2)
	i := slices.IndexFunc(rooms, func(r room) bool { return r.id == id })
	if i < 0 || rooms[i].port != port || rooms[i].max != 6 || rooms[i].state != 0 || rooms[i].players != 1 {
		t.Fatalf("room %d port %d not listed as waiting with 6 places and the creator's seat: %+v", id, port, rooms)
	}
	joiner := newClient(t, "127.0.0.1", s.lobby)
	if jid, jport := joiner.request(compact, joinRoom, 3, joinPayload(id)).roomPort(t); jid != id || jport != port {
		t.Fatalf("JOIN answered room %d port %d", jid, jport)
	}

	// The server on the room's port is DDNet, and its extended reply
	// parses whole.
	info, reps := teeInfo(t, netip.AddrPortFrom(netip.IPv6Loopback(), port))
	if reps[0].Kind != teeinfo.Extended || info.Name != fmt.Sprintf("Room %d", id) || info.Map != "Tutorial" ||
		info.MaxClients != 6 || info.NumClients != 0 || len(info.Players) != 0 ||
		info.Version == "" || info.GameType == "" || info.MapSize <= 0 || info.MapCRC == 0 {
		t.Fatalf("DDNet-Server's extended info %+v in %d datagrams", info, len(reps))
	}

	// The room's process is the server's keeper; the server is its child.
	pid := childOf(t, s.instancePID(id))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for seq, deadline := uint16(4), time.Now().Add(15*time.Second); ; seq++ {
		if !slices.ContainsFunc(c.list(seq), func(r room) bool { return r.id == id }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("room %d still listed 15 s after DDNet-Server was killed:\n%s", id, s.logs)
		}
		time.Sleep(100 * time.Millisecond) // under the lobby's rate limit
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if slices.ContainsFunc(s.logs.lines("room reaped"), func(m map[string]any) bool {
			return m["id"] == float64(id) && m["cause"] == "crashed" && m["signal"] == "SIGKILL"
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room reaped line for room %d as crashed by SIGKILL:\n%s", id, s.logs)
		}
	}
}

// DDNet rooms survive their lobby as Foyer's own rooms do: each runs under
// a keeper, which a lobby started again adopts, server and all; a lobby
// that does not come back leaves the keeper to stop its server after the
// grace.
func TestDDNetRoomsOutliveTheLobby(t *testing.T) {
	ddnet := ddnetBinary(t)
	l := newKeptLobby(t, keptSettings{grace: 3 * time.Second, match: 60 * time.Second, ports: 4,
		supervise: fmt.Sprintf(`command = [%q, "sv_port {port}; sv_name Room {room_id}; sv_register 0; bindaddr ::1; sv_max_clients {max_players}; sv_map Tutorial"]
probe = "teeworlds"
max_players = 6
`, ddnet)})
	c := newClient(t, "127.0.0.1", l.lobby)
	id, port := c.request(compact, createRoom, 1, nil).roomPort(t)
	before := c.list(2)
	if len(before) != 1 || before[0].max != 6 {
		t.Fatalf("listed %+v", before)
	}
	keeper := l.adminRooms()[0].PID
	server := childOf(t, keeper)

	l.kill9()
	if info, _ := teeInfo(t, netip.AddrPortFrom(netip.IPv6Loopback(), port)); info.Name != fmt.Sprintf("Room %d", id) {
		t.Fatalf("with no lobby, the room's port answers %+v", info)
	}
	l.start()
	if after := c.list(3); !slices.Equal(after, before) {
		t.Fatalf("after the restart %+v, want %+v", after, before)
	}
	if r := l.adminRooms(); len(r) != 1 || !r[0].Adopted || r[0].Source != "exec" || r[0].PID != keeper {
		t.Fatalf("/rooms shows %+v", r)
	}

	l.kill9()
	for deadline := time.Now().Add(keepLimit); proc.Alive(server) || proc.Alive(keeper); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("DDNet-Server (%d) or its keeper (%d) still runs long after the grace", server, keeper)
		}
	}
}

// childOf returns the one child of process pid, whichever of its threads
// forked it.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(keepLimit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		var kids []string
		for _, f := range files {
			b, _ := os.ReadFile(f)
			kids = append(kids, strings.Fields(string(b))...)
		}
		if len(kids) == 1 {
			child, err := strconv.Atoi(kids[0])
			if err == nil {
				return child
			}
		}
	}
	t.Fatalf("process %d has no one child", pid)
	return 0
}

package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
)

// pinger keeps a player pinging its room every pingEvery until GAME_END,
// counting the pings that went unanswered.
type pinger struct {
	g      *gamer
	done   chan struct{}
	mu     sync.Mutex
	pongs  int
	missed int
	end    []byte // GAME_END's payload
	err    error
}

const pingEvery = 100 * time.Millisecond

func startPinger(g *gamer) *pinger {
	p := &pinger{g: g, done: make(chan struct{})}
	go p.run()
	return p
}

func (p *pinger) run() {
	defer close(p.done)
	var token [4]byte
	for seq := uint16(100); ; seq++ {
		binary.BigEndian.PutUint32(token[:], uint32(seq))
		if err := p.g.send(gamePing, seq, 0, token[:]); err != nil {
			p.fail(err)
			return
		}
		answered := false
		for deadline := time.Now().Add(pingEvery * 5); time.Now().Before(deadline) && !answered; {
			r, err := p.g.next(time.Until(deadline))
			if err != nil {
				p.fail(err)
				return
			}
			if r.typ == gameEnd {
				p.mu.Lock()
				p.end = r.payload
				p.mu.Unlock()
				return
			}
			if r.typ != 0 && r.typ != gamePong {
				p.fail(fmt.Errorf("%s: %#x while playing", p.g.name, r.typ))
				return
			}
			// A pong to an earlier ping is a late answer, and no harm.
			answered = r.typ == gamePong && r.seq == seq && bytes.Equal(r.payload, token[:])
		}
		p.mu.Lock()
		if answered {
			p.pongs++
		} else {
			p.missed++
		}
		p.mu.Unlock()
		time.Sleep(pingEvery)
	}
}

func (p *pinger) fail(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// wait waits for the end of the match and returns GAME_END's payload.
func (p *pinger) wait(t *testing.T) []byte {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * keepLimit):
		t.Fatalf("%s: no GAME_END", p.g.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.end
}

// startMatch plays two players of the room at addr to GAME_START; they
// ping from then on. The room's creator was 127.0.0.1, which seats alice;
// bob's seat is a JOIN at lobby, from 127.0.0.1 too.
func startMatch(t *testing.T, lobby netip.AddrPort, id uint32, addr netip.AddrPort) []*pinger {
	t.Helper()
	if r := newClient(t, "127.0.0.1", lobby).request(compact, joinRoom, 1, joinPayload(id)); r.typ != joinSuccess {
		t.Fatalf("bob's JOIN of room %d answered %#x", id, r.typ)
	}
	players := []*gamer{newGamer(t, fmt.Sprintf("alice@%d", id), compact, addr), newGamer(t, fmt.Sprintf("bob@%d", id), compact, addr)}
	for _, g := range players {
		if _, err := g.greetCompact(id, 4); err != nil {
			t.Fatal(err)
		}
	}
	playAll(t, players, func(g *gamer) error {
		_, err := g.readyToStart()
		return err
	})
	return []*pinger{startPinger(players[0]), startPinger(players[1])}
}

// byID indexes a ROOM_LIST by room id.
func byID(rooms []room) map[uint32]room {
	out := make(map[uint32]room, len(rooms))
	for _, r := range rooms {
		out[r.id] = r
	}
	return out
}

// A lobby killed with SIGKILL in the middle of two matches: every room
// keeps running and keeps answering its players; a lobby started again
// with the same state_dir takes every room back as it was (ids, ports,
// states, player counts with the seats held); the matches end normally
// and the new lobby reaps them with their exit code; their ports come
// back to the pool. No room is started twice.
func TestRoomsOutliveAKilledLobby(t *testing.T) {
	l := newKeptLobby(t, keptSettings{grace: 20 * time.Second, match: 10 * time.Second, ports: 5})
	c := newClient(t, "127.0.0.1", l.lobby)
	var ids []uint32
	ports := map[uint32]uint16{}
	for i := range 5 {
		id, port := c.request(compact, createRoom, uint16(1+i), nil).roomPort(t)
		ids, ports[id] = append(ids, id), port
	}
	// A seat held for a player on the way, in a waiting room.
	if r := newClient(t, "127.0.0.1", l.lobby).request(compact, joinRoom, 1, joinPayload(ids[4])); r.typ != joinSuccess {
		t.Fatalf("JOIN answered %#x", r.typ)
	}
	var pingers []*pinger
	for _, id := range ids[:2] {
		pingers = append(pingers, startMatch(t, l.lobby, id, netip.AddrPortFrom(l.lobby.Addr(), ports[id]))...)
	}
	// The lobby hears of the start a moment after the players.
	var before []room
	for seq := uint16(10); ; seq++ {
		before = c.list(seq)
		if len(before) == 5 && byID(before)[ids[0]].state == 2 && byID(before)[ids[1]].state == 2 {
			break
		}
		if seq > 200 {
			t.Fatalf("before the kill: %+v", before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if byID(before)[ids[4]].players != 2 {
		t.Fatalf("the joined room: %+v", before)
	}
	pids := l.rooms()

	l.kill9()
	if got := l.rooms(); !slices.Equal(got, pids) {
		t.Fatalf("room processes %v after the lobby's death, want %v", got, pids)
	}
	l.start()
	after := c.list(300)
	if !slices.Equal(after, before) {
		t.Fatalf("after the restart the lobby lists\n%+v\nwant\n%+v", after, before)
	}
	for _, r := range l.adminRooms() {
		if !r.Adopted || !slices.Contains(pids, r.PID) || r.Port != ports[r.ID] {
			t.Errorf("/rooms shows %+v", r)
		}
	}
	for _, id := range ids {
		if n := len(l.logsOf("room created", id)); n != 1 {
			t.Errorf("room %d created %d times", id, n)
		}
		l.awaitLog("room adopted", map[string]any{"id": id, "adopted": true})
	}

	// The matches run their course: time is up, for every player, who
	// never missed a pong.
	for _, p := range pingers {
		if end := p.wait(t); !bytes.Equal(end, []byte{1}) {
			t.Errorf("%s: GAME_END %x, want reason 1 (time is up)", p.g.name, end)
		}
		if p.missed > 0 || p.pongs == 0 {
			t.Errorf("%s: %d pings unanswered, %d answered", p.g.name, p.missed, p.pongs)
		}
	}
	for _, id := range ids[:2] {
		l.awaitLog("room reaped", map[string]any{"id": id, "cause": "finished", "exit_code": 0, "adopted": true})
		// What the room logged while no lobby read it is in its log, which
		// the lobby keeps once the room ended.
		reaped := l.logsOf("room reaped", id)
		kept, _ := reaped[len(reaped)-1]["log"].(string)
		if b, err := os.ReadFile(kept); err != nil || !strings.Contains(string(b), `"message":"room finished"`) {
			t.Errorf("room %d's own log, kept at %q, does not say it finished (%v):\n%s", id, kept, err, b)
		}
	}
	// Their two ports, and only those, are free again, once they have
	// cooled down.
	freed := []uint16{ports[ids[0]], ports[ids[1]]}
	var got []uint16
	for seq := uint16(20); len(got) < 2; seq++ {
		r := c.request(compact, createRoom, seq, nil)
		if r.typ == joinFailed && seq < 100 {
			time.Sleep(50 * time.Millisecond) // port_cooldown
			continue
		}
		_, port := r.roomPort(t)
		got = append(got, port)
	}
	slices.Sort(got)
	slices.Sort(freed)
	if !slices.Equal(got, freed) {
		t.Fatalf("new rooms on ports %v, want the freed %v", got, freed)
	}
	if r := c.request(compact, createRoom, 200, nil); r.typ != joinFailed {
		t.Fatalf("a sixth room on five ports: %#x", r.typ)
	}
}

// logsOf returns the log lines with message msg about room id.
func (l *keptLobby) logsOf(msg string, id uint32) []map[string]any {
	var out []map[string]any
	for _, m := range l.logs.lines(msg) {
		if v, ok := m["id"].(float64); ok && uint32(v) == id {
			out = append(out, m)
		}
	}
	return out
}

// A lobby killed and never started again: after reattach_grace every room
// ends its match (players get GAME_END, "host stopped") and exits; the
// next start removes what they left in the state directory.
func TestOrphanedRoomsEndAfterTheGrace(t *testing.T) {
	l := newKeptLobby(t, keptSettings{grace: 2 * time.Second, match: 600 * time.Second, ports: 4})
	c := newClient(t, "127.0.0.1", l.lobby)
	id, port := c.request(compact, createRoom, 1, nil).roomPort(t)
	c.request(compact, createRoom, 2, nil).roomPort(t)
	pingers := startMatch(t, l.lobby, id, netip.AddrPortFrom(l.lobby.Addr(), port))
	if n := len(l.rooms()); n != 2 {
		t.Fatalf("%d room processes", n)
	}

	l.kill9()
	for _, p := range pingers {
		if end := p.wait(t); !bytes.Equal(end, []byte{3}) {
			t.Errorf("%s: GAME_END %x, want reason 3 (the host stopped the room)", p.g.name, end)
		}
	}
	for deadline := time.Now().Add(keepLimit); len(l.rooms()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("room processes %v left after the grace", l.rooms())
		}
	}
	left, _ := filepath.Glob(filepath.Join(l.stateDir, "rooms", "*", "plugin*"))
	if len(left) != 2 {
		t.Fatalf("sockets left %v, want the two rooms'", left)
	}

	l.start()
	if rooms := c.list(3); len(rooms) != 0 {
		t.Fatalf("rooms after a start with no room alive: %+v", rooms)
	}
	if entries, _ := os.ReadDir(filepath.Join(l.stateDir, "rooms")); len(entries) != 0 {
		t.Fatalf("the state directory still holds %v", entries)
	}
	if n := len(l.logs.lines("room not adopted, its directory removed")); n != 2 {
		t.Fatalf("%d rooms reported not adopted, want 2", n)
	}
}

// Fifty lobby deaths and restarts with rooms created and killed in
// between: every time, the room processes that run are exactly the
// rooms listed, no port is listed twice, and a room keeps its port.
func TestKillRestartChurn(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	l := newKeptLobby(t, keptSettings{grace: 30 * time.Second, match: 600 * time.Second, ports: 12})
	known := map[uint32]uint16{}
	seq := uint16(0)
	for cycle := range 50 {
		c := newClient(t, "127.0.0.1", l.lobby)
		rooms := l.adminRooms()
		if len(rooms) > 0 && rng.IntN(3) == 0 { // a room crashes
			pid := rooms[rng.IntN(len(rooms))].PID
			syscall.Kill(pid, syscall.SIGKILL)
			for proc.Alive(pid) {
				time.Sleep(5 * time.Millisecond)
			}
		}
		for range rng.IntN(3) {
			if len(rooms) >= 8 {
				break
			}
			seq++
			r := c.request(compact, createRoom, seq, nil)
			if r.typ != roomCreated {
				t.Fatalf("cycle %d: CREATE answered %#x", cycle, r.typ)
			}
			id, port := r.roomPort(t)
			if _, dup := known[id]; dup {
				t.Fatalf("cycle %d: room id %d handed out twice", cycle, id)
			}
			known[id] = port
		}

		l.kill9()
		l.start()
		listed := l.adminRooms()
		var pids []int
		usedPorts := map[uint16]bool{}
		for _, r := range listed {
			if want, ok := known[r.ID]; !ok || want != r.Port || !r.Adopted {
				t.Fatalf("cycle %d: listed %+v (known port %d, %v)", cycle, r, want, ok)
			}
			if usedPorts[r.Port] {
				t.Fatalf("cycle %d: port %d listed twice: %+v", cycle, r.Port, listed)
			}
			usedPorts[r.Port] = true
			pids = append(pids, r.PID)
		}
		slices.Sort(pids)
		if running := l.rooms(); !slices.Equal(running, pids) {
			t.Fatalf("cycle %d: room processes %v, listed %v", cycle, running, pids)
		}
		// The native list agrees with the table.
		if n := len(c.list(60000)); n != len(listed) {
			t.Fatalf("cycle %d: ROOM_LIST of %d rooms, /rooms of %d", cycle, n, len(listed))
		}
	}
}

// A state directory with garbage in it (files, a stale socket, the socket
// of a process that is no room, an empty room directory) is reported,
// cleaned where it is the lobby's, and never stops the start.
func TestDamagedStateDirIsTolerated(t *testing.T) {
	dir, err := os.MkdirTemp("", "fy")
	if err != nil {
		t.Fatal(err)
	}
	rooms := filepath.Join(dir, "rooms")
	for _, d := range []string{"notaroom", "123", "124", "125"} {
		if err := os.MkdirAll(filepath.Join(rooms, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(rooms, "junk"), []byte("garbage\x00\xff"), 0o600)
	os.WriteFile(filepath.Join(dir, "lock"), []byte("not a lock"), 0o600)
	// A stale socket: nothing listens on it.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(rooms, "123", "plugin1"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	// A live socket of a process that is no room: this one, answering
	// garbage.
	alien, err := net.Listen("unix", filepath.Join(rooms, "124", "plugin2"))
	if err != nil {
		t.Fatal(err)
	}
	defer alien.Close()
	go func() {
		for {
			c, err := alien.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("I am no room\n"))
			c.Close()
		}
	}()

	l := newKeptLobby(t, keptSettings{grace: 5 * time.Second, match: 60 * time.Second, ports: 4, stateDir: dir})
	c := newClient(t, "127.0.0.1", l.lobby)
	if got := c.list(1); len(got) != 0 {
		t.Fatalf("listed %+v", got)
	}
	for _, id := range []uint32{123, 124, 125} {
		if len(l.logsOf("room not adopted, its directory removed", id)) != 1 {
			t.Errorf("room directory %d not reported", id)
		}
		if _, err := os.Stat(filepath.Join(rooms, fmt.Sprint(id))); !os.IsNotExist(err) {
			t.Errorf("room directory %d still there (%v)", id, err)
		}
	}
	if n := len(l.logs.lines("state_dir: not a room directory, ignored")); n != 2 {
		t.Errorf("%d entries reported as no room directory, want 2 (junk, notaroom)", n)
	}
	if !l.logged("room not adopted, its directory removed", map[string]any{"id": 124, "level": "warn"}) {
		t.Error("the socket of a process that is no room is not warned about")
	}
	// The lobby works.
	if r := c.request(compact, createRoom, 2, nil); r.typ != roomCreated {
		t.Fatalf("CREATE answered %#x", r.typ)
	}
}

package tests

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// listLoad keeps sockets asking a lobby for its list, each waiting for
// the answer to its request (or listWait) before it sends the next.
type listLoad struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu         sync.Mutex
	answered   int
	unanswered int
	latencies  []listSample
}

// listSample is one request's send time and how long its answer took.
type listSample struct {
	at      time.Time
	latency time.Duration
}

// listWait is how long a LIST may go unanswered before it counts as
// lost: far above any pause a working lobby makes.
const listWait = 2 * time.Second

func startListLoad(t testing.TB, lobby netip.AddrPort, sockets int, from string) *listLoad {
	t.Helper()
	ld := &listLoad{stop: make(chan struct{})}
	for range sockets {
		c := newClient(t, from, lobby)
		ld.wg.Go(func() { ld.run(c) })
	}
	return ld
}

func (ld *listLoad) run(c *client) {
	for seq := uint16(1); ; seq++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		sent := time.Now()
		if _, err := c.conn.WriteToUDPAddrPort(encode(compact, listRooms, seq, 0, nil), c.to); err != nil {
			ld.count(false, sent)
			continue
		}
		ok := false
		for deadline := sent.Add(listWait); !ok && time.Now().Before(deadline); {
			r, err := c.tryRecv(time.Until(deadline))
			if err != nil || r.typ == 0 {
				break
			}
			ok = r.typ == roomList && r.seq == seq
		}
		ld.count(ok, sent)
		time.Sleep(listPace)
	}
}

// listPace spaces a socket's requests: steady, not a flood (which the
// rate limit would rightly cut).
const listPace = 2 * time.Millisecond

func (ld *listLoad) count(ok bool, sent time.Time) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if ok {
		ld.answered++
		ld.latencies = append(ld.latencies, listSample{sent, time.Since(sent)})
	} else {
		ld.unanswered++
	}
}

// finish stops the load and returns its counts.
func (ld *listLoad) finish() (answered, unanswered int) {
	close(ld.stop)
	ld.wg.Wait()
	return ld.answered, ld.unanswered
}

// A SIGHUP under a steady LIST load from four sockets hands the lobby to a
// new process with no request unanswered: the new one serves on the same
// sockets (UDP lobby, GG2 UDP and TCP, GunZ, admin) and adopted every
// room, and the old one exits 0. A new binary that fails at start, or a
// config that no longer parses, leaves the old process serving, which
// says why.
func TestUpgradeUnderListLoad(t *testing.T) {
	l := newKeptLobby(t, keptSettings{grace: 20 * time.Second, match: 600 * time.Second, ports: 6,
		sections: "[gg2]\nenabled = true\nlisten = \"127.0.0.1:0\"\nlegacy_listen = \"127.0.0.1:0\"\n" +
			"[gunz]\nenabled = true\nlisten = \"127.0.0.1:0\"\n[web]\nlisten = \"127.0.0.1:0\"\n"})
	c := newClient(t, "127.0.0.1", l.lobby)
	for i := range 3 {
		c.request(compact, createRoom, uint16(1+i), nil)
	}
	id := c.list(4)[0].id
	if r := newClient(t, "127.0.0.1", l.lobby).request(compact, joinRoom, 1, joinPayload(id)); r.typ != joinSuccess {
		t.Fatalf("JOIN answered %#x", r.typ)
	}
	before, addrs := c.list(5), l.ready()
	old := l.current()

	load := startListLoad(t, l.lobby, 4, "127.0.0.1")
	time.Sleep(300 * time.Millisecond)
	pid := l.upgrade()
	time.Sleep(300 * time.Millisecond)
	answered, unanswered := load.finish()
	if unanswered != 0 || answered == 0 {
		t.Fatalf("during the upgrade %d LISTs answered, %d not", answered, unanswered)
	}
	if pid == old {
		t.Fatal("the same process serves")
	}
	if now := l.ready(); !slices.Equal(now.Lobby, addrs.Lobby) || now.Admin != addrs.Admin || now.GG2 != addrs.GG2 ||
		now.Legacy != addrs.Legacy || now.Gunz != addrs.Gunz || now.Web != addrs.Web {
		t.Fatalf("the new process serves on %+v, the old one on %+v", now, addrs)
	}
	if after := c.list(6); !slices.Equal(after, before) {
		t.Fatalf("after the upgrade\n%+v\nwant\n%+v", after, before)
	}
	for _, r := range l.adminRooms() {
		if !r.Adopted {
			t.Errorf("/rooms shows %+v", r)
		}
	}
	// The neighbour edges answer from the new process, on their sockets.
	if list := gg2List(t, addrs.GG2, gg2.GG2LobbyUUID); len(list.Servers) != 3 {
		t.Errorf("GG2 list of %d servers", len(list.Servers))
	}
	if own := legacyQuery(t, addrs.Legacy, []byte{1}); len(own) != 3 {
		t.Errorf("legacy list of %d servers", len(own))
	}
	var status statusJSON
	if resp, body := httpGet(t, "http://"+addrs.Web.String()+"/status.json"); resp.StatusCode != 200 || json.Unmarshal([]byte(body), &status) != nil ||
		len(status.Lobbies) != 1 || len(status.Lobbies[0].Servers) != 3 {
		t.Errorf("the new process's /status.json: %s %s", resp.Status, body)
	}
	g, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addrs.Gunz))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Write(gunzHex(t, gunzSeedRequest))
	if gunzRecv(t, g, 5*time.Second) == nil {
		t.Error("no GunZ answer from the new process")
	}

	// A binary that fails at start: the old process serves on.
	good := l.bin + ".good"
	copyFile(t, l.bin, good)
	broken := l.bin + ".broken"
	os.WriteFile(broken, []byte("#!/bin/sh\necho this build is broken >&2\nexit 3\n"), 0o755)
	os.Rename(broken, l.bin)
	l.hupRefused(pid, "exit status 3")

	// A config that no longer parses: refused, the running settings stay.
	os.Rename(good, l.bin)
	cfg, _ := os.ReadFile(l.config)
	os.WriteFile(l.config, []byte(strings.Replace(string(cfg), "[room]", "[room]\nmatch_length = \"soon\"", 1)), 0o600)
	l.hupRefused(pid, "config.toml:")
	l.hupRefused(pid, "match_length")

	// A new process that fails after it took the rooms over (here, a
	// listen address it cannot bind) leaves them running: the old one
	// takes them back, and hears from them again.
	taken, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	listen := fmt.Sprintf("listen = %q", l.lobby.String())
	os.WriteFile(l.config, []byte(strings.Replace(string(cfg), listen,
		fmt.Sprintf("listen = [%q, %q]", l.lobby.String(), taken.LocalAddr().String()), 1)), 0o600)
	adopted := len(l.logs.lines("room adopted"))
	l.hupRefused(pid, "address already in use")
	if n := len(l.logs.lines("room adopted")) - adopted; n != 3 {
		t.Fatalf("the failed process adopted %d rooms, want 3", n)
	}
	if after := c.list(8); !slices.Equal(after, before) {
		t.Fatalf("after a failed takeover\n%+v\nwant\n%+v", after, before)
	}
	match := c.list(9)[1]
	startMatch(t, l.lobby, match.id, netip.AddrPortFrom(l.lobby.Addr(), match.port))
	for seq := uint16(10); byID(c.list(seq))[match.id].state != 2; seq++ {
		if seq > 500 {
			t.Fatal("the old process no longer hears from its rooms")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before = c.list(600)

	// All fixed: the next SIGHUP upgrades.
	os.WriteFile(l.config, cfg, 0o600)
	if l.upgrade() == pid {
		t.Fatal("not upgraded")
	}
	if after := c.list(7); !slices.Equal(after, before) {
		t.Fatalf("after the second upgrade\n%+v\nwant\n%+v", after, before)
	}
}

// hupRefused sends SIGHUP to pid, which must log that the upgrade failed
// for a reason containing why, and serve on.
func (l *keptLobby) hupRefused(pid int, why string) {
	l.t.Helper()
	failed := len(l.logs.lines("upgrade failed, serving on"))
	syscall.Kill(pid, syscall.SIGHUP)
	for deadline := time.Now().Add(keepLimit); len(l.logs.lines("upgrade failed, serving on")) == failed; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.t.Fatalf("no failed upgrade logged\n%s", l.logs)
		}
	}
	line := l.logs.lines("upgrade failed, serving on")[failed]
	if msg := fmt.Sprint(line["error"]); !strings.Contains(msg, why) {
		l.t.Errorf("upgrade failed because %q, want %q in it", msg, why)
	}
	if l.current() != pid || !processRuns(pid) {
		l.t.Fatalf("foyer serve %d gone after a failed upgrade", pid)
	}
	newClient(l.t, "127.0.0.1", l.lobby).list(900) // answered, or the test fails
}

func processRuns(pid int) bool { return syscall.Kill(pid, 0) == nil }

// The deny list changes with a SIGHUP: the new process reads the file, so
// an address taken off the list is served and one put on it gets nothing;
// rooms survive, and the others' LISTs are all answered meanwhile.
func TestDenyListReloads(t *testing.T) {
	s := keptSettings{grace: 20 * time.Second, match: 600 * time.Second, ports: 4, lobbyKeys: `deny = ["127.0.0.2"]`}
	l := newKeptLobby(t, s)
	c := newClient(t, "127.0.0.1", l.lobby)
	id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
	two, three := newClient(t, "127.0.0.2", l.lobby), newClient(t, "127.0.0.3", l.lobby)
	if !denied(two, 3) {
		t.Fatal("127.0.0.2 is answered while denied")
	}
	if len(three.list(1)) != 1 {
		t.Fatal("127.0.0.3 not answered")
	}

	load := startListLoad(t, l.lobby, 2, "127.0.0.1")
	s.lobbyKeys = `deny = ["127.0.0.3"]`
	l.writeConfig(s)
	l.upgrade()
	answered, unanswered := load.finish()
	if unanswered != 0 || answered == 0 {
		t.Fatalf("during the reload %d LISTs answered, %d not", answered, unanswered)
	}
	if rooms := two.list(10); len(rooms) != 1 || rooms[0].id != id {
		t.Fatalf("127.0.0.2, no longer denied, sees %+v", rooms)
	}
	if !denied(three, 3) {
		t.Fatal("127.0.0.3 is answered after being denied")
	}
}

// denied sends n LISTs from c and reports whether none was answered.
func denied(c *client, n int) bool {
	for i := range n {
		c.send(encode(compact, listRooms, uint16(500+i), 0, nil))
		if _, ok := c.recv(quiet); ok {
			return false
		}
	}
	return true
}

// Under systemd (Type=notify, NotifyAccess=main) an upgrade says
// RELOADING=1, then the old process, still the service's main one, names
// the new one (MAINPID=) and says READY=1, and waits until the manager
// has read that (BARRIER=1) before it exits; from then on the new one
// speaks. An upgrade that fails says READY=1 again from the process that
// serves on. Every state comes from the main process of its moment, as
// NotifyAccess=main requires (systemd drops any other): the manager here
// reads each sender's pid as systemd does, and fails the test otherwise.
func TestUpgradeTellsTheServiceManager(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "notify")
	manager, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Close()
	passCred(t, manager)
	l := newKeptLobby(t, keptSettings{grace: 20 * time.Second, match: 600 * time.Second, ports: 4,
		env: []string{"NOTIFY_SOCKET=" + socket}})
	main := l.current()
	next := func(want string) {
		t.Helper()
		state, sender := notified(t, manager)
		t.Logf("got %q from %d", state, sender)
		if sender != main {
			t.Fatalf("the service manager got %q from process %d, not from the main process %d: NotifyAccess=main drops it", state, sender, main)
		}
		if state != want {
			t.Fatalf("the service manager got %q, want %q", state, want)
		}
	}
	next("READY=1")
	pid := l.upgrade()
	next("RELOADING=1")
	next(fmt.Sprintf("MAINPID=%d\nREADY=1", pid))
	next("BARRIER=1")
	main = pid

	good := l.bin + ".good"
	copyFile(t, l.bin, good)
	os.WriteFile(l.bin+".broken", []byte("#!/bin/sh\nexit 3\n"), 0o755)
	os.Rename(l.bin+".broken", l.bin)
	l.hupRefused(pid, "exit status 3")
	next("RELOADING=1")
	next("READY=1")
	os.Rename(good, l.bin)

	l.stop()
	next("STOPPING=1")
}

// passCred has the kernel attach each sender's credentials to what the
// socket reads, as systemd's notification socket does.
func passCred(t *testing.T, c *net.UnixConn) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
}

// notified reads one sd_notify datagram and returns it with its sender's
// pid; a descriptor sent with it (BARRIER=1's) is closed, which is how
// systemd answers a barrier.
func notified(t *testing.T, c *net.UnixConn) (string, int) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(keepLimit))
	buf, oob := make([]byte, 4096), make([]byte, 1024)
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatalf("no state for the service manager: %v", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, m := range msgs {
		if cred, err := unix.ParseUnixCredentials(&m); err == nil {
			pid = int(cred.Pid)
		}
		if fds, err := unix.ParseUnixRights(&m); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
	return string(buf[:n]), pid
}

// A SIGHUP that cannot hand over says why and changes nothing: without
// state_dir the rooms could not follow, and the cluster's embedded NATS
// server holds a port and a store no new process can take.
func TestUpgradeRefusedWhereRoomsCannotFollow(t *testing.T) {
	t.Run("no state_dir", func(t *testing.T) {
		s := startServer(t, "", "")
		c := newClient(t, "127.0.0.1", s.lobby)
		id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
		s.cmd.Process.Signal(syscall.SIGHUP)
		awaitLog(t, s.logs, "upgrade refused: the rooms can follow a new process only with [supervisor] state_dir; nothing changed")
		if rooms := c.list(2); len(rooms) != 1 || rooms[0].id != id {
			t.Fatalf("after the refused upgrade the lobby lists %+v", rooms)
		}
	})
	t.Run("embedded NATS", func(t *testing.T) {
		l := newKeptLobby(t, keptSettings{grace: 20 * time.Second, match: 600 * time.Second, ports: 2,
			sections: fmt.Sprintf("[cluster]\nembedded = \"127.0.0.1:%d\"\nhost = \"solo\"\n", gg2FreePort(t))})
		pid := l.current()
		syscall.Kill(pid, syscall.SIGHUP)
		awaitLog(t, l.logs, "upgrade refused: this host runs the cluster's embedded NATS server, which cannot be handed over; "+
			"upgrades without a gap need NATS run on its own ([cluster] nats); nothing changed")
		if l.current() != pid || !processRuns(pid) {
			t.Fatal("the lobby is gone after a refused upgrade")
		}
		newClient(t, "127.0.0.1", l.lobby).list(1) // answered, or the test fails
	})
}

// A lobby started from a terminal (make run) stops when the terminal
// hangs up (its window closed, its ssh session gone), as what runs in a
// terminal does: the kernel's SIGHUP then asks for no upgrade, and the
// lobby does not stay behind, unseen, holding its ports and its rooms. A
// SIGHUP sent while the terminal is there still asks for one.
func TestTerminalHangupStopsTheServer(t *testing.T) {
	terminal, tty := openPTY(t)
	s := startServerWith(t, func(cmd *exec.Cmd) {
		cmd.Stdin = tty // and the session's terminal
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, 20, bin, "debug", "", "")
	tty.Close() // the server has its own
	c := newClient(t, "127.0.0.1", s.lobby)
	c.request(compact, createRoom, 1, nil).roomPort(t)
	s.cmd.Process.Signal(syscall.SIGHUP)
	awaitLog(t, s.logs, "upgrade refused: the rooms can follow a new process only with [supervisor] state_dir; nothing changed")
	c.list(2) // answered, or the test fails

	terminal.Close() // the terminal hangs up
	select {
	case err := <-s.exit:
		if err != nil {
			t.Fatalf("foyer serve ended with %v as its terminal hung up:\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("foyer serve outlived its terminal:\n%s", s.logs)
	}
	s.killed = true // stopped; the cleanup checks its rooms are gone
	if n := len(s.logs.lines("terminal hung up")); n != 1 {
		t.Errorf("the hangup logged %d times", n)
	}
}

// openPTY opens a pseudo-terminal: terminal is the side a terminal window
// holds (closing it hangs the terminal up), tty the side what runs in it
// reads and writes.
func openPTY(t *testing.T) (terminal, tty *os.File) {
	t.Helper()
	terminal, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { terminal.Close() })
	fd := int(terminal.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlock the other side
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return terminal, tty
}

// changeLoad keeps sockets asking a lobby for rooms and seats, as clients
// do: each sends a CREATE or a JOIN, sends the same request again every
// changeRetry until it is answered, and then asks again with the next
// sequence number.
type changeLoad struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	granted map[byte]int // requests answered with a room, by type
	retried map[byte]int // of them, those answered only after a retry
	// refused lists the requests answered JOIN_FAILED, or with another
	// room than the JOIN asked for; lost those never answered.
	refused, lost []string
}

// changeRetry is how long a client waits for an answer before it sends
// its request again; changeWait how long before it gives up: far above
// any handover.
const (
	changeRetry = 200 * time.Millisecond
	changeWait  = 15 * time.Second
)

func newChangeLoad() *changeLoad {
	return &changeLoad{stop: make(chan struct{}), granted: map[byte]int{}, retried: map[byte]int{}}
}

// creator adds a socket on ip that lists once (a player lists before it
// creates) and then CREATEs rooms, one every pace.
func (ld *changeLoad) creator(t testing.TB, ip string, lobby netip.AddrPort, pace time.Duration) {
	c := newClient(t, ip, lobby)
	c.list(1)
	ld.wg.Go(func() { ld.run(c, createRoom, 0, pace) })
}

// joiner adds a socket on ip that JOINs room id again and again, every
// pace: its seat, held by the first, is refreshed by the others.
func (ld *changeLoad) joiner(t testing.TB, ip string, lobby netip.AddrPort, id uint32, pace time.Duration) {
	c := newClient(t, ip, lobby)
	ld.wg.Go(func() { ld.run(c, joinRoom, id, pace) })
}

func (ld *changeLoad) run(c *client, typ byte, id uint32, pace time.Duration) {
	var payload []byte
	if typ == joinRoom {
		payload = joinPayload(id)
	}
	for seq := uint16(2); ; seq++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		req := encode(compact, typ, seq, 0, payload)
		r, tries := ask(c, req, seq)
		ld.mu.Lock()
		what := fmt.Sprintf("%#x seq %d from %v (%d sends)", typ, seq, c.conn.LocalAddr(), tries)
		switch {
		case r.typ == 0:
			ld.lost = append(ld.lost, what)
		case r.typ == joinFailed || typ == joinRoom && (r.typ != joinSuccess || len(r.payload) != 6 || binary.BigEndian.Uint32(r.payload) != id) ||
			typ == createRoom && r.typ != roomCreated:
			ld.refused = append(ld.refused, fmt.Sprintf("%s answered %#x %x", what, r.typ, r.payload))
		default:
			ld.granted[typ]++
			if tries > 1 {
				ld.retried[typ]++
			}
		}
		ld.mu.Unlock()
		time.Sleep(pace)
	}
}

// ask sends req from c until a reply echoing seq comes, or changeWait
// passes (a zero reply); it returns the reply and how many times req was
// sent.
func ask(c *client, req []byte, seq uint16) (reply, int) {
	deadline := time.Now().Add(changeWait)
	for tries := 1; time.Now().Before(deadline); tries++ {
		if _, err := c.conn.WriteToUDPAddrPort(req, c.to); err != nil {
			return reply{}, tries
		}
		for wait := time.Now().Add(changeRetry); time.Now().Before(wait); {
			r, err := c.tryRecv(time.Until(wait))
			if err != nil || r.typ == 0 {
				break
			}
			if r.seq == seq {
				return r, tries
			}
		}
	}
	return reply{}, 0
}

// finish stops the load and waits for its sockets' last requests.
func (ld *changeLoad) finish() {
	close(ld.stop)
	ld.wg.Wait()
}

// A CREATE or JOIN that reaches a lobby while it hands over to its new
// process is dropped, and the client's retry is answered: by the new
// process, with a room. Under CREATEs from two sockets and JOINs of one
// room from three, across three upgrades, no request is answered
// JOIN_FAILED and none goes unanswered. (The create budgets are raised
// above what the sockets ask: a new process knows none of its sources,
// and a source's first request there is a CREATE.)
func TestUpgradeUnderCreateAndJoinLoad(t *testing.T) {
	l := newKeptLobby(t, keptSettings{grace: 20 * time.Second, match: 600 * time.Second, ports: 80,
		lobbyKeys: keptCreatesUnlimited})
	id, _ := newClient(t, "127.0.0.1", l.lobby).request(compact, createRoom, 1, nil).roomPort(t)

	ld := newChangeLoad()
	for i := range 2 {
		ld.creator(t, fmt.Sprintf("127.8.%d.1", i), l.lobby, 200*time.Millisecond)
	}
	for i := range 3 {
		ld.joiner(t, fmt.Sprintf("127.9.0.%d", 1+i), l.lobby, id, 5*time.Millisecond)
	}
	pids := []int{l.current()}
	for range 3 {
		time.Sleep(300 * time.Millisecond)
		pids = append(pids, l.upgrade())
	}
	time.Sleep(300 * time.Millisecond)
	ld.finish()
	t.Logf("processes %v: %d CREATEs (%d after a retry) and %d JOINs (%d after a retry) answered with a room",
		pids, ld.granted[createRoom], ld.retried[createRoom], ld.granted[joinRoom], ld.retried[joinRoom])
	if len(ld.refused) > 0 || len(ld.lost) > 0 {
		t.Fatalf("across three upgrades %d requests were refused, %d never answered; the first:\n%s",
			len(ld.refused), len(ld.lost), strings.Join(append(ld.refused[:min(len(ld.refused), 5)], ld.lost[:min(len(ld.lost), 5)]...), "\n"))
	}
	if ld.granted[createRoom] == 0 || ld.granted[joinRoom] == 0 {
		t.Fatalf("granted %v: the load did not run", ld.granted)
	}
}

package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// readyLimit bounds every wait of these tests: a guard against hangs,
// never a speed check.
const readyLimit = 30 * time.Second

// readyConfig writes a config whose listeners are given by sections,
// with a room port pool and a JSON log, and returns its path.
func readyConfig(t *testing.T, sections string) string {
	t.Helper()
	first := 6000 + rand.IntN(250)*20
	cfg := fmt.Sprintf("%s\n[supervisor]\nports = \"%d-%d\"\nbind = \"127.0.0.1\"\n\n[log]\nlevel = \"debug\"\nformat = \"json\"\n",
		sections, first, first+19)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readyServe is one `foyer serve` started by a test; a serve still
// running when the test ends is killed.
type readyServe struct {
	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
	err  error // Wait's; set before done closes
}

func readyStart(t *testing.T, cmd *exec.Cmd) *readyServe {
	t.Helper()
	s := &readyServe{cmd: cmd, logs: &logBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// wait expects serve to exit cleanly: SIGTERM has been sent.
func (s *readyServe) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		if s.err != nil {
			t.Fatalf("foyer serve did not exit cleanly on SIGTERM: %v\n%s", s.err, s.logs)
		}
	case <-time.After(readyLimit):
		t.Fatalf("foyer serve ignored SIGTERM:\n%s", s.logs)
	}
}

// readyJSON is the line --ready-json prints.
type readyJSON struct {
	Foyer        string           `json:"foyer"`
	Version      int              `json:"version"`
	FoyerVersion string           `json:"foyer_version"`
	PID          int              `json:"pid"`
	Lobby        []netip.AddrPort `json:"lobby"`
	Admin        netip.AddrPort   `json:"admin"`
	GG2          netip.AddrPort   `json:"gg2"`
	Legacy       netip.AddrPort   `json:"gg2_legacy"`
	Gunz         netip.AddrPort   `json:"gunz"`
	Web          netip.AddrPort   `json:"web"`
}

// readyServeJSON starts cmd, a `foyer serve --ready-json`, and returns it
// with its ready line, decoded and as written, and the rest of its stdout
// once it exits.
func readyServeJSON(t *testing.T, cmd *exec.Cmd) (*readyServe, readyJSON, string, <-chan string) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := readyStart(t, cmd)
	lines := make(chan string, 1)
	rest := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		more, _ := io.ReadAll(r)
		rest <- string(more)
	}()
	var line string
	select {
	case line = <-lines:
	case <-s.done:
		t.Fatalf("foyer serve exited (%v) before its ready line:\n%s", s.err, s.logs)
	case <-time.After(readyLimit):
		t.Fatalf("no ready line within %v:\n%s", readyLimit, s.logs)
	}
	var ready readyJSON
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return s, ready, line, rest
}

// Every listener on port 0: the ready line says which port each got, and
// each answers there, in its own protocol.
func TestServeReadyJSONNamesEveryListener(t *testing.T) {
	path := readyConfig(t, `[lobby]
listen = ["127.0.0.1:0", "127.0.0.1:0"]

[gg2]
enabled = true
listen = "127.0.0.1:0"
legacy_listen = "127.0.0.1:0"

[gunz]
enabled = true
listen = "127.0.0.1:0"

[web]
listen = "127.0.0.1:0"

[admin]
listen = "127.0.0.1:0"
`)
	cmd := exec.Command(bin, "serve", "--ready-json", "--config", path)
	s, ready, line, rest := readyServeJSON(t, cmd)
	if ready.Foyer != "ready" || ready.Version != 1 || ready.PID != cmd.Process.Pid || len(ready.Lobby) != 2 {
		t.Fatalf("ready line %s: want foyer ready, version 1, pid %d, two lobby addresses", line, cmd.Process.Pid)
	}
	for name, ap := range map[string]netip.AddrPort{"lobby 1": ready.Lobby[0], "lobby 2": ready.Lobby[1],
		"admin": ready.Admin, "gg2": ready.GG2, "gg2_legacy": ready.Legacy, "gunz": ready.Gunz, "web": ready.Web} {
		if ap.Addr() != netip.MustParseAddr("127.0.0.1") || ap.Port() == 0 {
			t.Errorf("ready line %s: %s is %v, want 127.0.0.1 and the port chosen", line, name, ap)
		}
	}
	if ready.Lobby[0] == ready.Lobby[1] {
		t.Errorf("ready line %s: both lobby sockets on one port", line)
	}
	// The version is the one foyer --version says.
	if v := cliOK(t, "--version"); !strings.HasPrefix(v, "foyer "+ready.FoyerVersion+" (go") {
		t.Errorf("ready line %s: foyer --version says %q", line, v)
	}
	// Every listener says where it listens before "ready" is logged. The
	// log comes through a pipe of its own and may lag the ready line on
	// stdout: wait for it.
	awaitLog(t, s.logs, "ready")
	var listening []string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if m["message"] == "ready" {
			break
		}
		if _, ok := m["listen"]; ok {
			listening = append(listening, m["message"].(string))
		}
	}
	if len(listening) != 5 {
		t.Errorf("before ready, %d listeners said where they listen (%q), want the lobby, admin, gg2, gunz and web:\n%s", len(listening), listening, s.logs)
	}
	if t.Failed() {
		t.FailNow()
	}

	for i, ap := range ready.Lobby {
		newClient(t, "127.0.0.1", ap).list(uint16(i + 1)) // fails the test without a ROOM_LIST
	}
	if code, body := adminGet(t, "http://"+ready.Admin.String()+"/healthz"); code != 200 {
		t.Errorf("admin /healthz at %s: %d %s", ready.Admin, code, body)
	}
	gg2List(t, ready.GG2, gg2.GG2LobbyUUID) // fails the test without a list
	legacyQuery(t, ready.Legacy, []byte{1}) // likewise
	if resp, _ := httpGet(t, "http://"+ready.Web.String()+"/status.json"); resp.StatusCode != 200 {
		t.Errorf("web /status.json at %s: %s", ready.Web, resp.Status)
	}
	u, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(ready.Gunz))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.Write(gunzHex(t, gunzSeedRequest)); err != nil {
		t.Fatal(err)
	}
	if gunzRecv(t, u, readyLimit) == nil {
		t.Errorf("the gunz locator at %s did not answer", ready.Gunz)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	if more := <-rest; more != "" {
		t.Errorf("stdout after the ready line: %q", more)
	}
}

// With NOTIFY_SOCKET set, as systemd sets it for Type=notify, serve sends
// READY=1 once the lobby answers, keeps the socket from its rooms, and
// sends STOPPING=1 on SIGTERM.
func TestServeNotifiesTheServiceManager(t *testing.T) {
	for name, socket := range map[string]string{
		"path":     filepath.Join(t.TempDir(), "notify"),
		"abstract": fmt.Sprintf("@foyer-test-notify-%d-%d", os.Getpid(), rand.Uint64()),
	} {
		t.Run(name, func(t *testing.T) { notifyCheck(t, socket) })
	}
}

func notifyCheck(t *testing.T, socket string) {
	manager, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Close()
	port := freeUDPPort(t)
	path := readyConfig(t, fmt.Sprintf("[lobby]\nlisten = \"127.0.0.1:%d\"\n\n[admin]\nlisten = \"\"\n", port))
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+socket)
	s := readyStart(t, cmd)
	states := make(chan string, 8)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := manager.Read(buf)
			if err != nil {
				close(states)
				return
			}
			states <- string(buf[:n])
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-states:
			if got != want {
				t.Fatalf("the service manager got %q, want %q\n%s", got, want, s.logs)
			}
		case <-time.After(readyLimit):
			t.Fatalf("no %s within %v:\n%s", want, readyLimit, s.logs)
		}
	}

	next("READY=1")
	// One LIST, from a connected socket: had READY=1 come before the
	// lobby's socket was bound, the host would answer port unreachable.
	lobby := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(lobby))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(encode(compact, listRooms, 1, 0, nil)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(readyLimit))
	buf := make([]byte, 1<<16)
	n, err := c.Read(buf)
	if errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("READY=1 came before the lobby listened on %s", lobby)
	}
	if err != nil {
		t.Fatalf("no answer to the LIST after READY=1: %v\n%s", err, s.logs)
	}
	if r, err := decode(buf[:n]); err != nil || r.typ != roomList {
		t.Fatalf("answer to the LIST after READY=1: %x (%v)", buf[:n], err)
	}

	// A room is a child of serve: it must not see the socket, or it could
	// speak for the service.
	room := newClient(t, "127.0.0.1", lobby)
	id, _ := room.request(compact, createRoom, 2, nil).roomPort(t)
	srv := &server{t: t, cmd: cmd, lobby: lobby, logs: s.logs}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", srv.instancePID(id)))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte("NOTIFY_SOCKET=")) {
		t.Errorf("room %d inherited NOTIFY_SOCKET", id)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	next("STOPPING=1")
	s.wait(t)
	select { // every datagram serve sent is queued by now
	case extra, ok := <-states:
		if ok {
			t.Errorf("the service manager got %q after STOPPING=1", extra)
		}
	case <-time.After(quiet):
	}
}

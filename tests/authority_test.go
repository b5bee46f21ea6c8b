package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/supervisor"
)

// attackResult is what tests/testdata/roomattack did, as it writes it.
type attackResult struct {
	UID, GID int
	Groups   []int
	Env      []string
	Fds      map[int]string
	Caps     map[string]string
	Root     string
	Signal   map[int]string
	Write    map[string]string
	Read     map[string]string
	Squat    map[int]string
}

// A room's game server, Foyer's lobby run as root: every room runs as a
// user of its own (neither root nor another room's), with no group, and
// an environment of PATH, HOME and Foyer's room variables only, no
// capability and no descriptor but its standard streams. The
// hostile server of one room (tests/testdata/roomattack) cannot signal
// the lobby or the other room, write into state_dir, read the token
// file, the config or the other room's directory; the three free ports of
// the pool it binds (on IPv6 loopback alone, where each server started on
// them would fail to bind) do not fail the next CREATE, which skips them,
// logs the room that holds each, and /rooms and /metrics show them held.
func TestContainRoomHasNoAuthority(t *testing.T) {
	requiretest.Root(t) // rooms run as users of their own only where the lobby is root
	tools := roomsSee(t)
	attack := filepath.Join(tools, "roomattack")
	build := exec.Command("go", "build", "-o", attack, "./testdata/roomattack")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the attacking server: %v\n%s", err, out)
	}
	chmod(t, attack, 0o755)

	state := shortDir(t)
	secrets := roomsSee(t) // where only the files' own modes keep the rooms out
	token := filepath.Join(secrets, "admin-token")
	if r := cliRun(t, nil, "token", "--file", token); r.code != 0 {
		t.Fatal(r.stderr)
	}
	tok, _ := os.ReadFile(token)
	first := 6000 + 20*int(time.Now().UnixNano()%250)
	config := filepath.Join(secrets, "config.toml")
	// The modes the Debian package gives them (the foyer group is root's
	// here): the token root:foyer 0640, the config 0640.
	os.WriteFile(config, fmt.Appendf(nil, `[lobby]
listen = "127.0.0.1:0"
rate = 1000
burst = 2000
create_rate = 100
create_burst = 100

[supervisor]
ports = "%d-%d"
max_instances = 8
rooms_per_network = 8
bind = "127.0.0.1"
state_dir = %q
command = [%q, "{port}"]
probe = "none"

[admin]
listen = "127.0.0.1:0"
token_file = %q

[log]
level = "debug"
format = "json"
`, first, first+9, state, attack, token), 0o640)
	cmd := exec.Command(bin, "serve", "--ready-json", "--config", config)
	s, ready, _, _ := readyServeJSON(t, cmd)
	admin := func(page string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+ready.Admin.String()+page, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lobby log:\n%s", s.logs)
		}
	})
	c := newClient(t, "127.0.0.1", ready.Lobby[0])
	victim, vport := c.request(compact, createRoom, 1, nil).roomPort(t)
	attacker, aport := c.request(compact, createRoom, 2, nil).roomPort(t)
	srv := &server{t: t, cmd: cmd, lobby: ready.Lobby[0], logs: s.logs}
	victimPID := srv.instancePID(victim)
	victimServer := childOf(t, victimPID)
	rooms := filepath.Join(state, "rooms")
	victimDir, attackerDir := filepath.Join(rooms, strconv.Itoa(int(victim))), filepath.Join(rooms, strconv.Itoa(int(attacker)))

	// The pool hands ports out in order: the attacker takes the next
	// three, which the next CREATE would get.
	squat := []int{first + 2, first + 3, first + 4}
	if vport != uint16(first) || aport != uint16(first+1) {
		t.Fatalf("the rooms got ports %d and %d, want %d and %d", vport, aport, first, first+1)
	}
	orders, _ := json.Marshal(map[string]any{
		"signal": []int{cmd.Process.Pid, victimPID, victimServer},
		"write":  []string{filepath.Join(state, "planted"), filepath.Join(rooms, "planted"), filepath.Join(victimDir, "planted")},
		"read":   []string{token, config, victimDir, rooms, filepath.Join(state, "lock")},
		"squat":  squat,
	})
	if err := os.WriteFile(filepath.Join(attackerDir, "home", "orders"), orders, 0o644); err != nil {
		t.Fatal(err)
	}
	var res attackResult
	for deadline := time.Now().Add(keepLimit); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(attackerDir, "home", "result")); err == nil {
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attacking server did not report:\n%s", s.logs)
		}
	}
	t.Logf("the attacking room: %+v", res)

	// Users of their own, no group, an environment of its own.
	victimUID := statusUID(t, victimPID)
	if res.UID < 1879048192 || res.UID == victimUID || victimUID < 1879048192 || res.GID != res.UID || len(res.Groups) != 0 {
		t.Errorf("the rooms run as uid %d and %d (gid %d, groups %v); want users of room_users, each its own, no group",
			res.UID, victimUID, res.GID, res.Groups)
	}
	// Nothing of root's: no capability, no way back to uid 0; and no
	// descriptor of the lobby's (the room's first process was executed
	// through one: see roomuser.ProgramFD).
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if res.Caps[set] != "0000000000000000" {
			t.Errorf("the room's server has %s %q, want none", set, res.Caps[set])
		}
	}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", victimPID)); err != nil {
		t.Fatal(err)
	} else if uid := strconv.Itoa(victimUID); !strings.Contains(string(status), fmt.Sprintf("\nUid:\t%s\t%s\t%s\t%s\n", uid, uid, uid, uid)) ||
		!strings.Contains(string(status), fmt.Sprintf("\nGid:\t%s\t%s\t%s\t%s\n", uid, uid, uid, uid)) ||
		!strings.Contains(string(status), "\nCapPrm:\t0000000000000000\n") {
		t.Errorf("the victim room's first process is not its user alone, without capabilities:\n%s", status)
	}
	if !strings.Contains(res.Root, "operation not permitted") {
		t.Errorf("the room's setuid(0): %q, want operation not permitted", res.Root)
	}
	for fd, what := range res.Fds {
		// Go's runtime opens its poller's, and its cgroup's CPU limit
		// files, before main.
		if what != "anon_inode:[eventpoll]" && what != "anon_inode:[eventfd]" && !strings.HasPrefix(what, "/sys/fs/cgroup/") {
			t.Errorf("the room's server started with descriptor %d (%s)", fd, what)
		}
	}
	for _, kv := range res.Env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"PATH", "HOME", "FOYER_ROOM_DIR"}, name) {
			t.Errorf("the room's server got %s from its lobby", kv)
		}
	}
	for pid, err := range res.Signal {
		if !strings.Contains(err, "operation not permitted") {
			t.Errorf("the room signalled process %d: %q, want operation not permitted", pid, err)
		}
	}
	for path, err := range res.Write {
		if !strings.Contains(err, "permission denied") {
			t.Errorf("the room wrote %s: %q, want permission denied", path, err)
		}
	}
	for path, err := range res.Read {
		if !strings.Contains(err, "permission denied") {
			t.Errorf("the room read %s: %q, want permission denied", path, err)
		}
	}
	for port, err := range res.Squat {
		if err != "" {
			t.Fatalf("the room could not squat port %d: %s", port, err)
		}
	}

	// The next CREATE skips what the room squats (which a bind of
	// 127.0.0.1 alone would not see, and which would fail each server
	// started on it), and says who holds it.
	next, nport := c.request(compact, createRoom, 3, nil).roomPort(t)
	if next == 0 || slices.Contains(squat, int(nport)) {
		t.Fatalf("the CREATE after the squat got room %d port %d", next, nport)
	}
	for _, port := range squat {
		awaitLine(t, s.logs, "port quarantined", func(m map[string]any) bool {
			return m["port"] == float64(port) && m["held_by_room"] == float64(attacker)
		})
	}
	var table struct {
		HeldPorts []struct {
			Port uint16
			Room uint32
			UID  int
		} `json:"held_ports"`
	}
	if err := json.Unmarshal([]byte(admin("/rooms")), &table); err != nil {
		t.Fatal(err)
	}
	if len(table.HeldPorts) != 3 || slices.ContainsFunc(table.HeldPorts, func(h struct {
		Port uint16
		Room uint32
		UID  int
	}) bool {
		return h.Room != attacker || h.UID != res.UID || !slices.Contains(squat, int(h.Port))
	}) {
		t.Errorf("/rooms held_ports %+v, want the three ports squatted by room %d", table.HeldPorts, attacker)
	}
	if !strings.Contains(admin("/metrics"), "\nfoyer_supervisor_ports_held{holder=\"room\"} 3\n") {
		t.Errorf("/metrics does not count three ports held by a room")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}

// statusUID is the effective user id of process pid.
func statusUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\nUid:")
	f := strings.Fields(rest)
	uid, _ := strconv.Atoi(f[1])
	return uid
}

// Where Foyer is not root, rooms share its user, and its start says so.
func TestContainRoomsShareAnUnprivilegedLobbysUser(t *testing.T) {
	requiretest.Root(t) // the lobby is run as nobody with setpriv
	dir := roomsSee(t)
	foyer := copyBinaries(t, dir)
	chmod(t, foyer, 0o755)
	chmod(t, filepath.Join(dir, supervisor.RoomProgram), 0o755)
	config := filepath.Join(dir, "config.toml")
	os.WriteFile(config, []byte("[lobby]\nlisten = \"127.0.0.1:0\"\n[supervisor]\nports = \"6000-6019\"\n[admin]\nlisten = \"\"\n[log]\nformat = \"json\"\n"), 0o644)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", foyer, "serve", "--ready-json", "--config", config)
	cmd.Dir = "/"
	s, _, _, _ := readyServeJSON(t, cmd)
	const msg = "rooms run as this process's user, which is not root: " +
		"they share its authority (its files, its processes); run Foyer as root for a user per room"
	awaitLog(t, s.logs, msg)
	if lines := s.logs.lines(msg); len(lines) != 1 || lines[0]["uid"] != float64(65534) {
		t.Errorf("the start of a lobby run as nobody does not say that rooms share its user:\n%s", s.logs)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}

package tests

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/webtest"
)

// operateLimit bounds every wait of the operator tests: a guard against
// hangs, never a speed check.
const operateLimit = 20 * time.Second

// chattyServer is a foreign game server run without a probe: it says
// which room and port it has, then a line a second until it is stopped.
const chattyServer = `command = ["/bin/sh", "-c", "echo room {room_id} up on port {port}; trap 'echo bye; exit 0' TERM; while :; do echo tick; sleep 1; done"]
probe = "none"
`

// healthz is the status and first line of s's /healthz.
func healthz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, body := webtest.Fetch(t, nil, http.MethodGet, base+"/healthz")
	line, _, _ := strings.Cut(body, "\n")
	return resp.StatusCode, line
}

// TestOperatorStopsARoomAndReadsItsLog: `foyer logs` prints what a
// foreign server printed, while it runs and after it ended; `foyer stop`
// ends the room gracefully (the server sees SIGTERM), reaped as
// "operator".
func TestOperatorStopsARoomAndReadsItsLog(t *testing.T) {
	s := startServer(t, "", chattyServer)
	admin := s.adminBase(t)
	c := newClient(t, "127.0.0.1", s.lobby)
	id, port := c.request(compact, createRoom, 1, nil).roomPort(t)
	first := fmt.Sprintf("room %d up on port %d", id, port)
	for deadline := time.Now().Add(operateLimit); ; time.Sleep(100 * time.Millisecond) {
		r := cliRun(t, nil, "logs", "--admin", admin, fmt.Sprint(id))
		if r.code == 0 && strings.HasPrefix(r.stdout, first+"\ntick\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("foyer logs %d: exit %d\n%s%s\nwant it to start %q", id, r.code, r.stdout, r.stderr, first)
		}
	}
	if out := cliOK(t, "stop", "--admin", admin, fmt.Sprint(id)); out != fmt.Sprintf("stopping room %d\n", id) {
		t.Errorf("foyer stop: %q", out)
	}
	// Durations in the log carry their unit.
	for deadline := time.Now().Add(operateLimit); len(s.logs.lines("room stopping")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no \"room stopping\" line:\n%s", s.logs)
		}
	}
	if g, _ := s.logs.lines("room stopping")[0]["grace"].(string); !regexp.MustCompile(`^[0-9.]+(ms|s|m)`).MatchString(g) {
		t.Errorf("room stopping: grace %v, want a duration with its unit", s.logs.lines("room stopping")[0]["grace"])
	}
	if m := awaitReaped(t, s.logs, id); m["cause"] != "operator" || m["exit_code"] != float64(0) {
		t.Errorf("room %d reaped as %v, exit code %v; want operator, 0 (the server stopped on SIGTERM)", id, m["cause"], m["exit_code"])
	}
	if rooms := c.list(2); slices.ContainsFunc(rooms, func(r room) bool { return r.id == id }) {
		t.Errorf("room %d still listed after its stop: %+v", id, rooms)
	}
	// The log outlives the room, to the server's last word, with the
	// keeper's own lines on the server among it.
	out := cliOK(t, "logs", "--admin", admin, fmt.Sprint(id))
	if !strings.HasPrefix(out, first+"\n") || !strings.Contains(out, "\nbye\n") || !strings.Contains(out, `"message":"server exited"`) {
		t.Errorf("foyer logs %d after its end:\n%s", id, out)
	}
	cliFails(t, 1, []string{"room 12345", "no process on this host"}, "stop", "--admin", admin, "12345")
	cliFails(t, 1, []string{"no log of room 12345"}, "logs", "--admin", admin, "12345")
}

// TestOperatorDrainsAHost: `foyer drain` makes the host start no room
// (a CREATE is refused, and the log says why) while the room it runs
// plays on; /healthz and /metrics say so for a load balancer; `foyer
// drain --wait` returns once the last room ended; `foyer drain --off`
// takes rooms again.
func TestOperatorDrainsAHost(t *testing.T) {
	s := startServer(t, "", chattyServer)
	admin := s.adminBase(t)
	c := newClient(t, "127.0.0.1", s.lobby)
	id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
	if code, line := healthz(t, admin); code != 200 || line != "ok" {
		t.Fatalf("/healthz before the drain: %d %q", code, line)
	}

	if out := cliOK(t, "drain", "--admin", admin); out != "draining: 1 room plays on\n" {
		t.Errorf("foyer drain: %q", out)
	}
	if code, line := healthz(t, admin); code != 503 || line != "draining: 1 room plays on" {
		t.Errorf("/healthz while draining: %d %q", code, line)
	}
	if got := s.metrics(t)["foyer_draining"]; got != 1 {
		t.Errorf("foyer_draining = %v while draining", got)
	}
	if r := c.request(compact, createRoom, 2, nil); r.typ != joinFailed {
		t.Fatalf("CREATE while draining answered %#x", r.typ)
	}
	for deadline := time.Now().Add(operateLimit); !slices.ContainsFunc(s.logs.lines("refused"), func(m map[string]any) bool {
		return m["op"] == "create" && m["reason"] == "draining"
	}); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no refused CREATE logged with the reason draining:\n%s", s.logs)
		}
	}
	if rooms := c.list(3); !slices.ContainsFunc(rooms, func(r room) bool { return r.id == id }) {
		t.Errorf("room %d no longer listed while draining: %+v", id, rooms)
	}

	// The last room ends; drain --wait sees the host drained.
	cliOK(t, "stop", "--admin", admin, fmt.Sprint(id))
	out := cliOK(t, "drain", "--admin", admin, "--wait", "20s")
	if !strings.HasSuffix(out, "drained: no room left\n") {
		t.Errorf("foyer drain --wait: %q", out)
	}
	if code, line := healthz(t, admin); code != 503 || line != "drained: no room left" {
		t.Errorf("/healthz drained: %d %q", code, line)
	}

	if out := cliOK(t, "drain", "--off", "--admin", admin); out != "taking rooms\n" {
		t.Errorf("foyer drain --off: %q", out)
	}
	if code, line := healthz(t, admin); code != 200 || line != "ok" {
		t.Errorf("/healthz after the drain: %d %q", code, line)
	}
	if got := s.metrics(t)["foyer_draining"]; got != 0 {
		t.Errorf("foyer_draining = %v after the drain", got)
	}
	if r := c.request(compact, createRoom, 4, nil); r.typ != roomCreated {
		t.Errorf("CREATE after the drain answered %#x", r.typ)
	}
}

// TestRoomWithoutProbeEndsAtItsLifetime: a foreign server that reports
// nothing, so that it can never be seen empty, still ends at max_lifetime,
// and the reap names the cause.
func TestRoomWithoutProbeEndsAtItsLifetime(t *testing.T) {
	s := startServer(t, "", chattyServer+"max_lifetime = \"2s\"\n")
	c := newClient(t, "127.0.0.1", s.lobby)
	id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
	if m := awaitReaped(t, s.logs, id); m["cause"] != "lifetime" {
		t.Errorf("room %d reaped as %v, want lifetime", id, m["cause"])
	}
}

// TestEmbeddedClusterHostStopsCleanly: a host running the embedded NATS
// server, stopped by SIGTERM, leaves the cluster without a warning: a
// clean stop is no lost session.
func TestEmbeddedClusterHostStopsCleanly(t *testing.T) {
	nats, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := nats.Addr().String()
	nats.Close()
	// Where the rooms' users reach their directories, as in /var/lib.
	state, err := os.MkdirTemp("", "fy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	s := startServer(t, "", fmt.Sprintf("max_instances = 4\nstate_dir = %q\n\n[cluster]\nhost = \"a\"\nembedded = %q\n", state, addr))
	for deadline := time.Now().Add(operateLimit); len(s.logs.lines("cluster table written")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the host never joined its own cluster:\n%s", s.logs)
		}
	}
	// A session younger than a second ends quietly anyway (it would not
	// be retried at once): let it age, as a host's does.
	time.Sleep(1500 * time.Millisecond)
	s.stop()
	if len(s.logs.lines("cluster left")) != 1 {
		t.Errorf("no \"cluster left\" line:\n%s", s.logs)
	}
	for _, level := range []string{"warn", "error"} {
		for _, m := range s.logs.levels(level) {
			if m["component"] == "cluster" {
				t.Errorf("a clean stop logged at %s: %v", level, m)
			}
		}
	}
}

// awaitRoomLog waits until `foyer logs` of room id holds want, and returns it.
func awaitRoomLog(t *testing.T, admin string, id uint32, want string) string {
	t.Helper()
	for deadline := time.Now().Add(operateLimit); ; time.Sleep(100 * time.Millisecond) {
		r := cliRun(t, nil, "logs", "--admin", admin, fmt.Sprint(id))
		if r.code == 0 && strings.Contains(r.stdout, want) {
			return r.stdout
		}
		if time.Now().After(deadline) {
			t.Fatalf("foyer logs %d: exit %d\n%s%s\nwant %q in it", id, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestDataDirOutlivesRooms: with data_dir, a foreign server's HOME is
// kept from one room to the next (as DDNet keeps its ranks there), while
// each room has a working directory of its own.
func TestDataDirOutlivesRooms(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, "", fmt.Sprintf(`command = ["/bin/sh", "-c", 'n=$(cat "$HOME/runs" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$HOME/runs"; echo "run $n home $HOME dir $PWD"; exec sleep 60']
probe = "none"
room_users = ""
data_dir = %q
`, data))
	admin := s.adminBase(t)
	c := newClient(t, "127.0.0.1", s.lobby)
	runLine := regexp.MustCompile(`run (\d+) home (\S+) dir (\S+)`)
	var homes, dirs []string
	for i, seq := range []uint16{1, 2} {
		id, _ := c.request(compact, createRoom, seq, nil).roomPort(t)
		m := runLine.FindStringSubmatch(awaitRoomLog(t, admin, id, "run "))
		if m == nil || m[1] != fmt.Sprint(i+1) {
			t.Fatalf("room %d is run %v of the command, want %d", id, m, i+1)
		}
		homes, dirs = append(homes, m[2]), append(dirs, m[3])
		cliOK(t, "stop", "--admin", admin, fmt.Sprint(id))
		awaitReaped(t, s.logs, id)
	}
	if homes[0] != homes[1] || !strings.HasPrefix(homes[0], data+"/") || dirs[0] == dirs[1] || strings.HasPrefix(dirs[0], data) {
		t.Errorf("HOMEs %q and working directories %q: want one HOME under %s, and a directory of each room's own", homes, dirs, data)
	}
}

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command that does not exist stops the start with the file, the line
// and the reason, instead of failing every CREATE later.
func TestMissingCommandRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte("[supervisor]\ncommand = [\"/nonexistent/game\", \"{port}\"]\nprobe = \"none\"\n"), 0o600)
	out, err := exec.Command(bin, "serve", "--config", path).CombinedOutput()
	want := `config.toml:2: [supervisor] command ["/nonexistent/game", "{port}"]: command "/nonexistent/game": stat /nonexistent/game: no such file or directory`
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("foyer serve: %v\n%s\nwant %q", err, out, want)
	}
}

// A game server run without a probe fails the CREATE, and the log says
// why in words an operator can act on, with what the server printed.
func TestGameServerWithoutProbeSaysSo(t *testing.T) {
	s := startServer(t, "", `command = ["/bin/sh", "-c", "echo 'I engine: running on unix-linux-amd64'; sleep 60"]`)
	c := newClient(t, "127.0.0.1", s.lobby)
	if r := c.request(compact, createRoom, 1, nil); r.typ != joinFailed {
		t.Fatalf("CREATE answered %#x", r.typ)
	}
	awaitSpawnFailure(t, s, `this looks like a game server that is not a Foyer instance: set probe = \"teeworlds\" or \"none\" (it printed \"I engine: running on unix-linux-amd64\")`)
}

// A server that exits before it is ready is tried on another port, twice,
// and the reason carries the last lines it printed.
func TestServerExitingBeforeReadyIsRetried(t *testing.T) {
	s := startServer(t, "", `command = ["/bin/sh", "-c", "echo cannot load map {port} >&2; exit 2"]
probe = "endpoint"`) // never ready: exiting always comes first, however slow the machine
	c := newClient(t, "127.0.0.1", s.lobby)
	if r := c.request(compact, createRoom, 1, nil); r.typ != joinFailed {
		t.Fatalf("CREATE answered %#x", r.typ)
	}
	// The log comes through a pipe and may lag the answer: the failure,
	// logged after the retries, says the lines before it are in.
	awaitSpawnFailure(t, s, `exited with status 2 before it was ready; its last lines: \"cannot load map `)
	retries := s.logs.lines("server not ready, trying another port")
	if len(retries) != 2 || retries[0]["port"] == retries[1]["port"] {
		t.Fatalf("retried %d times: %v", len(retries), retries)
	}
	awaitSpawnFailure(t, s, fmt.Sprintf(`exited with status 2 before it was ready; its last lines: \"cannot load map %v\"`, s.logs.lines("spawn failed")[0]["port"]))
}

// awaitSpawnFailure waits for the "spawn failed" line and checks that its
// error contains want (as JSON escapes it).
func awaitSpawnFailure(t *testing.T, s *server, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(s.logs.String(), "\n") {
			if strings.Contains(line, `"message":"spawn failed"`) {
				if !strings.Contains(line, want) {
					t.Fatalf("spawn failed: %s\nwant %s", line, want)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no spawn failure logged:\n%s", s.logs)
		}
	}
}

// A room's program starts as a shell would start it, with SIGPIPE's
// default action: the lobby and the keeper above it survive a log reader
// that exits without ignoring SIGPIPE, which the program would inherit
// (and, say, a pipeline of its own would no longer end as it should).
func TestRoomProgramStartsWithSIGPIPEsDefault(t *testing.T) {
	s := startServer(t, "", `command = ["/bin/sh", "-c", "grep SigIgn /proc/self/status >&2; exit 2"]
probe = "endpoint"`) // its last lines come in the failure's reason
	c := newClient(t, "127.0.0.1", s.lobby)
	if r := c.request(compact, createRoom, 1, nil); r.typ != joinFailed {
		t.Fatalf("CREATE answered %#x", r.typ)
	}
	awaitSpawnFailure(t, s, `its last lines: \"SigIgn:`)
	m := regexp.MustCompile(`SigIgn:[^0-9a-f]*([0-9a-f]{16})`).FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no SigIgn line in the log:\n%s", s.logs)
	}
	ignored, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if pipe := uint64(1) << (syscall.SIGPIPE - 1); ignored&pipe != 0 {
		t.Fatalf("the room's program started with SIGPIPE ignored (SigIgn %s)", m[1])
	}
}

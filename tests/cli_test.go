package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/foyertest"
)

// cliLimit bounds one run of a client command: a liveness bound, never a
// speed check.
const cliLimit = 30 * time.Second

// cliResult is one finished run of the foyer binary.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cliRun runs the foyer binary with args, under the command prefix (such
// as "ip netns exec NS") when one is given, and waits for it.
func cliRun(t testing.TB, prefix []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliLimit)
	defer cancel()
	argv := append(append(append([]string(nil), prefix...), bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("foyer %s: still running after %v\n%s%s", strings.Join(args, " "), cliLimit, r.stdout, r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("foyer %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// cliOK runs foyer and fails the test unless it exits 0.
func cliOK(t testing.TB, args ...string) string {
	t.Helper()
	r := cliRun(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("foyer %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// cliFails runs foyer, expects exit code code and a one-line reason on
// stderr holding every part, and returns the line.
func cliFails(t testing.TB, code int, parts []string, args ...string) string {
	t.Helper()
	r := cliRun(t, nil, args...)
	line := strings.TrimSuffix(r.stderr, "\n")
	if r.code != code || r.stdout != "" || line == "" || strings.Contains(line, "\n") {
		t.Fatalf("foyer %s: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr",
			strings.Join(args, " "), r.code, r.stdout, r.stderr, code)
	}
	for _, p := range parts {
		if !strings.Contains(line, p) {
			t.Errorf("foyer %s: reason %q does not say %q", strings.Join(args, " "), line, p)
		}
	}
	return line
}

// cliLobby starts `foyer serve` (the binary under test) with the harness.
func cliLobby(t testing.TB, opts ...foyertest.Option) *foyertest.Lobby {
	t.Helper()
	return foyertest.StartBinary(t, append([]foyertest.Option{foyertest.Binary(bin)}, opts...)...)
}

// cliSeatJSON is the --json output of create and join.
type cliSeatJSON struct {
	Lobby string `json:"lobby"`
	Room  uint32 `json:"room"`
	Port  uint16 `json:"port"`
	Addr  string `json:"addr"`
}

// cliRoomsJSON is the --json output of rooms.
type cliRoomsJSON struct {
	Lobby string `json:"lobby"`
	Rooms []struct {
		ID         uint32 `json:"id"`
		State      string `json:"state"`
		Players    int    `json:"players"`
		MaxPlayers int    `json:"max_players"`
		Port       uint16 `json:"port"`
	} `json:"rooms"`
}

func cliDecode(t testing.TB, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, out)
	}
}

var cliCreated = regexp.MustCompile(`^created room (\d+), port (\d+): game address 127\.0\.0\.1:(\d+)\n$`)

func TestCLIRoomsCreateJoin(t *testing.T) {
	l := cliLobby(t, foyertest.MaxPlayers(3))
	addr := l.Addr().String()
	if out := cliOK(t, "rooms", addr); out != "no rooms on "+addr+"\n" {
		t.Errorf("rooms of an empty lobby: %q", out)
	}

	m := cliCreated.FindStringSubmatch(cliOK(t, "create", addr))
	if m == nil || m[2] != m[3] {
		t.Fatalf("create printed %q", m)
	}
	id, _ := strconv.ParseUint(m[1], 10, 32)
	port, _ := strconv.ParseUint(m[2], 10, 16)
	if first, last := l.Ports(); port < uint64(first) || port > uint64(last) {
		t.Errorf("room port %d outside the pool %d-%d", port, first, last)
	}

	var seat cliSeatJSON
	cliDecode(t, cliOK(t, "join", "--json", addr, m[1]), &seat)
	want := cliSeatJSON{Lobby: addr, Room: uint32(id), Port: uint16(port), Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	if seat != want {
		t.Errorf("join --json: %+v, want %+v", seat, want)
	}
	if out := cliOK(t, "join", addr, m[1]); out != fmt.Sprintf("joined room %d, port %d: game address 127.0.0.1:%d\n", id, port, port) {
		t.Errorf("join printed %q", out)
	}

	// Two seats held: the creator's and this host's joins (one host, one
	// port per run, so the two joins are two players).
	table := cliOK(t, "rooms", addr)
	rows := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(rows) != 2 || strings.Join(strings.Fields(rows[0]), " ") != "ROOM STATE PLAYERS PORT" ||
		strings.Join(strings.Fields(rows[1]), " ") != fmt.Sprintf("%d waiting 3/3 %d", id, port) {
		t.Errorf("rooms table:\n%s", table)
	}
	var listed cliRoomsJSON
	cliDecode(t, cliOK(t, "rooms", "--json", addr), &listed)
	if listed.Lobby != addr || len(listed.Rooms) != 1 || listed.Rooms[0].ID != uint32(id) ||
		listed.Rooms[0].State != "waiting" || listed.Rooms[0].Players != 3 || listed.Rooms[0].MaxPlayers != 3 ||
		listed.Rooms[0].Port != uint16(port) {
		t.Errorf("rooms --json: %+v", listed)
	}

	// The room is full now: a fourth seat is refused.
	cliFails(t, 1, []string{"join " + addr + " room " + m[1], "JOIN_FAILED", "the room is full"}, "join", addr, m[1])
}

func TestCLIFailuresExitWithOneLine(t *testing.T) {
	l := cliLobby(t)
	addr := l.Addr().String()
	// The lobby does not say why; join reads its list and says what it
	// shows.
	cliFails(t, 1, []string{"join " + addr + " room 999999", "JOIN_FAILED", "no such room"}, "join", addr, "999999")

	// A socket that reads nothing and answers nothing: no port-unreachable
	// either, so the client can only time out.
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	quietAddr := silent.LocalAddr().String()
	cliFails(t, 1, []string{"list " + quietAddr, "timeout", "ROOM_LIST", "2 attempts of 100ms"},
		"rooms", "--timeout", "100ms", "--attempts", "2", quietAddr)
	cliFails(t, 1, []string{"create " + quietAddr, "timeout"}, "create", "--timeout", "100ms", "--attempts", "1", quietAddr)

	// Nothing bound at all: the host says so, and the client reports it.
	closed := freeUDPPort(t)
	cliFails(t, 1, []string{fmt.Sprintf("127.0.0.1:%d", closed), "nothing listens"},
		"rooms", "--timeout", "100ms", "--attempts", "2", fmt.Sprintf("127.0.0.1:%d", closed))

	// Usage mistakes exit 2 and say how to get help.
	r := cliRun(t, nil, "join")
	if r.code != 2 || !strings.Contains(r.stderr, "needs [ADDR] ROOM") || !strings.Contains(r.stderr, "--help") {
		t.Errorf("join without a room: exit %d, %q", r.code, r.stderr)
	}
	r = cliRun(t, nil, "join", addr)
	if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprintf("room %q is not a room id", addr)) {
		t.Errorf("join with an address and no room: exit %d, %q", r.code, r.stderr)
	}
	r = cliRun(t, nil, "join", addr, "lobby")
	if r.code != 2 || !strings.Contains(r.stderr, `room "lobby" is not a room id`) {
		t.Errorf("join of a room that is no number: exit %d, %q", r.code, r.stderr)
	}
}

func TestCLIHelpHasAnExample(t *testing.T) {
	for _, cmd := range []string{"rooms", "create", "join", "watch", "play", "serve"} {
		out := cliOK(t, cmd, "--help")
		if !strings.Contains(out, "Usage: foyer "+cmd) || !strings.Contains(out, "Example:\n  foyer "+cmd) {
			t.Errorf("foyer %s --help:\n%s", cmd, out)
		}
	}
}

func TestCLIWatchCount(t *testing.T) {
	l := cliLobby(t)
	addr := l.Addr().String()
	var seat cliSeatJSON
	cliDecode(t, cliOK(t, "create", "--json", addr), &seat)
	out := cliOK(t, "watch", "--count", "2", "--interval", "100ms", addr)
	frames := strings.Split(out, "\n\n")
	if len(frames) != 2 || strings.Contains(out, "\x1b[") {
		t.Fatalf("watch --count 2 to a pipe: want two plain frames:\n%q", out)
	}
	row := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +waiting +1/4 +%d +>?\d+s$`, seat.Room, seat.Port))
	for i, f := range frames {
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) != 3 || !strings.Contains(lines[0], addr) || !strings.HasPrefix(lines[1], "ROOM") || !row.MatchString(lines[2]) {
			t.Errorf("frame %d:\n%s", i+1, f)
		}
	}
}

// cliPlayer is one `foyer play` process, its output read line by line.
type cliPlayer struct {
	cmd   *exec.Cmd
	lines chan string
	out   *logBuffer
	done  chan struct{}
	err   error
}

func cliStartPlayer(t *testing.T, args ...string) *cliPlayer {
	t.Helper()
	return cliStartPlayerIn(t, nil, args...)
}

// cliStartPlayerIn is cliStartPlayer with foyer run under the command
// prefix, such as ip netns exec.
func cliStartPlayerIn(t *testing.T, prefix []string, args ...string) *cliPlayer {
	t.Helper()
	argv := append(append(append([]string(nil), prefix...), bin, "play"), args...)
	p := &cliPlayer{cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan string, 64),
		out: &logBuffer{}, done: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.out.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
		close(p.lines)
		io.Copy(io.Discard, stdout)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// line waits for the next line of output that matches re.
func (p *cliPlayer) line(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(cliLimit)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("play ended without a line matching %v:\n%s", re, p.out)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %v within %v:\n%s", re, cliLimit, p.out)
		}
	}
}

// wait waits for the player to exit and returns its output.
func (p *cliPlayer) wait(t *testing.T) (int, string) {
	t.Helper()
	for range p.lines {
	}
	select {
	case <-p.done:
	case <-time.After(cliLimit):
		t.Fatalf("play still running after %v:\n%s", cliLimit, p.out)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode(), p.out.String()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0, p.out.String()
}

func TestCLIPlayTwoPlayersToGameEnd(t *testing.T) {
	l := cliLobby(t, foyertest.MaxPlayers(2), foyertest.Countdown(time.Second), foyertest.MatchDuration(time.Second))
	addr := l.Addr().String()
	first := cliStartPlayer(t, "--ready", "--ping", "200ms", addr)
	m := first.line(t, regexp.MustCompile(`^created room (\d+), port \d+: others join with 'foyer play \S+ (\d+)'$`))
	if m[1] != m[2] {
		t.Fatalf("created room %s, but tells others to join %s", m[1], m[2])
	}
	code := first.line(t, regexp.MustCompile(`^its join code is ([A-Z]{6}): 'foyer play \S+ ([A-Z]{6})' joins it too$`))
	if code[1] != code[2] {
		t.Fatalf("the room's code is %s, but others are told to join %s", code[1], code[2])
	}
	second := cliStartPlayer(t, "--ready", "--ping", "200ms", addr, code[1])
	for i, p := range []*cliPlayer{first, second} {
		code, out := p.wait(t)
		for _, want := range []string{"in room " + m[1] + ": slot", "ready: waiting for the others",
			"starting in 1", "game started: a 1 s match", "game over: time is up"} {
			if !strings.Contains(out, want) {
				t.Errorf("player %d: no %q in its output", i+1, want)
			}
		}
		if code != 0 {
			t.Errorf("player %d: exit %d", i+1, code)
		}
		if t.Failed() {
			t.Logf("player %d:\n%s", i+1, out)
		}
	}
}

// A CREATE the lobby rate-limits is dropped without an answer: the command
// says on stderr what it waits for and that it asks again, and stdout holds
// the seat alone. The bucket holds one CREATE and refills in 4 s, so the
// second create's first attempt is dropped and its second, 4 s later, is
// served.
func TestCLICreateRateLimitedSaysWhatItWaitsFor(t *testing.T) {
	s := startServer(t, "create_rate = 0.25\ncreate_burst = 1", "")
	addr := s.lobby.String()
	cliOK(t, "create", addr)
	r := cliRun(t, nil, "create", "--json", "--timeout", "4s", addr)
	var seat cliSeatJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &seat) != nil || seat.Lobby != addr {
		t.Fatalf("rate-limited create: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	want := fmt.Sprintf("foyer create: waiting for ROOM_CREATED or JOIN_FAILED from %s (attempt 1 of 3, up to 4s each); the lobby may be rate-limiting this host\n", addr) +
		"foyer create: no answer in 4s; asking again (attempt 2 of 3)\n"
	if r.stderr != want {
		t.Fatalf("rate-limited create: stderr\n%s\nwant\n%s", r.stderr, want)
	}
}

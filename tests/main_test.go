// Package tests runs the real foyer binary as a child process and talks
// to it over real UDP on loopback.
package tests

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/supervisor"

	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/tmptest"
	"github.com/foyerlobby/foyer/internal/udptest"
)

// bin is the foyer binary TestMain builds once, foyer-room beside it.
var bin string

// roomTags are the build tags of foyer-room, as the Makefile's
// ROOM_TAGS: grpcnotrace leaves out gRPC's request tracing (x/net/trace,
// and the HTML templates it links), which a room never serves.
const roomTags = "grpcnotrace"

// TestMain builds the binary once, runs the tests, and checks that they
// left no process and no cgroup behind.
func TestMain(m *testing.M) {
	// The new process of an upgrade is its predecessor's child; once that
	// one has exited it is this process's, whose tests wait for it (and
	// for how it ends) as for any child.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "child subreaper:", err)
		os.Exit(1)
	}
	doneTemps := tmptest.Own()
	dir, err := os.MkdirTemp("", "foyer-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// foyer serve runs its rooms from foyer-room beside it, as make
	// build leaves them.
	bin = filepath.Join(dir, "foyer")
	for _, b := range [][]string{
		{"-o", bin, "../cmd/foyer"},
		{"-tags", roomTags, "-o", filepath.Join(dir, supervisor.RoomProgram), "../cmd/foyer-room"},
	} {
		build := exec.Command("go", append([]string{"build"}, b...)...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the Makefile builds them
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", b[len(b)-1]+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// Every lobby and room of this run inherits the mark, so that the end
	// can tell them from other processes.
	os.Setenv(runEnv, strconv.Itoa(os.Getpid()))
	cgroupsBefore := foyerCgroups()
	stopWatch := watchLobbyTrees()
	code := m.Run()
	stopWatch()
	os.RemoveAll(dir)
	if left := leftovers(cgroupsBefore); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: the tests left behind:", strings.Join(left, ", "))
		code = 1
	}
	os.Exit(doneTemps(code))
}

// runEnv marks the processes of this test run, by their environment.
const runEnv = "FOYER_TESTS_RUN"

// leftoverWait is how long the end of the run gives the last rooms to go.
const leftoverWait = 10 * time.Second

// leftovers returns what the tests left behind: the processes that carry
// this run's mark (killed now), and the cgroup subtrees of lobbies that
// are not in before, once they have had leftoverWait to go. A lobby's
// subtree is foyer-PID-N (a lobby without state_dir, process PID) or
// foyer-sHASH (one with): the former is left if its lobby is gone, the
// latter if no process is in it, since concurrent tests of other
// packages make theirs too.
func leftovers(before map[string]bool) []string {
	mark := []byte(runEnv + "=" + strconv.Itoa(os.Getpid()) + "\x00")
	var left []string
	for deadline := time.Now().Add(leftoverWait); ; time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && bytes.Contains(env, mark) && proc.Alive(pid) {
				pids = append(pids, pid)
				left = append(left, "process "+e.Name())
			}
		}
		for dir := range foyerCgroups() {
			if !before[dir] && !inUse(dir) {
				left = append(left, "cgroup "+dir+treeMaker(filepath.Base(dir)))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return left
		}
	}
}

// lobbyTrees are the command lines of the lobbies foyer-PID-N subtrees
// were seen with, so that a subtree left behind names the test whose
// lobby made it (its config lies in the test's directory).
var lobbyTrees sync.Map

// watchLobbyTrees notes the command line of the lobby of every subtree
// that appears, until the returned function is called.
func watchLobbyTrees() (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			for dir := range foyerCgroups() {
				name := filepath.Base(dir)
				if _, seen := lobbyTrees.Load(name); seen {
					continue
				}
				if m := lobbyTree.FindStringSubmatch(name); m != nil && m[1] != "" {
					if cmdline, err := os.ReadFile("/proc/" + m[1] + "/cmdline"); err == nil {
						lobbyTrees.Store(name, strings.Join(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), " "))
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-ended }
}

// treeMaker says which lobby made the subtree name, if it was seen.
func treeMaker(name string) string {
	if cmdline, ok := lobbyTrees.Load(name); ok {
		return " (made by " + cmdline.(string) + ")"
	}
	return ""
}

// lobbyTree matches the name of a lobby's cgroup subtree.
var lobbyTree = regexp.MustCompile(`^foyer-(?:(\d+)-\d+|s[0-9a-f]{16})$`)

// foyerCgroups returns the lobbies' cgroup subtrees of this run. A lobby
// makes its subtree beside its own cgroup, which is this process's (or
// below it): a subtree found elsewhere in any hierarchy is that of a
// lobby of another run on this machine, in a cgroup of its own (another
// job whose processes the machine's cgroups keep apart, in some
// hierarchies only), and so are the subtrees of the same name in the
// other hierarchies.
func foyerCgroups() map[string]bool {
	own, _ := requiretest.CgroupDirs()
	out := map[string]bool{}
	foreign := map[string]bool{}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+2 || (f[sep+1] != "cgroup" && f[sep+1] != "cgroup2") {
			continue
		}
		filepath.WalkDir(f[4], func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && lobbyTree.MatchString(d.Name()) {
				if !slices.ContainsFunc(own, func(dir string) bool { return strings.HasPrefix(p, dir+"/") }) {
					foreign[d.Name()] = true
				}
				out[p] = true
				return filepath.SkipDir
			}
			return nil
		})
	}
	for p := range out {
		if foreign[filepath.Base(p)] {
			delete(out, p)
		}
	}
	return out
}

// inUse reports whether the lobby of the cgroup subtree dir may still
// use it: it runs (foyer-PID-N), or a process is in the subtree.
func inUse(dir string) bool {
	if m := lobbyTree.FindStringSubmatch(filepath.Base(dir)); m != nil && m[1] != "" {
		pid, _ := strconv.Atoi(m[1])
		return proc.Alive(pid)
	}
	busy := false
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if b, rerr := os.ReadFile(filepath.Join(p, "cgroup.procs")); err == nil && d.IsDir() && rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			busy = true
		}
		return nil
	})
	return busy
}

// Message types of the native protocol.
const (
	listRooms   = 0x40
	roomList    = 0x41
	createRoom  = 0x42
	roomCreated = 0x43
	joinRoom    = 0x44
	joinSuccess = 0x45
	joinFailed  = 0x46
)

// framing is the header layout of a request: compact (8 bytes) or the
// original game's legacy 17-byte header.
type framing int

const (
	compact framing = iota
	legacy
)

// encode builds a request by hand from the protocol notes, independently
// of package packet, so the tests check the lobby against the spec and
// can build every malformed shape.
func encode(f framing, typ byte, seq uint16, tick uint32, payload []byte) []byte {
	var b []byte
	if f == legacy {
		b = append(b, 0xA3, 0x5F, 0xC8, 0x1D, 0x01, 0x01, typ)
		b = binary.BigEndian.AppendUint16(b, seq)
		b = binary.BigEndian.AppendUint32(b, tick)
	} else {
		b = append(b, 0x01, typ)
		b = binary.BigEndian.AppendUint16(b, seq)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	return appendChecksum(append(b, payload...))
}

// appendChecksum appends the CRC-32 (IEEE) of b, big-endian.
func appendChecksum(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func joinPayload(room uint32) []byte { return binary.BigEndian.AppendUint32(nil, room) }

// reply is a decoded server message.
type reply struct {
	framing framing
	typ     byte
	seq     uint16
	tick    uint32
	payload []byte
}

// decode checks a server datagram strictly: framing, direction, sizes,
// CRC.
func decode(b []byte) (reply, error) {
	var r reply
	if len(b) < 4 || crc32.ChecksumIEEE(b[:len(b)-4]) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return r, errors.New("bad CRC or short")
	}
	h := b
	if b[0] == 0xA3 {
		if len(b) < 21 || !bytes.Equal(b[:5], []byte{0xA3, 0x5F, 0xC8, 0x1D, 0x01}) {
			return r, errors.New("bad legacy header")
		}
		r.framing, r.tick, h = legacy, binary.BigEndian.Uint32(b[9:]), b[5:9]
		h = append(h[:4:4], b[13:17]...)
	}
	if len(h) < 8 || h[0] != 0x02 {
		return r, errors.New("not a server message")
	}
	r.typ, r.seq = h[1], binary.BigEndian.Uint16(h[2:])
	size, orig := binary.BigEndian.Uint16(h[4:]), binary.BigEndian.Uint16(h[6:])
	hl := 8
	if r.framing == legacy {
		hl = 17
	}
	if size != orig || len(b) != hl+int(size)+4 {
		return r, errors.New("bad sizes")
	}
	r.payload = b[hl : hl+int(size)]
	return r, nil
}

// room is one ROOM_LIST entry.
type room struct {
	id           uint32
	players, max uint16
	port         uint16
	state        byte
}

func (r reply) rooms(t testing.TB) []room {
	t.Helper()
	if r.typ != roomList || len(r.payload) < 2 {
		t.Fatalf("not a ROOM_LIST: %#x %x", r.typ, r.payload)
	}
	// The fields of an entry add up to 11 bytes, as in the golden
	// ROOM_LIST (the notes' "13 bytes per room" counts otherwise).
	const entry = 11
	n := int(binary.BigEndian.Uint16(r.payload))
	if len(r.payload) != 2+entry*n {
		t.Fatalf("ROOM_LIST of %d rooms has %d bytes", n, len(r.payload))
	}
	out := make([]room, n)
	for i := range out {
		e := r.payload[2+entry*i:]
		out[i] = room{binary.BigEndian.Uint32(e), binary.BigEndian.Uint16(e[4:]), binary.BigEndian.Uint16(e[6:]),
			binary.BigEndian.Uint16(e[8:]), e[10]}
	}
	return out
}

// roomPort reads ROOM_CREATED / JOIN_SUCCESS.
func (r reply) roomPort(t testing.TB) (uint32, uint16) {
	t.Helper()
	if (r.typ != roomCreated && r.typ != joinSuccess) || len(r.payload) != 6 {
		t.Fatalf("not ROOM_CREATED or JOIN_SUCCESS: %#x %x", r.typ, r.payload)
	}
	return r.roomPortOf()
}

// roomPortOf reads the room and port of a ROOM_CREATED or JOIN_SUCCESS
// the caller checked.
func (r reply) roomPortOf() (uint32, uint16) {
	return binary.BigEndian.Uint32(r.payload), binary.BigEndian.Uint16(r.payload[4:])
}

// client is one UDP socket talking to the lobby.
type client struct {
	t    testing.TB
	conn *net.UDPConn
	to   netip.AddrPort
}

func newClient(t testing.TB, ip string, to netip.AddrPort) *client {
	t.Helper()
	return &client{t: t, conn: udptest.Listen(t, ip), to: to}
}

func (c *client) send(b []byte) {
	c.t.Helper()
	udptest.Send(c.t, c.conn, c.to, b)
}

// recv waits up to wait for one datagram; ok is false if none came.
func (c *client) recv(wait time.Duration) (reply, bool) {
	c.t.Helper()
	r, err := c.tryRecv(wait)
	if err != nil {
		c.t.Fatal(err)
	}
	return r, r.typ != 0
}

// tryRecv is recv for other goroutines than the test's: it reports
// instead of failing. A zero reply means none came in time.
func (c *client) tryRecv(wait time.Duration) (reply, error) {
	b, err := udptest.Read(c.conn, c.to, wait)
	if err != nil || b == nil {
		return reply{}, err
	}
	r, err := decode(b)
	if err != nil {
		return reply{}, fmt.Errorf("reply %x: %w", b, err)
	}
	return r, nil
}

// request sends one request and returns the reply that echoes it;
// CREATE may take as long as an instance takes to start.
func (c *client) request(f framing, typ byte, seq uint16, payload []byte) reply {
	c.t.Helper()
	r, err := c.exchange(f, typ, seq, payload)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// exchange is request for other goroutines than the test's.
func (c *client) exchange(f framing, typ byte, seq uint16, payload []byte) (reply, error) {
	tick := uint32(0)
	if f == legacy {
		tick = rand.Uint32()
	}
	if _, err := c.conn.WriteToUDPAddrPort(encode(f, typ, seq, tick, payload), c.to); err != nil {
		return reply{}, err
	}
	r, err := c.tryRecv(15 * time.Second)
	switch {
	case err != nil:
		return r, err
	case r.typ == 0:
		return r, fmt.Errorf("no reply to %#x seq %d", typ, seq)
	case r.seq != seq || r.framing != f || r.tick != tick:
		return r, fmt.Errorf("reply (framing %d seq %d tick %d) does not echo request (framing %d seq %d tick %d)",
			r.framing, r.seq, r.tick, f, seq, tick)
	}
	return r, nil
}

func (c *client) list(seq uint16) []room {
	c.t.Helper()
	return c.request(compact, listRooms, seq, nil).rooms(c.t)
}

// quiet is how long a test waits to conclude that no reply is coming; each
// such check is followed by a request that must be answered.
const quiet = 300 * time.Millisecond

// server is one running `foyer serve`.
type server struct {
	t     testing.TB
	cmd   *exec.Cmd
	lobby netip.AddrPort
	ports [2]int // the instance port pool
	logs  *logBuffer
	exit  chan error
	// killed: the test killed it with SIGKILL (kill9), and stop has no
	// exit status to check.
	killed bool
}

// logBuffer keeps the server's stderr (JSON lines) for the test to read.
// While stall is held it takes nothing: the server's stderr, a pipe, fills
// up and stays full, as a paused terminal's does. Once gone is set it
// refuses what it is given, and says so in cut: the copy from the pipe
// then stops and closes the pipe's end, as a log reader that exits does.
type logBuffer struct {
	logtest.Buffer
	stall     sync.RWMutex
	gone, cut atomic.Bool
}

var errLogReaderGone = errors.New("the log's reader is gone")

func (l *logBuffer) Write(p []byte) (int, error) {
	l.stall.RLock()
	defer l.stall.RUnlock()
	if l.gone.Load() {
		l.cut.Store(true)
		return 0, errLogReaderGone
	}
	return l.Buffer.Write(p)
}

// lines returns the JSON log lines whose message is msg.
func (l *logBuffer) lines(msg string) []map[string]any { return l.where("message", msg) }

// levels returns the JSON log lines at level.
func (l *logBuffer) levels(level string) []map[string]any { return l.where("level", level) }

// awaitLog waits until the server logged msg.
func awaitLog(t testing.TB, logs *logBuffer, msg string) {
	t.Helper()
	awaitLine(t, logs, msg, func(map[string]any) bool { return true })
}

// awaitReaped waits for the "room reaped" line of room id and returns it.
func awaitReaped(t testing.TB, logs *logBuffer, id uint32) map[string]any {
	t.Helper()
	return awaitLine(t, logs, "room reaped", func(m map[string]any) bool { return m["id"] == float64(id) })
}

// awaitLine waits until the server logged a line msg that match accepts,
// and returns the first. The log comes through a pipe of its own, and may
// lag what the server answered.
func awaitLine(t testing.TB, logs *logBuffer, msg string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(keepLimit); ; time.Sleep(20 * time.Millisecond) {
		lines := logs.lines(msg)
		if i := slices.IndexFunc(lines, match); i >= 0 {
			return lines[i]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q line as wanted within %v:\n%s", msg, keepLimit, logs)
		}
	}
}

// where returns the JSON log lines whose field key is value.
func (l *logBuffer) where(key, value string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m[key] == value {
			out = append(out, m)
		}
	}
	return out
}

// freeUDPPort returns a loopback UDP port free a moment ago (see
// freePort).
func freeUDPPort(t testing.TB) int {
	t.Helper()
	return int(freePort(t, true, false))
}

// startServer writes a config (the lobby and instance sections are filled
// in, extra is appended inside [lobby] ... as given; the admin pages are on
// a free loopback port) and runs foyer serve
// until the test ends, then checks that SIGTERM makes it exit 0. It logs
// at debug level, for the test to read.
func startServer(t testing.TB, lobbyExtra, supervisorExtra string) *server {
	t.Helper()
	return startServerLogging(t, "debug", lobbyExtra, supervisorExtra)
}

// startServerLogging is startServer logging at level: a benchmark logs
// at info, as a host does, so that the lines debug writes per request do
// not weigh on what it measures. With wrap, the command runs under it
// (e.g. taskset).
func startServerLogging(t testing.TB, level, lobbyExtra, supervisorExtra string, wrap ...string) *server {
	t.Helper()
	return startServerBinary(t, bin, level, lobbyExtra, supervisorExtra, wrap...)
}

// startServerBinary is startServerLogging running binary, the foyer of
// another build, for a benchmark to compare with.
func startServerBinary(t testing.TB, binary, level, lobbyExtra, supervisorExtra string, wrap ...string) *server {
	t.Helper()
	return startServerOf(t, 20, binary, level, lobbyExtra, supervisorExtra, wrap...)
}

// startServerOf is startServerBinary with a pool of n room ports.
func startServerOf(t testing.TB, n int, binary, level, lobbyExtra, supervisorExtra string, wrap ...string) *server {
	t.Helper()
	return startServerWith(t, nil, n, binary, level, lobbyExtra, supervisorExtra, wrap...)
}

// startServerWith is startServerOf with prep, when set, given the command
// before it starts (its standard input, its session).
func startServerWith(t testing.TB, prep func(*exec.Cmd), n int, binary, level, lobbyExtra, supervisorExtra string, wrap ...string) *server {
	t.Helper()
	// A pool of n ports in 6000-10999: below the kernel's ephemeral range
	// (client sockets) and away from the other packages' test pools.
	first := 6000 + rand.IntN(5000/n)*n
	if !strings.Contains(supervisorExtra, "rooms_per_network") {
		// Every test player is a loopback address, most of them
		// 127.0.0.1: one network. The door tests set the quota.
		supervisorExtra = "rooms_per_network = 1000\n" + supervisorExtra
	}
	// The lobby's port is the kernel's choice, which the log says: a port
	// picked free and bound later may be taken in between.
	cfg := fmt.Sprintf(`[lobby]
listen = "127.0.0.1:0"
%s
[supervisor]
ports = "%d-%d"
bind = "127.0.0.1"
%s
[admin]
listen = "127.0.0.1:0"
[log]
level = %q
format = "json"
`, lobbyExtra, first, first+n-1, supervisorExtra, level)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, logs: &logBuffer{}, exit: make(chan error, 1), ports: [2]int{first, first + n - 1}}
	argv := append(wrap, binary, "serve", "--config", path)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stderr = s.logs
	if prep != nil {
		prep(s.cmd)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exit <- s.cmd.Wait() }()
	t.Cleanup(s.stop)
	s.waitReady()
	return s
}

// waitReady learns the lobby's address from its log, then polls LIST
// until the lobby answers.
func (s *server) waitReady() {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	s.lobby = s.listening(s.t, "lobby listening", deadline)
	c := newClient(s.t, "127.0.0.1", s.lobby)
	for seq := uint16(0); time.Now().Before(deadline); seq++ {
		c.send(encode(compact, listRooms, seq, 0, nil))
		if _, ok := c.recv(100 * time.Millisecond); ok {
			return
		}
		select {
		case err := <-s.exit:
			s.t.Fatalf("foyer serve exited early (%v):\n%s", err, s.logs)
		default:
		}
	}
	s.t.Fatalf("the lobby never answered:\n%s", s.logs)
}

// kill9 kills the server with SIGKILL and waits until it is gone. A
// lobby killed so leaves the temporary directory of its rooms, if it kept
// them there, for the next lobby started to remove; the test may start
// none, so it removes the directory itself once it has run.
func (s *server) kill9() {
	s.t.Helper()
	s.cmd.Process.Kill()
	<-s.exit
	s.killed = true
	pid := s.cmd.Process.Pid
	s.t.Cleanup(func() {
		for _, d := range supervisor.TempDirs(pid) {
			os.RemoveAll(d)
		}
	})
}

// stop sends SIGTERM: the server must stop its instances and exit 0.
func (s *server) stop() {
	s.t.Helper()
	if !s.killed {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.exit:
			if err != nil {
				s.t.Errorf("foyer serve did not exit cleanly on SIGTERM: %v\n%s", err, s.logs)
			}
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			s.t.Errorf("foyer serve ignored SIGTERM:\n%s", s.logs)
		}
		s.killed = true // stopped: a second stop has nothing to do
	}
	for _, m := range s.logs.lines("room created") {
		if pid, ok := m["pid"].(float64); ok && proc.Alive(int(pid)) {
			s.t.Errorf("instance pid %d outlived the server", int(pid))
		}
	}
}

// metrics returns the samples of the server's /metrics page by series.
func (s *server) metrics(t testing.TB) map[string]float64 {
	t.Helper()
	return adminMetrics(t, s.adminBase(t))
}

// adminBase is the URL of the server's admin listener.
func (s *server) adminBase(t testing.TB) string {
	t.Helper()
	return "http://" + s.listening(t, "admin listening", time.Now().Add(10*time.Second)).String()
}

// listening is the address a listener of the server gives in its log
// line msg once it listens ("listen": one address, or a list whose first
// is taken). It polls the log until then, failing the test if the
// server exits first or deadline passes.
func (s *server) listening(t testing.TB, msg string, deadline time.Time) netip.AddrPort {
	t.Helper()
	for time.Now().Before(deadline) {
		for _, m := range s.logs.lines(msg) {
			listen := m["listen"]
			if many, ok := listen.([]any); ok && len(many) > 0 {
				listen = many[0]
			}
			ap, err := netip.ParseAddrPort(fmt.Sprint(listen))
			if err != nil {
				t.Fatalf("foyer serve says %q at %v", msg, m["listen"])
			}
			return ap
		}
		select {
		case err := <-s.exit:
			t.Fatalf("foyer serve exited early (%v):\n%s", err, s.logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("foyer serve never logged %q:\n%s", msg, s.logs)
	return netip.AddrPort{}
}

// instancePID is the pid of room id's instance, from its "room created"
// line: as soon as it forked.
func (s *server) instancePID(id uint32) int {
	s.t.Helper()
	return pidOf(s.loggedLine(id, "room created"))
}

// readyPID is the pid of room id's instance once its game is ready: a
// room in play, not one still starting. A room handed out while it
// starts says so in its "room created" line ("starting"), and is ready at
// its "room ready" line.
func (s *server) readyPID(id uint32) int {
	s.t.Helper()
	m := s.loggedLine(id, "room created")
	if m["starting"] == true {
		m = s.loggedLine(id, "room ready")
	}
	return pidOf(m)
}

// loggedLine waits for the line msg of room id that names a pid, and
// returns it.
func (s *server) loggedLine(id uint32, msg string) map[string]any {
	s.t.Helper()
	return awaitLine(s.t, s.logs, msg, func(m map[string]any) bool { return m["id"] == float64(id) && pidOf(m) > 0 })
}

// pidOf is the pid a log line names, 0 if none.
func pidOf(m map[string]any) int {
	pid, _ := m["pid"].(float64)
	return int(pid)
}

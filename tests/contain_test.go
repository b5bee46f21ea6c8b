package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
)

// noCgroupsEnv turns cgroups off in foyer serve, for the tests of the
// fallback.
const noCgroupsEnv = "FOYER_TEST_NO_CGROUPS"

// containModes are the ways rooms run: in cgroups, and as process groups
// with foyer serve their child subreaper (the fallback of hosts without
// cgroups), forced by noCgroupsEnv.
var containModes = []struct {
	name string
	env  []string
}{{"cgroups", nil}, {"fallback", []string{noCgroupsEnv + "=1"}}}

// markerSeq numbers markers.
var markerSeq atomic.Uint32

// marker returns a number, unique to this test process, to put in the
// command line of a process a room starts, so that the process can be
// found in /proc and checked gone. It is a valid number of seconds for
// sleep(1): about 250 years.
func marker() string { return fmt.Sprintf("7%07d%03d", os.Getpid(), markerSeq.Add(1)) }

// escape is the [supervisor] section of the issue that brought cgroups:
// a server (exec driver) that puts a process, sleep m, in a session of
// its own, and then becomes a sleep on its room's port.
func escape(m string) string {
	return fmt.Sprintf("command = [\"/bin/sh\", \"-c\", \"setsid sleep %s & exec sleep 1000 {port}\"]\nprobe = \"none\"\n", m)
}

// escapee waits for the process sleep m, in a session of its own.
func escapee(t *testing.T, m string) int {
	t.Helper()
	for deadline := time.Now().Add(keepLimit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids := sleeping(m); len(pids) == 1 {
			if sid, err := unix.Getsid(pids[0]); err == nil && sid == pids[0] {
				return pids[0]
			}
		}
	}
	t.Fatalf("no escapee sleep %s", m)
	return 0
}

// sleeping returns the live processes running "sleep m".
func sleeping(m string) []int {
	pids, _ := proc.Matching(func(_ int, cmdline []byte) bool { return string(cmdline) == "sleep\x00"+m+"\x00" })
	return pids
}

// treeDirs are the directories of the rooms' cgroup subtree that the
// lobby logged at its start; none without cgroups.
func treeDirs(t *testing.T, logs *logBuffer) []string {
	t.Helper()
	lines := logs.lines("rooms contained in cgroups")
	if len(lines) == 0 {
		return nil
	}
	s, _ := lines[0]["cgroups"].(string)
	var dirs []string
	for _, m := range regexp.MustCompile(`v[12] (/\S+) \(`).FindAllStringSubmatch(s, -1) {
		dirs = append(dirs, m[1])
	}
	if len(dirs) == 0 {
		t.Fatalf("no cgroup directory in %q", s)
	}
	return dirs
}

// contained checks that the lobby whose log is logs runs its rooms in
// cgroups, or says why not, as mode wants.
func contained(t *testing.T, logs *logBuffer, fallback bool) {
	t.Helper()
	warned := len(logs.lines("rooms are not in cgroups: each is a process group, what escapes it comes back to this process and is killed with its room, and no room is limited"))
	if fallback && warned != 1 || !fallback && (warned != 0 || len(treeDirs(t, logs)) == 0) {
		t.Fatalf("rooms in cgroups %v, warned %d times, with %s set to %v:\n%s", !fallback, warned, noCgroupsEnv, fallback, logs)
	}
}

// roomsSee makes a directory the rooms' users (see [supervisor]
// room_users) may look into, for a file a room's command tests for,
// removed at the end of the test.
func roomsSee(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fyroom")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chmod(t, dir, 0o711)
	return dir
}

// allGone waits, within keepLimit (a guard against hangs), until the
// processes of marker m, the processes pids and the directories dirs are
// gone.
func allGone(t *testing.T, m string, dirs []string, pids ...int) {
	t.Helper()
	left := func() []string {
		var out []string
		for _, pid := range append(sleeping(m), pids...) {
			if proc.Alive(pid) {
				out = append(out, "process "+strconv.Itoa(pid))
			}
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				out = append(out, "cgroup "+d)
			}
		}
		return out
	}
	for deadline := time.Now().Add(keepLimit); len(left()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left())
		}
	}
}

// The escape of the issue, without state_dir: the escapee is dead by the
// time its room is reaped (its keeper killed, so that the keeper cannot
// help), once foyer serve exits on SIGTERM, and soon after foyer serve is
// killed with SIGKILL (the keeper, told by its parent-death signal, ends
// its room); no cgroup is left. In cgroups, and in the fallback.
func TestEscapeeDiesWithItsRoom(t *testing.T) {
	for _, mode := range containModes {
		for _, end := range []string{"reap", "SIGTERM", "SIGKILL"} {
			t.Run(mode.name+"/"+end, func(t *testing.T) {
				if mode.env == nil {
					requiretest.Cgroups(t)
				}
				for _, kv := range mode.env {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v)
				}
				m := marker()
				s := startServer(t, "", escape(m))
				contained(t, s.logs, mode.env != nil)
				dirs := treeDirs(t, s.logs)
				c := newClient(t, "127.0.0.1", s.lobby)
				id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
				keeper := s.instancePID(id)
				escapee(t, m)
				switch end {
				case "reap":
					syscall.Kill(keeper, syscall.SIGKILL)
					awaitReaped(t, s.logs, id)
					if pids := sleeping(m); len(pids) > 0 { // no waiting: the reap ended it
						t.Errorf("the escapee %v outlived the reap of its room", pids)
					}
				case "SIGTERM":
					s.stop()
					if pids := sleeping(m); len(pids) > 0 {
						t.Errorf("the escapee %v outlived foyer serve's exit", pids)
					}
				case "SIGKILL":
					s.kill9()
				}
				allGone(t, m, dirs, keeper)
			})
		}
	}
}

// The escape of the issue with state_dir, where rooms outlive a lobby
// killed with SIGKILL: a lobby that comes back adopts the room with its
// cgroups and ends all of it when it stops; when none comes back, the
// room ends by itself after reattach_grace, all of it, and leaves no
// cgroup; when the room's keeper died too (killed with SIGKILL, so that
// it could do nothing), the lobby that comes back ends what it left. In
// cgroups, and in the fallback.
func TestEscapeeDiesWithItsOrphanedRoom(t *testing.T) {
	for _, mode := range containModes {
		for _, then := range []string{"a lobby comes back", "no lobby comes back", "the room dies too"} {
			t.Run(mode.name+"/"+then, func(t *testing.T) {
				if mode.env == nil {
					requiretest.Cgroups(t)
				}
				m := marker()
				l := newKeptLobby(t, keptSettings{grace: 2 * time.Second, match: 600 * time.Second, ports: 4,
					supervise: escape(m), env: mode.env})
				contained(t, l.logs, mode.env != nil)
				dirs := treeDirs(t, l.logs)
				c := newClient(t, "127.0.0.1", l.lobby)
				id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
				keeper := l.adminRooms()[0].PID
				escapee(t, m)
				l.kill9()
				switch then {
				case "a lobby comes back":
					l.start()
					l.awaitLog("room adopted", map[string]any{"id": id})
					if len(sleeping(m)) != 1 {
						t.Fatal("the escapee did not outlive the lobby with its room")
					}
					// Found again with its cgroups: the lobby measures it.
					if r := l.adminRooms(); len(r) != 1 || (r[0].CPUSeconds != nil) != (mode.env == nil) {
						t.Errorf("the adopted room's usage: %+v", r)
					}
					l.stop()
					if pids := sleeping(m); len(pids) > 0 {
						t.Errorf("the escapee %v outlived foyer serve's exit", pids)
					}
				case "the room dies too":
					syscall.Kill(keeper, syscall.SIGKILL)
					for deadline := time.Now().Add(keepLimit); proc.Alive(keeper); time.Sleep(10 * time.Millisecond) {
						if time.Now().After(deadline) {
							t.Fatal("the keeper survived SIGKILL")
						}
					}
					if len(sleeping(m)) != 1 {
						t.Fatal("the escapee did not outlive its keeper")
					}
					l.start()
					l.awaitLog("room not adopted, its directory removed", map[string]any{"id": id})
					if pids := sleeping(m); len(pids) > 0 { // no waiting: the start ended it
						t.Errorf("the escapee %v outlived the start of a lobby", pids)
					}
					switch {
					case mode.env != nil:
					case os.Geteuid() != 0: // in cgroups, by them
						l.awaitLog("cgroup of a room not adopted ended", map[string]any{"cgroup": fmt.Sprintf("room-%d", id), "processes": 1})
					default:
						// A lobby run as root starts a warden beside each room,
						// as the lobby's user: it ends what the room left 2 s
						// after the keeper's death, unless the lobby that comes
						// back is quicker (and ends it with the warden).
						cg := map[string]any{"cgroup": fmt.Sprintf("room-%d", id)}
						for deadline := time.Now().Add(keepLimit); ; time.Sleep(20 * time.Millisecond) {
							if l.logged("cgroup of a room not adopted ended", cg) || !slices.ContainsFunc(dirs, func(d string) bool {
								_, err := os.Stat(filepath.Join(d, fmt.Sprintf("room-%d", id)))
								return err == nil
							}) {
								break
							}
							if time.Now().After(deadline) {
								t.Fatalf("room %d's cgroup neither ended by the lobby nor by its warden:\n%s", id, l.logs)
							}
						}
					}
				}
				allGone(t, m, dirs)
			})
		}
	}
}

// A room that allocates without end is killed at its memory_max, reaped
// with the cause oom, counted and logged with its limit, while the room
// beside it runs on; each room's CPU time and memory are in /rooms and
// /metrics while it runs, and its series go with it.
func TestRoomKilledAtMemoryMax(t *testing.T) {
	requiretest.Cgroups(t)
	hog := filepath.Join(roomsSee(t), "hog")
	const max = 64 << 20
	s := startServer(t, "", fmt.Sprintf(`command = ["/bin/sh", "-c", "if [ -e %s ]; then sleep 0.5; exec tail /dev/zero; fi; exec sleep 1000 {port}"]
probe = "none"
memory_max = "64MiB"
`, hog))
	c := newClient(t, "127.0.0.1", s.lobby)
	calm, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
	if err := os.WriteFile(hog, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hogID, _ := c.request(compact, createRoom, 2, nil).roomPort(t)
	if line := awaitReaped(t, s.logs, hogID); line["cause"] != "oom" {
		t.Errorf("the hog was reaped as %v, want oom", line["cause"])
	}
	killed := s.logs.lines("room killed by the OOM killer at its memory_max")
	if len(killed) != 1 || killed[0]["id"] != float64(hogID) || killed[0]["memory_max"] != float64(max) {
		t.Errorf("the OOM kill logged as %v", killed)
	}
	if rooms := c.list(3); len(rooms) != 1 || rooms[0].id != calm {
		t.Errorf("rooms after the hog's end: %+v, want the calm room %d", rooms, calm)
	}
	if !proc.Alive(s.instancePID(calm)) {
		t.Error("the calm room's process ended with the hog")
	}
	metrics := s.metrics(t)
	if n := metrics[`foyer_supervisor_instance_exits_total{cause="oom"}`]; n != 1 {
		t.Errorf("%v rooms counted as oom", n)
	}
	label := func(family string, id uint32) string { return fmt.Sprintf(`%s{room="%d"}`, family, id) }
	if _, ok := metrics[label("foyer_room_memory_bytes", calm)]; !ok {
		t.Errorf("no memory series of the calm room")
	}
	if _, ok := metrics[label("foyer_room_cpu_seconds_total", calm)]; !ok {
		t.Errorf("no CPU series of the calm room")
	}
	if _, ok := metrics[label("foyer_room_memory_bytes", hogID)]; ok {
		t.Errorf("the reaped hog still has its series")
	}
}

// Limits the host cannot enforce stop the start, with the reason: here
// cgroups are off.
func TestLimitsWithoutCgroupsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte("[supervisor]\npids_max = 64\n[admin]\nlisten = \"\"\n"), 0o600)
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Env = append(os.Environ(), noCgroupsEnv+"=1")
	out, err := cmd.CombinedOutput()
	want := "pids_max: cannot be enforced without cgroups: turned off"
	if err == nil || !bytes.Contains(out, []byte(want)) {
		t.Fatalf("foyer serve: %v\n%s\nwant %q", err, out, want)
	}
}

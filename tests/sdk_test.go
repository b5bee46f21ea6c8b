package tests

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// The client SDKs of sdk/ against a real `foyer serve` (the GDScript one
// in Godot 3, headless): each runs its own
// tests (the shared golden packets, a scripted lobby) and then its live
// tests against the lobby: list, create, join, a refused JOIN as a typed
// error, in both framings; and the extension: a room
// created with a name, a password and tags (and so a code), listed by a
// filter on its mode and name, refused with a wrong password for that
// reason, joined by its code, and a quick join by mode; and the room's
// door: a created seat's token presented (EXT_PRESENT) to the room's port
// from a fresh socket is admitted (EXT_ADMITTED), again from another one
// (the way back into a seat), and a forged token is not (the SDK's
// timeout error). The rooms are the reference room, behind the Go SDK's
// door.

// sdkGolden is the golden packets every SDK's tests read.
const sdkGolden = "../sdk/testdata/golden.json"

// sdkLobby is the lobby section of the SDK tests' server: every SDK
// creates rooms from 127.0.0.1, more than a player's CREATE budget.
const sdkLobby = `rate = 100000
burst = 100000
create_rate = 1000
create_burst = 1000
create_network_rate = 1000
create_network_burst = 1000
`

// sdkRunner runs one SDK's test program against a lobby: built into dir
// once (build), then run (run), with bench > 0 also timing that many
// LISTs and JOINs, which it prints as "list_ns=L join_ns=J".
type sdkRunner struct {
	name  string
	build func(t testing.TB, dir string)
	run   func(t testing.TB, dir string, lobby netip.AddrPort, bench int) *exec.Cmd
	// ran checks that the output says every live test ran and passed.
	ran func(out string) bool
}

// passedNone matches the closing line of the C and C# test programs.
var passedNone = regexp.MustCompile(`(?m)^[1-9][0-9]* passed, 0 failed$`)

func cRunner(cc string) sdkRunner {
	return sdkRunner{
		name: "c-" + cc,
		build: func(t testing.TB, dir string) {
			path := requiretest.Command(t, cc)
			// The promise: warning-free in C99 with -Wall -Wextra.
			sdkExec(t, exec.Command(path, "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2",
				"-o", filepath.Join(dir, "foyer_test"), "../sdk/c/test/foyer_test.c"))
		},
		run: func(t testing.TB, dir string, lobby netip.AddrPort, bench int) *exec.Cmd {
			args := []string{sdkGolden, lobby.Addr().String(), strconv.Itoa(int(lobby.Port()))}
			if bench > 0 {
				args = append(args, strconv.Itoa(bench))
			}
			return exec.Command(filepath.Join(dir, "foyer_test"), args...)
		},
		ran: passedNone.MatchString,
	}
}

var csharpRunner = sdkRunner{
	name: "csharp",
	build: func(t testing.TB, dir string) {
		mcs := requiretest.Command(t, "mcs")
		requiretest.Command(t, "mono")
		dll := filepath.Join(dir, "Foyer.dll")
		sdkExec(t, exec.Command(mcs, "-warnaserror", "-warn:4", "-target:library", "-out:"+dll, "../sdk/csharp/Foyer.cs"))
		sdkExec(t, exec.Command(mcs, "-warnaserror", "-warn:4", "-out:"+filepath.Join(dir, "FoyerTest.exe"), "-r:"+dll,
			"../sdk/csharp/test/FoyerTest.cs"))
	},
	run: func(t testing.TB, dir string, lobby netip.AddrPort, bench int) *exec.Cmd {
		args := []string{filepath.Join(dir, "FoyerTest.exe"), sdkGolden, lobby.String()}
		if bench > 0 {
			args = append(args, strconv.Itoa(bench))
		}
		return exec.Command(requiretest.Command(t, "mono"), args...)
	},
	ran: passedNone.MatchString,
}

var jsRunner = sdkRunner{
	name:  "js",
	build: func(t testing.TB, _ string) { requiretest.Command(t, "node") },
	run: func(t testing.TB, _ string, lobby netip.AddrPort, bench int) *exec.Cmd {
		files, _ := filepath.Glob("../sdk/js/test/*.test.js")
		for i, f := range files {
			files[i] = strings.TrimPrefix(f, "../sdk/js/")
		}
		cmd := exec.Command(requiretest.Command(t, "node"), append([]string{"--test"}, files...)...)
		if bench > 0 {
			cmd = exec.Command(requiretest.Command(t, "node"), "bench.js", lobby.String(), strconv.Itoa(bench))
		}
		cmd.Dir = "../sdk/js"
		return cmd
	},
	ran: func(out string) bool {
		return strings.Contains(out, "\n# skipped 0\n") && strings.Contains(out, "\n# fail 0\n") &&
			!strings.Contains(out, "\n# pass 0\n")
	},
}

var pythonRunner = sdkRunner{
	name:  "python",
	build: func(t testing.TB, _ string) { requiretest.Command(t, "python3") },
	run: func(t testing.TB, _ string, lobby netip.AddrPort, bench int) *exec.Cmd {
		cmd := exec.Command(requiretest.Command(t, "python3"), "-m", "unittest", "-v", "test_foyer")
		if bench > 0 {
			cmd = exec.Command(requiretest.Command(t, "python3"), "test_foyer.py", "--bench", lobby.String(), strconv.Itoa(bench))
		}
		cmd.Dir = "../sdk/python"
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // nothing written into sdk/
		return cmd
	},
	ran: func(out string) bool {
		return strings.Contains(out, "\nOK\n") && strings.Contains(out, "LiveTest") && !strings.Contains(out, "skipped")
	},
}

var gdscriptRunner = sdkRunner{
	name: "gdscript",
	// Godot writes its logs where the script is, and its settings in
	// HOME: both are a copy of the SDK in dir, not sdk/.
	build: func(t testing.TB, dir string) {
		requiretest.Command(t, "godot3-server")
		for _, f := range []string{"foyer_client.gd", "test/foyer_test.gd"} {
			b, err := os.ReadFile(filepath.Join("../sdk/gdscript", f))
			if err == nil {
				err = os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	},
	run: func(t testing.TB, dir string, lobby netip.AddrPort, bench int) *exec.Cmd {
		golden, err := filepath.Abs(sdkGolden)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(requiretest.Command(t, "godot3-server"), "--no-window", "-s", "test/foyer_test.gd")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "FOYER_GOLDEN="+golden, "FOYER_LOBBY="+lobby.String())
		if bench > 0 {
			cmd.Env = append(cmd.Env, "FOYER_BENCH="+strconv.Itoa(bench))
		}
		return cmd
	},
	// Godot goes on after a script error: the output must show none.
	ran: func(out string) bool { return passedNone.MatchString(out) && !strings.Contains(out, "SCRIPT ERROR") },
}

var sdkRunners = []sdkRunner{cRunner("gcc"), cRunner("clang"), csharpRunner, jsRunner, pythonRunner, gdscriptRunner}

// sdkExec runs cmd and fails the test with its output if it fails.
func sdkExec(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return string(out)
}

// TestSDKsAgainstTheLobby builds every client SDK (the C header with gcc
// and clang, warnings as errors) and runs its tests against a real lobby
// of its own (the rooms each one's tests start take most of a test
// lobby's 20 ports until they are reaped): the shared golden packets (the
// extension's too), then list,
// create, join, a refused JOIN as the SDK's typed error, and the
// extension's names, filters, codes, passwords, reasons and quick join,
// in both framings, and a seat token presented to its room from new
// sockets, connected to the room or not, admitted, and a forged one not,
// even with another sender answering EXT_ADMITTED for the room. Each must say that its live tests ran, not that they
// were skipped.
func TestSDKsAgainstTheLobby(t *testing.T) {
	for _, r := range sdkRunners {
		t.Run(r.name, func(t *testing.T) {
			s := startServer(t, sdkLobby, "")
			dir := t.TempDir()
			r.build(t, dir)
			cmd := r.run(t, dir, s.lobby, 0)
			cmd.Env = append(cmd.Environ(), "FOYER_LOBBY="+s.lobby.String())
			out := sdkExec(t, cmd)
			if !r.ran(out) {
				t.Fatalf("%s: the live tests did not all run and pass:\n%s", r.name, out)
			}
		})
	}
}

// BenchmarkSDKRoundTrips measures a LIST and a JOIN round trip from each
// SDK against the same lobby in one run: the extension's EXT_LIST and
// EXT_JOIN (answered EXT_REFUSED, not found). list-ns and join-ns are the
// mean of b.N of each, as the SDK's own clock measured them (ns/op counts
// its process's start too). In this mode an SDK runs its golden and
// scripted tests, then the round trips, not its live tests.
func BenchmarkSDKRoundTrips(b *testing.B) {
	s := startServer(b, sdkLobby, "")
	for _, r := range sdkRunners {
		b.Run(r.name, func(b *testing.B) {
			dir := b.TempDir()
			r.build(b, dir)
			out := sdkExec(b, r.run(b, dir, s.lobby, b.N))
			var list, join int64
			at := max(strings.LastIndex(out, "list_ns="), 0)
			if _, err := fmt.Sscanf(out[at:], "list_ns=%d join_ns=%d", &list, &join); err != nil {
				b.Fatalf("%s printed no round trips: %v\n%s", r.name, err, out)
			}
			reportRoundTrips(b, time.Duration(list*int64(b.N)), time.Duration(join*int64(b.N)))
		})
	}
}

func reportRoundTrips(b *testing.B, list, join time.Duration) {
	b.ReportMetric(float64(list.Nanoseconds())/float64(b.N), "list-ns")
	b.ReportMetric(float64(join.Nanoseconds())/float64(b.N), "join-ns")
}

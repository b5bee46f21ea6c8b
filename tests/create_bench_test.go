package tests

import (
	"bufio"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/webtest"
	"github.com/foyerlobby/foyer/supervisor"
)

// BenchmarkCreateFromClient measures CREATE → ROOM_CREATED as a client
// sees it, over UDP against foyer serve, its rooms in cgroups where the
// host has them: cold (no warm room: the room is handed out once its
// instance's process is forked, on a port the lobby bound and passed to
// it), cold-bound (pass_socket = false: the room binds its port, and the
// create waits until its game is ready) and warm (warm = 1: the create
// takes the room started ahead). Each room is stopped once created, and
// the next create waits until it is gone and the warm pool is full again,
// so that every create finds the lobby alike. It reports the p50 and p99
// in milliseconds, the first cold create apart (first-ms), the p50 of a
// LIST's round trip beside it, the p50 and p99 until the creator plays
// (its CLIENT_HELLO to the room's port, sent as soon as it hears of the
// room, answered), and for cold creates the p50 of each phase of their
// spawns.
func BenchmarkCreateFromClient(b *testing.B) {
	for _, mode := range []struct {
		name  string
		warm  int
		extra string
	}{{"cold", 0, ""}, {"cold-bound", 0, "pass_socket = false\n"}, {"warm", 1, ""}} {
		b.Run(mode.name, func(b *testing.B) {
			s := startServerLogging(b, "info", createsUnlimited,
				fmt.Sprintf("warm = %d\nport_cooldown = \"1ms\"\nseats_per_address = 64\n%s", mode.warm, mode.extra))
			base := s.adminBase(b)
			c := newClient(b, "127.0.0.1", s.lobby)
			c.list(1) // a player lists first: its CREATEs are a verified source's
			var took, played, listed []time.Duration
			seq := uint16(1)
			var first time.Duration
			if mode.warm == 0 {
				// The lobby hands a room out while its instance starts
				// once its program has started: the first create after
				// the start waits for its room's game, and is reported
				// apart.
				t0 := time.Now()
				r := c.request(compact, createRoom, seq, nil)
				first = time.Since(t0)
				id, _ := r.roomPort(b)
				stopRoom(b, base, id)
			}
			for b.Loop() {
				settle(b, base, float64(mode.warm))
				seq++
				t0 := time.Now()
				c.list(seq)
				listed = append(listed, time.Since(t0))
				seq++
				t0 = time.Now()
				r := c.request(compact, createRoom, seq, nil)
				took = append(took, time.Since(t0))
				id, port := r.roomPort(b)
				if _, ok := dialGame(b, "127.0.0.1", netip.AddrPortFrom(s.lobby.Addr(), port)).hello(); !ok {
					b.Fatalf("room %d never said hello", id)
				}
				played = append(played, time.Since(t0))
				stopRoom(b, base, id)
			}
			if first > 0 {
				b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
			}
			b.ReportMetric(percentile(took, 50)/1000, "p50-ms")
			b.ReportMetric(percentile(took, 99)/1000, "p99-ms")
			b.ReportMetric(percentile(played, 50)/1000, "play-p50-ms")
			b.ReportMetric(percentile(played, 99)/1000, "play-p99-ms")
			// The floor of any request: a LIST's round trip, just before.
			b.ReportMetric(percentile(listed, 50)/1000, "list-p50-ms")
			if mode.warm == 0 {
				// Where the cold creates' time went, as the lobby logged
				// it: the spawn's phases until the room was handed out
				// ("room created"), and those of a room handed out while
				// its instance started, until it was ready ("room
				// ready", whose spawn is the whole start).
				for _, phase := range []string{"spawn", "prep", "fork", "boot", "dial", "watch", "ready"} {
					var ds []time.Duration
					for _, m := range append(s.logs.lines("room ready"), s.logs.lines("room created")...) {
						if v, ok := m[phase+"_ms"].(float64); ok && (phase != "spawn" || m["starting"] == nil) {
							ds = append(ds, time.Duration(v*float64(time.Millisecond)))
						}
					}
					b.ReportMetric(percentile(ds, 50)/1000, phase+"-p50-ms")
				}
			}
		})
	}
}

// stopRoom stops room id through the admin API at base.
func stopRoom(b *testing.B, base string, id uint32) {
	b.Helper()
	if resp, body := webtest.Fetch(b, nil, http.MethodPost, fmt.Sprintf("%s/rooms/%d/stop", base, id)); resp.StatusCode != http.StatusAccepted {
		b.Fatalf("stopping room %d: %s %s", id, resp.Status, body)
	}
}

// BenchmarkRoomBoot measures what a cold create cannot go below: the time
// from the start of a room's program to its plugin handshake line (the
// boot phase of a spawn), for foyer-room's reference room, as foyer
// serve runs it, and, alternating with it in the same run, for a bare
// go-plugin gRPC server that serves nothing (testdata/bareplugin), the
// floor of any room written with the instance SDK. It reports the p50
// of each and their ratio.
func BenchmarkRoomBoot(b *testing.B) {
	bare := filepath.Join(b.TempDir(), "bareplugin")
	build := exec.Command("go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", bare, "./testdata/bareplugin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building bareplugin: %v\n%s", err, out)
	}
	room := filepath.Join(filepath.Dir(bin), supervisor.RoomProgram)
	programs := [][]string{{room, "instance"}, {bare}}
	took := make([][]time.Duration, len(programs))
	for b.Loop() {
		for i, argv := range programs {
			took[i] = append(took[i], boot(b, argv))
		}
	}
	room50, bare50 := percentile(took[0], 50), percentile(took[1], 50)
	b.ReportMetric(room50/1000, "foyer-room-p50-ms")
	b.ReportMetric(bare50/1000, "bare-plugin-p50-ms")
	b.ReportMetric(room50/bare50, "ratio")
}

// boot starts argv as a host starts a room's program (the plugin
// handshake's variables, one processor), returns the time until its
// handshake line, and kills it.
func boot(b *testing.B, argv []string) time.Duration {
	b.Helper()
	dir, err := os.MkdirTemp("", "fyboot")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{
		instancepb.Handshake.MagicCookieKey + "=" + instancepb.Handshake.MagicCookieValue,
		fmt.Sprintf("PLUGIN_PROTOCOL_VERSIONS=%d", instancepb.Handshake.ProtocolVersion),
		plugin.EnvUnixSocketDir + "=" + dir,
		"GOMAXPROCS=1",
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	took := time.Since(t0)
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(line), "|grpc|") {
		b.Fatalf("%s said %q (%v), not a handshake", argv[0], line, err)
	}
	return took
}

// createsUnlimited lets a test's one client create (and list) as fast as
// it likes: keptCreatesUnlimited, and the per-source buckets that a kept
// lobby's config lifts itself.
const createsUnlimited = "rate = 1000\nburst = 2000\ncreate_rate = 1000\ncreate_burst = 1000\n" + keptCreatesUnlimited

// settle waits until the lobby at the admin URL base runs warm rooms and
// nothing else: the rooms stopped are gone, the warm pool is full.
func settle(b *testing.B, base string, warm float64) {
	b.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		m := adminMetrics(b, base)
		if m["foyer_supervisor_instances"] == warm && m["foyer_supervisor_warm_instances"] == warm {
			return
		}
	}
	b.Fatal("the lobby never settled")
}

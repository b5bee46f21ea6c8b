package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/internal/proc"

	"github.com/foyerlobby/foyer/foyertest"
)

// adminServer is `foyer serve` with its admin listener on a free loopback
// port, and the listener's base URL.
func adminServer(t *testing.T) (*foyertest.Lobby, string) {
	t.Helper()
	l := cliLobby(t, foyertest.Admin(netip.MustParseAddrPort("127.0.0.1:0")))
	return l, "http://" + l.AdminAddr().String()
}

func adminGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, body := httpGet(t, url)
	return resp.StatusCode, body
}

// adminSample is a sample line of the text format: a name, optional
// labels, one number.
var adminSample = regexp.MustCompile(`^([a-z_:][a-z0-9_:]*(?:\{[^{}]*\})?) (\S+)$`)

// adminMetrics fetches /metrics and returns its samples by series,
// failing on any line that is neither a sample nor a HELP or TYPE
// comment.
func adminMetrics(t testing.TB, base string) map[string]float64 {
	t.Helper()
	code, body := adminGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		m := adminSample.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("/metrics line %q is not in the text format", line)
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[m[1]] = v
	}
	return out
}

func TestAdminPagesOfTheBinary(t *testing.T) {
	l, base := adminServer(t)
	// Healthy, and which version.
	if code, body := adminGet(t, base+"/healthz"); code != 200 || !regexp.MustCompile(`^ok\nfoyer \S+\n$`).MatchString(body) {
		t.Errorf("/healthz: %d %q", code, body)
	}
	before := adminMetrics(t, base)
	var seat cliSeatJSON
	cliDecode(t, cliOK(t, "create", "--json", "--timeout", "1m", l.Addr().String()), &seat) // one attempt: exact counts
	after := adminMetrics(t, base)
	for series, want := range map[string][2]float64{
		`foyer_lobby_requests_total{type="create"}`:        {0, 1},
		`foyer_rooms{state="waiting"}`:                     {0, 1},
		`foyer_supervisor_spawn_seconds_count`:             {0, 1},
		`foyer_supervisor_rooms_created_total`:             {0, 1},
		`foyer_supervisor_spawn_seconds_bucket{le="+Inf"}`: {0, 1},
	} {
		if before[series] != want[0] || after[series] != want[1] {
			t.Errorf("%s: %v before the create and %v after, want %v", series, before[series], after[series], want)
		}
	}
	// The Go runtime's and the process's standard series, of the lobby
	// process.
	for _, series := range []string{"go_goroutines", "process_resident_memory_bytes", "process_open_fds"} {
		if after[series] <= 0 {
			t.Errorf("%s = %v", series, after[series])
		}
	}

	code, body := adminGet(t, base+"/rooms")
	var table struct {
		Rooms []struct {
			ID    uint32 `json:"id"`
			Port  uint16 `json:"port"`
			State string `json:"state"`
			PID   int    `json:"pid"`
		} `json:"rooms"`
	}
	if err := json.Unmarshal([]byte(body), &table); code != 200 || err != nil {
		t.Fatalf("/rooms: %d %v\n%s", code, err, body)
	}
	if len(table.Rooms) != 1 || table.Rooms[0].ID != seat.Room || table.Rooms[0].Port != seat.Port ||
		table.Rooms[0].State != "waiting" || !proc.Alive(table.Rooms[0].PID) {
		t.Errorf("/rooms: %+v, want room %d on port %d with a live process", table.Rooms, seat.Room, seat.Port)
	}
}

func TestAdminListenRefusedWithLine(t *testing.T) {
	path := t.TempDir() + "/config.toml"
	if err := os.WriteFile(path, []byte("[admin]\n\nlisten = \"localhost:9477\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, nil, "serve", "--config", path)
	want := path + `:3: [admin] listen "localhost:9477": not IP:port`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("serve with a host name for [admin] listen: exit %d\n%s\nwant a line with %q", r.code, r.stderr, want)
	}
}

// A lobby whose admin address is taken does not start: an operator who
// asked for /metrics and /healthz would otherwise run blind.
func TestAdminAddressTakenRefusesToStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path := t.TempDir() + "/config.toml"
	cfg := fmt.Sprintf("[lobby]\nlisten = \"127.0.0.1:%d\"\n[admin]\nlisten = %q\n", freeUDPPort(t), taken.Addr().String())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, nil, "serve", "--config", path)
	if r.code != 1 || !strings.Contains(r.stderr, "admin: listen "+taken.Addr().String()) {
		t.Fatalf("serve with a taken admin address: exit %d\n%s\nwant exit 1 naming the address", r.code, r.stderr)
	}
}

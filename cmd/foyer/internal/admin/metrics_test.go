package admin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/gg2"
	"github.com/foyerlobby/foyer/lobby/gunz"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// exposition is a parsed /metrics page: each series ("name{label="v"}")
// with its value, and each family's type.
type exposition struct {
	values map[string]float64
	types  map[string]string
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})? (\S+)$`)
	helpLine   = regexp.MustCompile(`^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*$`)
	typeLine   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$`)
)

// parseExposition checks text against the Prometheus text format, line
// by line: a HELP then a TYPE line before the samples of each family,
// sample names that belong to the family just typed, numbers that parse,
// and no series twice.
func parseExposition(text string) (exposition, error) {
	e := exposition{values: map[string]float64{}, types: map[string]string{}}
	if !strings.HasSuffix(text, "\n") {
		return e, fmt.Errorf("does not end in a line feed")
	}
	current, helped := "", ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		at := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, a...))
		}
		if m := helpLine.FindStringSubmatch(line); m != nil {
			helped = m[1]
			continue
		}
		if m := typeLine.FindStringSubmatch(line); m != nil {
			if m[1] != helped {
				return e, at("TYPE without HELP")
			}
			if _, dup := e.types[m[1]]; dup {
				return e, at("family typed twice")
			}
			current = m[1]
			e.types[current] = m[2]
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			return e, at("not a sample, HELP or TYPE line")
		}
		name := m[1]
		if e.types[current] == "histogram" {
			name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		}
		if name != current {
			return e, at("sample of family %q under %q", m[1], current)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return e, at("value: %v", err)
		}
		key := m[1] + m[2]
		if _, dup := e.values[key]; dup {
			return e, at("series twice")
		}
		e.values[key] = v
	}
	return e, nil
}

func (e exposition) value(t testing.TB, series string) float64 {
	t.Helper()
	v, ok := e.values[series]
	if !ok {
		t.Fatalf("no series %s", series)
	}
	return v
}

// The page for fixed stats, whole: every family, its order, and the
// number formats.
func TestMetricsPage(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	s := &Server{src: Sources{
		Lobby: func() lobby.Stats {
			return lobby.Stats{
				Requests: map[string]uint64{"list": 7, "create": 2, "join": 1},
				Replies:  map[string]uint64{"room_list": 7, "room_created": 2},
				Drops:    map[string]uint64{"bad_checksum": 3, `we"ird\`: 1},
				Failures: map[string]uint64{"no_room": 1},
				Granted:  map[string]uint64{"create": 2, "join": 0},

				LimitedSources: 4, Retries: 5, Sources: 6, Prefixes: 2, CreatesInFlight: 1,
			}
		},
		Supervisor: func() supervisor.Stats {
			counts := make([]uint64, len(supervisor.SpawnBuckets)+1)
			counts[1], counts[5], counts[len(counts)-1] = 1, 2, 1
			return supervisor.Stats{
				Warm: 1, Spawning: 2, PortsReady: 10, PortsCooling: 1, PortsInUse: 3,
				Created: 3, WarmHits: 1, SpawnFailures: 1, Quarantines: 2, WatchDrops: 0,
				Reaped:       map[room.Cause]uint64{"finished": 2, "crashed": 1},
				SpawnLatency: supervisor.Histogram{Counts: counts, Sum: 6250 * time.Millisecond},
			}
		},
		Rooms: func() room.Snapshot {
			return room.Snapshot{Version: 9, Rooms: []room.Room{
				{ID: 1, State: packet.Waiting, Players: 1, Seats: 1, StartedAt: start},
				{ID: 2, State: packet.Playing, Players: 3, StartedAt: start},
			}}
		},
	}}
	got := string(s.appendMetrics(nil))
	const want = `# HELP foyer_lobby_requests_total Well-formed requests received, by type.
# TYPE foyer_lobby_requests_total counter
foyer_lobby_requests_total{type="create"} 2
foyer_lobby_requests_total{type="join"} 1
foyer_lobby_requests_total{type="list"} 7
# HELP foyer_lobby_replies_total Replies sent, by type.
# TYPE foyer_lobby_replies_total counter
foyer_lobby_replies_total{type="room_created"} 2
foyer_lobby_replies_total{type="room_list"} 7
# HELP foyer_lobby_drops_total Datagrams dropped unanswered, by reason.
# TYPE foyer_lobby_drops_total counter
foyer_lobby_drops_total{reason="bad_checksum"} 3
foyer_lobby_drops_total{reason="we\"ird\\"} 1
# HELP foyer_lobby_refusals_total CREATE and JOIN answered JOIN_FAILED, by reason.
# TYPE foyer_lobby_refusals_total counter
foyer_lobby_refusals_total{reason="no_room"} 1
# HELP foyer_lobby_granted_total CREATE and JOIN answered with a room.
# TYPE foyer_lobby_granted_total counter
foyer_lobby_granted_total{type="create"} 2
foyer_lobby_granted_total{type="join"} 0
# HELP foyer_lobby_rate_limited_sources_total Times a source IP went from served to rate limited.
# TYPE foyer_lobby_rate_limited_sources_total counter
foyer_lobby_rate_limited_sources_total 4
# HELP foyer_lobby_retries_total Requests answered from the retry cache.
# TYPE foyer_lobby_retries_total counter
foyer_lobby_retries_total 5
# HELP foyer_lobby_sources Source IPs in the rate-limit table.
# TYPE foyer_lobby_sources gauge
foyer_lobby_sources 6
# HELP foyer_lobby_prefixes Networks in the reflection-guard table.
# TYPE foyer_lobby_prefixes gauge
foyer_lobby_prefixes 2
# HELP foyer_lobby_creates_in_flight CREATEs being run.
# TYPE foyer_lobby_creates_in_flight gauge
foyer_lobby_creates_in_flight 1
# HELP foyer_supervisor_spawn_seconds Time from launching an instance to its game being ready, successful spawns.
# TYPE foyer_supervisor_spawn_seconds histogram
foyer_supervisor_spawn_seconds_bucket{le="0.005"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.01"} 1
foyer_supervisor_spawn_seconds_bucket{le="0.02"} 1
foyer_supervisor_spawn_seconds_bucket{le="0.03"} 1
foyer_supervisor_spawn_seconds_bucket{le="0.05"} 1
foyer_supervisor_spawn_seconds_bucket{le="0.1"} 3
foyer_supervisor_spawn_seconds_bucket{le="0.25"} 3
foyer_supervisor_spawn_seconds_bucket{le="1"} 3
foyer_supervisor_spawn_seconds_bucket{le="5"} 3
foyer_supervisor_spawn_seconds_bucket{le="+Inf"} 4
foyer_supervisor_spawn_seconds_sum 6.25
foyer_supervisor_spawn_seconds_count 4
# HELP foyer_supervisor_instance_exits_total Instances reaped, by cause.
# TYPE foyer_supervisor_instance_exits_total counter
foyer_supervisor_instance_exits_total{cause="crashed"} 1
foyer_supervisor_instance_exits_total{cause="finished"} 2
# HELP foyer_supervisor_rooms_created_total Rooms handed out, warm or cold.
# TYPE foyer_supervisor_rooms_created_total counter
foyer_supervisor_rooms_created_total 3
# HELP foyer_supervisor_warm_hits_total Creates answered from the warm pool.
# TYPE foyer_supervisor_warm_hits_total counter
foyer_supervisor_warm_hits_total 1
# HELP foyer_supervisor_spawn_failures_total Spawns that produced no instance.
# TYPE foyer_supervisor_spawn_failures_total counter
foyer_supervisor_spawn_failures_total 1
# HELP foyer_supervisor_port_quarantines_total Ports quarantined because something else held them.
# TYPE foyer_supervisor_port_quarantines_total counter
foyer_supervisor_port_quarantines_total 2
# HELP foyer_supervisor_watch_drops_total Room-table events a slow watcher missed.
# TYPE foyer_supervisor_watch_drops_total counter
foyer_supervisor_watch_drops_total 0
# HELP foyer_supervisor_warm_instances Ready instances not handed out.
# TYPE foyer_supervisor_warm_instances gauge
foyer_supervisor_warm_instances 1
# HELP foyer_supervisor_spawning Spawns in flight.
# TYPE foyer_supervisor_spawning gauge
foyer_supervisor_spawning 2
# HELP foyer_supervisor_ports Ports of the pool, by state.
# TYPE foyer_supervisor_ports gauge
foyer_supervisor_ports{state="cooling"} 1
foyer_supervisor_ports{state="in_use"} 3
foyer_supervisor_ports{state="quarantined"} 0
foyer_supervisor_ports{state="ready"} 10
# HELP foyer_rooms Listed rooms, by state.
# TYPE foyer_rooms gauge
foyer_rooms{state="countdown"} 0
foyer_rooms{state="finished"} 0
foyer_rooms{state="playing"} 1
foyer_rooms{state="waiting"} 1
# HELP foyer_room_players Players connected to listed rooms.
# TYPE foyer_room_players gauge
foyer_room_players 4
# HELP foyer_room_seats Seats held for players still connecting.
# TYPE foyer_room_seats gauge
foyer_room_seats 1
`
	if got != want {
		t.Errorf("metrics page:\n%s\nwant:\n%s", got, want)
	}
	if _, err := parseExposition(got); err != nil {
		t.Errorf("the page does not parse: %v", err)
	}
}

// The neighbour edges' counters appear when their sources are set.
func TestMetricsOfNeighbourEdges(t *testing.T) {
	s := &Server{src: Sources{
		GG2: func() gg2.Stats {
			return gg2.Stats{Requests: map[string]uint64{"register": 3, "list": 1},
				Drops: map[string]uint64{"no_name": 2}, Registered: 1, Pending: 0, ListConns: 0}
		},
		Gunz: func() gunz.Stats {
			return gunz.Stats{Requests: map[string]uint64{"locator": 5}, Replies: map[string]uint64{"locator": 4},
				Drops: map[string]uint64{"checksum": 1}}
		},
	}}
	got := string(s.appendMetrics(nil))
	fams, err := parseExposition(got)
	if err != nil {
		t.Fatalf("the page does not parse: %v\n%s", err, got)
	}
	for _, line := range []string{
		`foyer_gg2_requests_total{kind="register"} 3`,
		`foyer_gg2_drops_total{reason="no_name"} 2`,
		`foyer_gg2_registered 1`,
		`foyer_gunz_requests_total{kind="locator"} 5`,
		`foyer_gunz_replies_total{kind="locator"} 4`,
		`foyer_gunz_drops_total{reason="checksum"} 1`,
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("no line %q in\n%s", line, got)
		}
	}
	if len(fams.types) != 8 {
		t.Errorf("%d metric families, want 8", len(fams.types))
	}
}

// The parser must refuse what is not the format, or the end-to-end
// checks that use it prove nothing.
func TestParseExpositionRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no final newline":  "# HELP a x\n# TYPE a counter\na 1",
		"sample untyped":    "a 1\n",
		"type without help": "# TYPE a counter\na 1\n",
		"bad value":         "# HELP a x\n# TYPE a counter\na one\n",
		"unquoted label":    "# HELP a x\n# TYPE a counter\na{b=c} 1\n",
		"bad escape":        "# HELP a x\n# TYPE a counter\na{b=\"\\x\"} 1\n",
		"other family":      "# HELP a x\n# TYPE a counter\nb 1\n",
		"series twice":      "# HELP a x\n# TYPE a counter\na 1\na 2\n",
		"unknown type":      "# HELP a x\n# TYPE a meter\na 1\n",
	} {
		if _, err := parseExposition(text); err == nil {
			t.Errorf("%s: parsed %q", name, text)
		}
	}
}

func BenchmarkMetricsPage(b *testing.B) {
	counts := make([]uint64, len(supervisor.SpawnBuckets)+1)
	rooms := make([]room.Room, 64)
	for i := range rooms {
		rooms[i] = room.Room{ID: uint32(i + 1), State: packet.RoomState(i % 4), Players: 2}
	}
	s := &Server{src: Sources{
		Lobby: func() lobby.Stats {
			return lobby.Stats{Requests: map[string]uint64{"list": 1, "create": 2, "join": 3},
				Drops: map[string]uint64{"rate_limited": 1, "bad_checksum": 2}}
		},
		Supervisor: func() supervisor.Stats {
			return supervisor.Stats{Reaped: map[room.Cause]uint64{"finished": 1}, SpawnLatency: supervisor.Histogram{Counts: counts}}
		},
		Rooms: func() room.Snapshot { return room.Snapshot{Rooms: rooms} },
	}}
	b.ReportAllocs()
	buf := make([]byte, 0, 8<<10)
	for b.Loop() {
		buf = s.appendMetrics(buf[:0])
	}
	b.ReportMetric(float64(len(buf)), "page-bytes")
}

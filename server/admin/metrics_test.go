package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// foyerRegistry is a pedantic registry of the collectors of src alone:
// it also checks that every sample belongs to a family its collector
// described.
func foyerRegistry(t testing.TB, src Sources) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range foyerCollectors(src) {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// fixedSources are stats with a value in every family, a label value
// that needs escaping, and a room state with no room.
func fixedSources() Sources {
	start := time.Unix(1_700_000_000, 0)
	return Sources{
		Lobby: func() lobby.Stats {
			return lobby.Stats{
				Requests: map[string]uint64{"list": 7, "create": 2, "join": 1},
				Replies:  map[string]uint64{"room_list": 7, "room_created": 2},
				Drops:    map[string]uint64{"bad_checksum": 3, `we"ird\`: 1},
				Failures: map[string]uint64{"no_room": 1},
				Granted:  map[string]uint64{"create": 2, "join": 0},

				LimitedSources: 4, Retries: 5, KernelDrops: 11, Sources: 6, Prefixes: 2, CreatesInFlight: 1,
			}
		},
		Supervisor: func() supervisor.Stats {
			counts := make([]uint64, len(supervisor.SpawnBuckets)+1)
			counts[1], counts[5], counts[len(counts)-1] = 1, 2, 1
			return supervisor.Stats{
				Warm: 1, Spawning: 2, PortsReady: 10, PortsCooling: 1, PortsInUse: 3, Live: 3, Draining: true,
				Created: 3, WarmHits: 1, SeatsHeld: 7, SeatsDisplaced: 2, SeatsOverQuota: 4, DoorRefused: 12, SpawnFailures: 1, Quarantines: 2, WatchDrops: 0,
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
	}
}

// Every family of the lobby, the supervisor and the room table, whole:
// names, help, types, labels and values, as dashboards know them.
func TestMetricsPage(t *testing.T) {
	reg := foyerRegistry(t, fixedSources())
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
# HELP foyer_lobby_kernel_drops_total Datagrams the kernel dropped at the lobby's sockets before any read: refused by the socket filter as no request the lobby serves, or with no room left in a receive buffer.
# TYPE foyer_lobby_kernel_drops_total counter
foyer_lobby_kernel_drops_total 11
# HELP foyer_lobby_sources Source IPs in the rate-limit table.
# TYPE foyer_lobby_sources gauge
foyer_lobby_sources 6
# HELP foyer_lobby_prefixes Networks in the reflection-guard table.
# TYPE foyer_lobby_prefixes gauge
foyer_lobby_prefixes 2
# HELP foyer_lobby_creates_in_flight CREATEs being run.
# TYPE foyer_lobby_creates_in_flight gauge
foyer_lobby_creates_in_flight 1
# HELP foyer_supervisor_seats_displaced_total Seats of unproven JOINs given to JOINs that proved they saw a listing.
# TYPE foyer_supervisor_seats_displaced_total counter
foyer_supervisor_seats_displaced_total 2
# HELP foyer_supervisor_seats_held_total Seats newly held by JOIN (each one is a debug log line only).
# TYPE foyer_supervisor_seats_held_total counter
foyer_supervisor_seats_held_total 7
# HELP foyer_supervisor_seats_over_quota_total JOINs refused because their address held seats_per_address seats of the room.
# TYPE foyer_supervisor_seats_over_quota_total counter
foyer_supervisor_seats_over_quota_total 4
# HELP foyer_room_door_refused_total Datagrams the rooms' doors turned away: their senders held no seat.
# TYPE foyer_room_door_refused_total counter
foyer_room_door_refused_total 12
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
# HELP foyer_supervisor_instances Rooms with a process on this host: listed, warm or ending.
# TYPE foyer_supervisor_instances gauge
foyer_supervisor_instances 3
# HELP foyer_draining 1 while the host is drained: it starts no new room, and those that run play on.
# TYPE foyer_draining gauge
foyer_draining 1
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
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// A supervisor that kept no histogram still has a well-formed, empty one.
func TestSpawnLatencyWithoutCounts(t *testing.T) {
	reg := foyerRegistry(t, Sources{Supervisor: func() supervisor.Stats { return supervisor.Stats{} }})
	const want = `# HELP foyer_supervisor_spawn_seconds Time from launching an instance to its game being ready, successful spawns.
# TYPE foyer_supervisor_spawn_seconds histogram
foyer_supervisor_spawn_seconds_bucket{le="0.005"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.01"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.02"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.03"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.05"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.1"} 0
foyer_supervisor_spawn_seconds_bucket{le="0.25"} 0
foyer_supervisor_spawn_seconds_bucket{le="1"} 0
foyer_supervisor_spawn_seconds_bucket{le="5"} 0
foyer_supervisor_spawn_seconds_bucket{le="+Inf"} 0
foyer_supervisor_spawn_seconds_sum 0
foyer_supervisor_spawn_seconds_count 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foyer_supervisor_spawn_seconds"); err != nil {
		t.Error(err)
	}
}

// Every room state is listed, at zero with no rooms.
func TestRoomStatesAlwaysListed(t *testing.T) {
	reg := foyerRegistry(t, Sources{Rooms: func() room.Snapshot { return room.Snapshot{} }})
	const want = `# HELP foyer_rooms Listed rooms, by state.
# TYPE foyer_rooms gauge
foyer_rooms{state="countdown"} 0
foyer_rooms{state="finished"} 0
foyer_rooms{state="playing"} 0
foyer_rooms{state="waiting"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foyer_rooms"); err != nil {
		t.Error(err)
	}
}

// Each room that runs has its usage series, labelled by its id, and only
// those its host measures.
func TestMetricsOfRoomUsage(t *testing.T) {
	reg := foyerRegistry(t, Sources{Usage: func() map[uint32]cgroup.Usage {
		return map[uint32]cgroup.Usage{
			7: {CPU: 1500 * time.Millisecond, Resident: 12 << 20, CPUKnown: true, ResidentKnown: true},
			9: {Resident: 4096, ResidentKnown: true},
		}
	}})
	const want = `# HELP foyer_room_cpu_seconds_total CPU time used by each listed room's processes since it started.
# TYPE foyer_room_cpu_seconds_total counter
foyer_room_cpu_seconds_total{room="7"} 1.5
# HELP foyer_room_memory_bytes Resident memory of each listed room's processes.
# TYPE foyer_room_memory_bytes gauge
foyer_room_memory_bytes{room="7"} 1.2582912e+07
foyer_room_memory_bytes{room="9"} 4096
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// The neighbour edges' families appear when their sources are set, and
// only theirs.
func TestMetricsOfNeighbourEdges(t *testing.T) {
	reg := foyerRegistry(t, Sources{
		GG2: func() gg2server.Stats {
			return gg2server.Stats{Requests: map[string]uint64{"register": 3, "list": 1},
				Drops: map[string]uint64{"no_name": 2}, Registered: 1, Pending: 0, ListConns: 0, KernelDrops: 6}
		},
		Gunz: func() gunzserver.Stats {
			return gunzserver.Stats{Requests: map[string]uint64{"locator": 5}, Replies: map[string]uint64{"locator": 4},
				Drops: map[string]uint64{"checksum": 1}, KernelDrops: 7}
		},
		Web: func() web.Stats { return web.Stats{Drops: map[string]uint64{"slow_reader": 2}, Conns: 3} },
	})
	const want = `# HELP foyer_gg2_requests_total GG2-style registrations, unregistrations and list queries.
# TYPE foyer_gg2_requests_total counter
foyer_gg2_requests_total{kind="list"} 1
foyer_gg2_requests_total{kind="register"} 3
# HELP foyer_gg2_drops_total GG2-style datagrams and queries dropped, by reason.
# TYPE foyer_gg2_drops_total counter
foyer_gg2_drops_total{reason="no_name"} 2
# HELP foyer_gg2_registered Registered servers in the room table.
# TYPE foyer_gg2_registered gauge
foyer_gg2_registered 1
# HELP foyer_gg2_pending Registrations waiting for their TCP check.
# TYPE foyer_gg2_pending gauge
foyer_gg2_pending 0
# HELP foyer_gg2_list_connections List queries being served.
# TYPE foyer_gg2_list_connections gauge
foyer_gg2_list_connections 0
# HELP foyer_gg2_kernel_drops_total Datagrams the kernel dropped at the GG2-style UDP sockets before any read: refused by the socket filter, or with no room left in a receive buffer.
# TYPE foyer_gg2_kernel_drops_total counter
foyer_gg2_kernel_drops_total 6
# HELP foyer_gunz_requests_total GunZ locator requests received.
# TYPE foyer_gunz_requests_total counter
foyer_gunz_requests_total{kind="locator"} 5
# HELP foyer_gunz_replies_total GunZ locator responses sent.
# TYPE foyer_gunz_replies_total counter
foyer_gunz_replies_total{kind="locator"} 4
# HELP foyer_gunz_drops_total GunZ datagrams dropped unanswered, by reason.
# TYPE foyer_gunz_drops_total counter
foyer_gunz_drops_total{reason="checksum"} 1
# HELP foyer_gunz_kernel_drops_total Datagrams the kernel dropped at the GunZ socket before any read: refused by the socket filter, or with no room left in its receive buffer.
# TYPE foyer_gunz_kernel_drops_total counter
foyer_gunz_kernel_drops_total 7
# HELP foyer_web_drops_total Public server list connections and requests refused or cut, by reason.
# TYPE foyer_web_drops_total counter
foyer_web_drops_total{reason="slow_reader"} 2
# HELP foyer_web_connections Public server list connections holding a place.
# TYPE foyer_web_connections gauge
foyer_web_connections 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// The log's drops are a counter of their own.
func TestMetricsOfTheLog(t *testing.T) {
	reg := foyerRegistry(t, Sources{LogDropped: func() uint64 { return 12 }})
	const want = `# HELP foyer_log_lines_dropped_total Log lines dropped unwritten: the log's writer (stderr) took them no faster than they came, and the server does not wait for it.
# TYPE foyer_log_lines_dropped_total counter
foyer_log_lines_dropped_total 12
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// The admin listener counts what its gate refuses or cuts.
func TestAdminDropsCounted(t *testing.T) {
	d := newDropCounts()
	d.add("slow_reader")
	d.add("slow_reader")
	d.add("conn_limit")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d.collector())
	const want = `# HELP foyer_admin_drops_total Admin listener connections and requests refused or cut, by reason.
# TYPE foyer_admin_drops_total counter
foyer_admin_drops_total{reason="conn_limit"} 1
foyer_admin_drops_total{reason="slow_reader"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// The page's registry adds the Go runtime's and the process's standard
// series to Foyer's.
func TestRegistryHasRuntimeAndProcess(t *testing.T) {
	reg := newRegistry(Sources{Rooms: func() room.Snapshot { return room.Snapshot{} }})
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds",
		"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "foyer_room_players"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series, %v", name, n, err)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "foyer_lobby_requests_total", "foyer_gg2_registered"); err != nil || n != 0 {
		t.Errorf("families of unset sources: %d series, %v", n, err)
	}
}

// BenchmarkMetricsPage renders /metrics: "foyer" is Foyer's own families
// (what the page held before the Go and process collectors), "page" the
// whole answer as a scraper gets it.
func BenchmarkMetricsPage(b *testing.B) {
	counts := make([]uint64, len(supervisor.SpawnBuckets)+1)
	rooms := make([]room.Room, 64)
	for i := range rooms {
		rooms[i] = room.Room{ID: uint32(i + 1), State: packet.RoomState(i % 4), Players: 2}
	}
	src := Sources{
		Lobby: func() lobby.Stats {
			return lobby.Stats{Requests: map[string]uint64{"list": 1, "create": 2, "join": 3},
				Drops: map[string]uint64{"rate_limited": 1, "bad_checksum": 2}}
		},
		Supervisor: func() supervisor.Stats {
			return supervisor.Stats{Reaped: map[room.Cause]uint64{"finished": 1}, SpawnLatency: supervisor.Histogram{Counts: counts}}
		},
		Rooms: func() room.Snapshot { return room.Snapshot{Rooms: rooms} },
	}
	for _, row := range []struct {
		name string
		reg  prometheus.Gatherer
	}{
		{"foyer", foyerOnly(src)},
		{"page", newRegistry(src)},
	} {
		b.Run(row.name, func(b *testing.B) {
			h := promhttp.HandlerFor(row.reg, promhttp.HandlerOpts{})
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			var w countingWriter
			b.ReportAllocs()
			for b.Loop() {
				w.n = 0
				h.ServeHTTP(&w, req)
			}
			b.ReportMetric(float64(w.n), "page-bytes")
		})
	}
}

// foyerOnly is a plain registry of Foyer's families alone.
func foyerOnly(src Sources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(foyerCollectors(src)...)
	return reg
}

// countingWriter is a ResponseWriter that keeps only the body's length.
type countingWriter struct {
	h http.Header
	n int
}

func (w *countingWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *countingWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func (w *countingWriter) WriteHeader(int) {}

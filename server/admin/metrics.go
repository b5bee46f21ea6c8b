package admin

import (
	"maps"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/foyerlobby/foyer/internal/limit"

	"github.com/foyerlobby/foyer/cluster"
	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// The edges count with plain atomics (see lobby/internal/tally): on the
// packet path an atomic add is cheaper than a client_golang vector's
// label lookup, and their Stats are what the tests and this page share.
// So Foyer's metrics are not client_golang counters but collectors that
// turn a fresh Stats into constant metrics at each scrape. Labels come
// from fixed sets or from the lobby's and the supervisor's own reason
// names, never from anything a client sends, so the number of series
// stays bounded.

// newRegistry is the registry /metrics shows: the Go runtime's and the
// process's standard metrics and those of every source that is set. It
// is the admin listener's own, not client_golang's global one, so that
// nothing else registered in the process shows up on the page.
func newRegistry(src Sources, extra ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(foyerCollectors(src)...)
	reg.MustRegister(extra...)
	return reg
}

// foyerCollectors are the collectors of the sources that are set.
func foyerCollectors(src Sources) []prometheus.Collector {
	var cs []prometheus.Collector
	if src.Lobby != nil {
		cs = append(cs, stats[lobby.Stats]{src.Lobby, lobbyDescs, collectLobby})
	}
	if src.Supervisor != nil {
		cs = append(cs, stats[supervisor.Stats]{src.Supervisor, supervisorDescs, collectSupervisor})
	}
	if src.Rooms != nil {
		cs = append(cs, stats[room.Snapshot]{src.Rooms, roomsDescs, collectRooms})
	}
	if src.Usage != nil {
		cs = append(cs, stats[map[uint32]cgroup.Usage]{src.Usage, usageDescs, collectUsage})
	}
	if src.HeldPorts != nil {
		cs = append(cs, stats[[]supervisor.HeldPort]{src.HeldPorts, heldDescs, collectHeld})
	}
	if src.GG2 != nil {
		cs = append(cs, stats[gg2server.Stats]{src.GG2, gg2Descs, collectGG2})
	}
	if src.Gunz != nil {
		cs = append(cs, stats[gunzserver.Stats]{src.Gunz, gunzDescs, collectGunz})
	}
	if src.Web != nil {
		cs = append(cs, stats[web.Stats]{src.Web, webDescs, collectWeb})
	}
	if src.Guard != nil {
		cs = append(cs, stats[GuardStats]{src.Guard, guardDescs, collectGuard})
	}
	if src.Cluster != nil {
		cs = append(cs, stats[cluster.Stats]{src.Cluster, clusterDescs, collectCluster})
	}
	if src.LogDropped != nil {
		cs = append(cs, stats[uint64]{src.LogDropped, logDescs, collectLog})
	}
	return cs
}

var (
	logDropped = desc("foyer_log_lines_dropped_total", "Log lines dropped unwritten: the log's writer (stderr) took them no faster than they came, and the server does not wait for it.", "")
	logDescs   = []*prometheus.Desc{logDropped}
)

func collectLog(ch chan<- prometheus.Metric, dropped uint64) { counter(ch, logDropped, dropped) }

// stats is a prometheus.Collector of one source: at each scrape it reads
// the source once and collect turns that snapshot into samples of descs.
type stats[S any] struct {
	read    func() S
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric, s S)
}

func (c stats[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c stats[S]) Collect(ch chan<- prometheus.Metric) { c.collect(ch, c.read()) }

// desc describes a family of Foyer's, labelled by label if it is not "".
func desc(name, help, label string) *prometheus.Desc {
	var labels []string
	if label != "" {
		labels = []string{label}
	}
	return prometheus.NewDesc(name, help, labels, nil)
}

// byName sends one sample of d per name in m, labelled with the name.
func byName(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, m map[string]uint64) {
	for name, v := range m {
		ch <- prometheus.MustNewConstMetric(d, t, float64(v), name)
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v int) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
}

var (
	lobbyRequests        = desc("foyer_lobby_requests_total", "Well-formed requests received, by type.", "type")
	lobbyReplies         = desc("foyer_lobby_replies_total", "Replies sent, by type.", "type")
	lobbyDrops           = desc("foyer_lobby_drops_total", "Datagrams dropped unanswered, by reason.", "reason")
	lobbyRefusals        = desc("foyer_lobby_refusals_total", "CREATE and JOIN answered JOIN_FAILED, by reason.", "reason")
	lobbyGranted         = desc("foyer_lobby_granted_total", "CREATE and JOIN answered with a room.", "type")
	lobbyLimitedSources  = desc("foyer_lobby_rate_limited_sources_total", "Times a source IP went from served to rate limited.", "")
	lobbyRetries         = desc("foyer_lobby_retries_total", "Requests answered from the retry cache.", "")
	lobbyKernelDrops     = desc("foyer_lobby_kernel_drops_total", "Datagrams the kernel dropped at the lobby's sockets before any read: refused by the socket filter as no request the lobby serves, or with no room left in a receive buffer.", "")
	lobbySources         = desc("foyer_lobby_sources", "Source IPs in the rate-limit table.", "")
	lobbyPrefixes        = desc("foyer_lobby_prefixes", "Networks in the reflection-guard table.", "")
	lobbyCreatesInFlight = desc("foyer_lobby_creates_in_flight", "CREATEs being run.", "")

	lobbyDescs = []*prometheus.Desc{lobbyRequests, lobbyReplies, lobbyDrops, lobbyRefusals, lobbyGranted,
		lobbyLimitedSources, lobbyRetries, lobbyKernelDrops, lobbySources, lobbyPrefixes, lobbyCreatesInFlight}
)

func collectLobby(ch chan<- prometheus.Metric, s lobby.Stats) {
	byName(ch, lobbyRequests, prometheus.CounterValue, s.Requests)
	byName(ch, lobbyReplies, prometheus.CounterValue, s.Replies)
	byName(ch, lobbyDrops, prometheus.CounterValue, s.Drops)
	byName(ch, lobbyRefusals, prometheus.CounterValue, s.Failures)
	byName(ch, lobbyGranted, prometheus.CounterValue, s.Granted)
	counter(ch, lobbyLimitedSources, s.LimitedSources)
	counter(ch, lobbyRetries, s.Retries)
	counter(ch, lobbyKernelDrops, s.KernelDrops)
	gauge(ch, lobbySources, s.Sources)
	gauge(ch, lobbyPrefixes, s.Prefixes)
	gauge(ch, lobbyCreatesInFlight, s.CreatesInFlight)
}

var (
	supervisorSpawnSeconds  = desc("foyer_supervisor_spawn_seconds", "Time from launching an instance to its game being ready, successful spawns.", "")
	supervisorExits         = desc("foyer_supervisor_instance_exits_total", "Instances reaped, by cause.", "cause")
	supervisorCreated       = desc("foyer_supervisor_rooms_created_total", "Rooms handed out, warm or cold.", "")
	supervisorWarmHits      = desc("foyer_supervisor_warm_hits_total", "Creates answered from the warm pool.", "")
	supervisorSeatsHeld     = desc("foyer_supervisor_seats_held_total", "Seats newly held by JOIN (each one is a debug log line only).", "")
	supervisorSeatsMoved    = desc("foyer_supervisor_seats_displaced_total", "Seats of unproven JOINs given to JOINs that proved they saw a listing.", "")
	supervisorOverQuota     = desc("foyer_supervisor_seats_over_quota_total", "JOINs refused because their address held seats_per_address seats of the room.", "")
	supervisorDoorRefused   = desc("foyer_room_door_refused_total", "Datagrams the rooms' doors turned away: their senders held no seat.", "")
	supervisorSpawnFailures = desc("foyer_supervisor_spawn_failures_total", "Spawns that produced no instance.", "")
	supervisorQuarantines   = desc("foyer_supervisor_port_quarantines_total", "Ports quarantined because something else held them.", "")
	supervisorWatchDrops    = desc("foyer_supervisor_watch_drops_total", "Room-table events a slow watcher missed.", "")
	supervisorWarm          = desc("foyer_supervisor_warm_instances", "Ready instances not handed out.", "")
	supervisorSpawning      = desc("foyer_supervisor_spawning", "Spawns in flight.", "")
	supervisorPorts         = desc("foyer_supervisor_ports", "Ports of the pool, by state.", "state")
	supervisorDraining      = desc("foyer_draining", "1 while the host is drained: it starts no new room, and those that run play on.", "")
	supervisorLive          = desc("foyer_supervisor_instances", "Rooms with a process on this host: listed, warm or ending.", "")

	supervisorDescs = []*prometheus.Desc{supervisorSpawnSeconds, supervisorExits, supervisorCreated, supervisorWarmHits,
		supervisorSeatsHeld, supervisorSeatsMoved, supervisorOverQuota, supervisorDoorRefused, supervisorSpawnFailures, supervisorQuarantines, supervisorWatchDrops, supervisorWarm, supervisorSpawning, supervisorPorts,
		supervisorDraining, supervisorLive}
)

func collectSupervisor(ch chan<- prometheus.Metric, s supervisor.Stats) {
	ch <- spawnLatency(s.SpawnLatency)
	for cause, n := range s.Reaped {
		ch <- prometheus.MustNewConstMetric(supervisorExits, prometheus.CounterValue, float64(n), string(cause))
	}
	counter(ch, supervisorCreated, s.Created)
	counter(ch, supervisorWarmHits, s.WarmHits)
	counter(ch, supervisorSeatsHeld, s.SeatsHeld)
	counter(ch, supervisorSeatsMoved, s.SeatsDisplaced)
	counter(ch, supervisorOverQuota, s.SeatsOverQuota)
	counter(ch, supervisorDoorRefused, s.DoorRefused)
	counter(ch, supervisorSpawnFailures, s.SpawnFailures)
	counter(ch, supervisorQuarantines, s.Quarantines)
	counter(ch, supervisorWatchDrops, s.WatchDrops)
	gauge(ch, supervisorWarm, s.Warm)
	gauge(ch, supervisorSpawning, s.Spawning)
	gauge(ch, supervisorLive, s.Live)
	draining := 0
	if s.Draining {
		draining = 1
	}
	gauge(ch, supervisorDraining, draining)
	for state, n := range map[string]int{
		"ready": s.PortsReady, "cooling": s.PortsCooling, "quarantined": s.PortsQuarantined, "in_use": s.PortsInUse,
	} {
		ch <- prometheus.MustNewConstMetric(supervisorPorts, prometheus.GaugeValue, float64(n), state)
	}
}

// spawnLatency is the spawn-latency histogram: the supervisor counts per
// bucket, Prometheus wants cumulative counts by upper bound in seconds
// (+Inf is the count).
func spawnLatency(h supervisor.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(supervisor.SpawnBuckets))
	var total uint64
	for i, bound := range supervisor.SpawnBuckets {
		if i < len(h.Counts) {
			total += h.Counts[i]
		}
		buckets[bound.Seconds()] = total
	}
	if len(h.Counts) > len(supervisor.SpawnBuckets) {
		total += h.Counts[len(supervisor.SpawnBuckets)]
	}
	return prometheus.MustNewConstHistogram(supervisorSpawnSeconds, total, h.Sum.Seconds(), buckets)
}

var (
	rooms       = desc("foyer_rooms", "Listed rooms, by state.", "state")
	roomPlayers = desc("foyer_room_players", "Players connected to listed rooms.", "")
	roomSeats   = desc("foyer_room_seats", "Seats held for players still connecting.", "")

	roomsDescs = []*prometheus.Desc{rooms, roomPlayers, roomSeats}
)

// roomStates are listed even when no room is in them, so a dashboard sees
// a zero rather than a gap.
var roomStates = []packet.RoomState{packet.Waiting, packet.Countdown, packet.Playing, packet.Finished}

func collectRooms(ch chan<- prometheus.Metric, snap room.Snapshot) {
	byState := make(map[string]uint64, len(roomStates))
	for _, st := range roomStates {
		byState[st.String()] = 0
	}
	var players, seats int
	for _, r := range snap.Rooms {
		byState[r.State.String()]++
		players += r.Players
		seats += r.Seats
	}
	byName(ch, rooms, prometheus.GaugeValue, byState)
	gauge(ch, roomPlayers, players)
	gauge(ch, roomSeats, seats)
}

// The rooms' usage is one series per room that runs now, labelled by its
// id: a reaped room's series are gone from the next scrape, so the
// number of series is bounded by max_instances.
var (
	roomCPU    = desc("foyer_room_cpu_seconds_total", "CPU time used by each listed room's processes since it started.", "room")
	roomMemory = desc("foyer_room_memory_bytes", "Resident memory of each listed room's processes.", "room")

	usageDescs = []*prometheus.Desc{roomCPU, roomMemory}
)

func collectUsage(ch chan<- prometheus.Metric, rooms map[uint32]cgroup.Usage) {
	for id, u := range rooms {
		label := strconv.FormatUint(uint64(id), 10)
		if u.CPUKnown {
			ch <- prometheus.MustNewConstMetric(roomCPU, prometheus.CounterValue, u.CPU.Seconds(), label)
		}
		if u.ResidentKnown {
			ch <- prometheus.MustNewConstMetric(roomMemory, prometheus.GaugeValue, float64(u.Resident), label)
		}
	}
}

var (
	gg2Requests   = desc("foyer_gg2_requests_total", "GG2-style registrations, unregistrations and list queries.", "kind")
	gg2Drops      = desc("foyer_gg2_drops_total", "GG2-style datagrams and queries dropped, by reason.", "reason")
	gg2Registered = desc("foyer_gg2_registered", "Registered servers in the room table.", "")
	gg2Pending    = desc("foyer_gg2_pending", "Registrations waiting for their TCP check.", "")
	gg2ListConns  = desc("foyer_gg2_list_connections", "List queries being served.", "")
	gg2KernelDrop = desc("foyer_gg2_kernel_drops_total", "Datagrams the kernel dropped at the GG2-style UDP sockets before any read: refused by the socket filter, or with no room left in a receive buffer.", "")

	gg2Descs = []*prometheus.Desc{gg2Requests, gg2Drops, gg2Registered, gg2Pending, gg2ListConns, gg2KernelDrop}
)

func collectGG2(ch chan<- prometheus.Metric, s gg2server.Stats) {
	byName(ch, gg2Requests, prometheus.CounterValue, s.Requests)
	byName(ch, gg2Drops, prometheus.CounterValue, s.Drops)
	gauge(ch, gg2Registered, s.Registered)
	gauge(ch, gg2Pending, s.Pending)
	gauge(ch, gg2ListConns, s.ListConns)
	counter(ch, gg2KernelDrop, s.KernelDrops)
}

var (
	gunzRequests = desc("foyer_gunz_requests_total", "GunZ locator requests received.", "kind")
	gunzReplies  = desc("foyer_gunz_replies_total", "GunZ locator responses sent.", "kind")
	gunzDrops    = desc("foyer_gunz_drops_total", "GunZ datagrams dropped unanswered, by reason.", "reason")
	gunzKernel   = desc("foyer_gunz_kernel_drops_total", "Datagrams the kernel dropped at the GunZ socket before any read: refused by the socket filter, or with no room left in its receive buffer.", "")

	gunzDescs = []*prometheus.Desc{gunzRequests, gunzReplies, gunzDrops, gunzKernel}
)

func collectGunz(ch chan<- prometheus.Metric, s gunzserver.Stats) {
	byName(ch, gunzRequests, prometheus.CounterValue, s.Requests)
	byName(ch, gunzReplies, prometheus.CounterValue, s.Replies)
	byName(ch, gunzDrops, prometheus.CounterValue, s.Drops)
	counter(ch, gunzKernel, s.KernelDrops)
}

var (
	webDrops = desc("foyer_web_drops_total", "Public server list connections and requests refused or cut, by reason.", "reason")
	webConns = desc("foyer_web_connections", "Public server list connections holding a place.", "")

	webDescs = []*prometheus.Desc{webDrops, webConns}
)

func collectWeb(ch chan<- prometheus.Metric, s web.Stats) {
	byName(ch, webDrops, prometheus.CounterValue, s.Drops)
	gauge(ch, webConns, s.Conns)
}

var adminDrops = desc("foyer_admin_drops_total", "Admin listener connections and requests refused or cut, by reason.", "reason")

// dropCounts counts what the admin listener's gate refuses or cuts, by
// the gate's fixed reasons.
type dropCounts struct {
	mu sync.Mutex
	n  map[string]uint64
}

func newDropCounts() *dropCounts { return &dropCounts{n: make(map[string]uint64)} }

func (d *dropCounts) add(reason string) {
	d.mu.Lock()
	d.n[reason]++
	d.mu.Unlock()
}

func (d *dropCounts) snapshot() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.n)
}

func (d *dropCounts) collector() prometheus.Collector {
	return stats[map[string]uint64]{d.snapshot, []*prometheus.Desc{adminDrops}, func(ch chan<- prometheus.Metric, m map[string]uint64) {
		byName(ch, adminDrops, prometheus.CounterValue, m)
	}}
}

// GuardStats is what the guard every edge shares says of itself.
type GuardStats struct {
	limit.Counts
	UnderPressure bool
}

var (
	guardPressure     = desc("foyer_guard_under_pressure", "1 while new sources come faster than they are admitted or a socket drops datagrams.", "")
	guardUnadmitted   = desc("foyer_guard_unadmitted_total", "Requests of never-seen sources refused past the admission budget, every edge.", "")
	guardDenied       = desc("foyer_guard_denied_total", "Datagrams, connections and registrations from the deny list, every edge.", "")
	guardUnverifiedNo = desc("foyer_guard_unverified_replies_dropped_total", "Replies to sources first seen under pressure held back by unverified_reply_limit.", "")

	guardDescs = []*prometheus.Desc{guardPressure, guardUnadmitted, guardDenied, guardUnverifiedNo}
)

func collectGuard(ch chan<- prometheus.Metric, s GuardStats) {
	pressure := 0
	if s.UnderPressure {
		pressure = 1
	}
	gauge(ch, guardPressure, pressure)
	counter(ch, guardUnadmitted, s.Unadmitted)
	counter(ch, guardDenied, s.Denied)
	counter(ch, guardUnverifiedNo, s.UnverifiedDropped)
}

var (
	heldPorts = desc("foyer_supervisor_ports_held", "Ports of the pool in quarantine that a process holds, by holder: a room (one squatting ports not its own), or another process.", "holder")
	heldDescs = []*prometheus.Desc{heldPorts}
)

func collectHeld(ch chan<- prometheus.Metric, held []supervisor.HeldPort) {
	byRoom, other := 0, 0
	for _, h := range held {
		if h.Room != 0 {
			byRoom++
		} else {
			other++
		}
	}
	ch <- prometheus.MustNewConstMetric(heldPorts, prometheus.GaugeValue, float64(byRoom), "room")
	ch <- prometheus.MustNewConstMetric(heldPorts, prometheus.GaugeValue, float64(other), "other")
}

package admin

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/gg2"
	"github.com/foyerlobby/foyer/lobby/gunz"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// The Prometheus text exposition format (version 0.0.4): per metric a
// "# HELP" and a "# TYPE" line, then one "name{label="value"} number" line
// per series. Labels come from fixed sets or from the lobby's and the
// supervisor's own reason names, never from anything a client sends, so
// the number of series stays bounded.

// family starts a metric: its HELP and TYPE lines.
func family(b []byte, name, typ, help string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, help...)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

// sample writes one series; label and value may be empty for a metric
// without labels.
func sample(b []byte, name, label, value string, v float64) []byte {
	b = append(b, name...)
	if label != "" {
		b = append(b, '{')
		b = append(b, label...)
		b = append(b, `="`...)
		b = appendLabelValue(b, value)
		b = append(b, `"}`...)
	}
	b = append(b, ' ')
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		// Counts as integers: 'g' would write a million as 1e+06.
		b = strconv.AppendInt(b, int64(v), 10)
	} else {
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, '\n')
}

// appendLabelValue escapes a label value as the format asks: backslash,
// double quote and line feed.
func appendLabelValue(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// counts writes a family with one series per key of m, in key order.
func counts(b []byte, name, typ, help, label string, m map[string]uint64) []byte {
	b = family(b, name, typ, help)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = sample(b, name, label, k, float64(m[k]))
	}
	return b
}

// single writes a family of one series without labels.
func single(b []byte, name, typ, help string, v float64) []byte {
	return sample(family(b, name, typ, help), name, "", "", v)
}

func appendLobby(b []byte, s lobby.Stats) []byte {
	b = counts(b, "foyer_lobby_requests_total", "counter", "Well-formed requests received, by type.", "type", s.Requests)
	b = counts(b, "foyer_lobby_replies_total", "counter", "Replies sent, by type.", "type", s.Replies)
	b = counts(b, "foyer_lobby_drops_total", "counter", "Datagrams dropped unanswered, by reason.", "reason", s.Drops)
	b = counts(b, "foyer_lobby_refusals_total", "counter", "CREATE and JOIN answered JOIN_FAILED, by reason.", "reason", s.Failures)
	b = counts(b, "foyer_lobby_granted_total", "counter", "CREATE and JOIN answered with a room.", "type", s.Granted)
	b = single(b, "foyer_lobby_rate_limited_sources_total", "counter", "Times a source IP went from served to rate limited.", float64(s.LimitedSources))
	b = single(b, "foyer_lobby_retries_total", "counter", "Requests answered from the retry cache.", float64(s.Retries))
	b = single(b, "foyer_lobby_sources", "gauge", "Source IPs in the rate-limit table.", float64(s.Sources))
	b = single(b, "foyer_lobby_prefixes", "gauge", "Networks in the reflection-guard table.", float64(s.Prefixes))
	b = single(b, "foyer_lobby_creates_in_flight", "gauge", "CREATEs being run.", float64(s.CreatesInFlight))
	return b
}

func appendGG2(b []byte, s gg2.Stats) []byte {
	b = counts(b, "foyer_gg2_requests_total", "counter", "GG2-style registrations, unregistrations and list queries.", "kind", s.Requests)
	b = counts(b, "foyer_gg2_drops_total", "counter", "GG2-style datagrams and queries dropped, by reason.", "reason", s.Drops)
	b = single(b, "foyer_gg2_registered", "gauge", "Registered servers in the room table.", float64(s.Registered))
	b = single(b, "foyer_gg2_pending", "gauge", "Registrations waiting for their TCP check.", float64(s.Pending))
	b = single(b, "foyer_gg2_list_connections", "gauge", "List queries being served.", float64(s.ListConns))
	return b
}

func appendGunz(b []byte, s gunz.Stats) []byte {
	b = counts(b, "foyer_gunz_requests_total", "counter", "GunZ locator requests received.", "kind", s.Requests)
	b = counts(b, "foyer_gunz_replies_total", "counter", "GunZ locator responses sent.", "kind", s.Replies)
	b = counts(b, "foyer_gunz_drops_total", "counter", "GunZ datagrams dropped unanswered, by reason.", "reason", s.Drops)
	return b
}

func appendSupervisor(b []byte, s supervisor.Stats) []byte {
	b = appendSpawnLatency(b, s.SpawnLatency)
	b = counts(b, "foyer_supervisor_instance_exits_total", "counter", "Instances reaped, by cause.", "cause", byCause(s.Reaped))
	b = single(b, "foyer_supervisor_rooms_created_total", "counter", "Rooms handed out, warm or cold.", float64(s.Created))
	b = single(b, "foyer_supervisor_warm_hits_total", "counter", "Creates answered from the warm pool.", float64(s.WarmHits))
	b = single(b, "foyer_supervisor_spawn_failures_total", "counter", "Spawns that produced no instance.", float64(s.SpawnFailures))
	b = single(b, "foyer_supervisor_port_quarantines_total", "counter", "Ports quarantined because something else held them.", float64(s.Quarantines))
	b = single(b, "foyer_supervisor_watch_drops_total", "counter", "Room-table events a slow watcher missed.", float64(s.WatchDrops))
	b = single(b, "foyer_supervisor_warm_instances", "gauge", "Ready instances not handed out.", float64(s.Warm))
	b = single(b, "foyer_supervisor_spawning", "gauge", "Spawns in flight.", float64(s.Spawning))
	b = counts(b, "foyer_supervisor_ports", "gauge", "Ports of the pool, by state.", "state", map[string]uint64{
		"ready": uint64(s.PortsReady), "cooling": uint64(s.PortsCooling),
		"quarantined": uint64(s.PortsQuarantined), "in_use": uint64(s.PortsInUse),
	})
	return b
}

// appendSpawnLatency writes the spawn-latency histogram: cumulative
// buckets in seconds, then +Inf, sum and count.
func appendSpawnLatency(b []byte, h supervisor.Histogram) []byte {
	const name = "foyer_supervisor_spawn_seconds"
	b = family(b, name, "histogram", "Time from launching an instance to its game being ready, successful spawns.")
	var total uint64
	for i, c := range h.Counts {
		total += c
		le := "+Inf"
		if i < len(supervisor.SpawnBuckets) {
			le = strconv.FormatFloat(supervisor.SpawnBuckets[i].Seconds(), 'g', -1, 64)
		}
		b = sample(b, name+"_bucket", "le", le, float64(total))
	}
	if len(h.Counts) == 0 { // no histogram kept: still a well-formed one
		b = sample(b, name+"_bucket", "le", "+Inf", 0)
	}
	b = sample(b, name+"_sum", "", "", h.Sum.Seconds())
	return sample(b, name+"_count", "", "", float64(total))
}

// roomStates are listed even when no room is in them, so a dashboard sees
// a zero rather than a gap.
var roomStates = []packet.RoomState{packet.Waiting, packet.Countdown, packet.Playing, packet.Finished}

func appendRooms(b []byte, snap room.Snapshot) []byte {
	byState := make(map[string]uint64, len(roomStates))
	for _, st := range roomStates {
		byState[st.String()] = 0
	}
	var players, seats uint64
	for _, r := range snap.Rooms {
		byState[r.State.String()]++
		players += uint64(r.Players)
		seats += uint64(r.Seats)
	}
	b = counts(b, "foyer_rooms", "gauge", "Listed rooms, by state.", "state", byState)
	b = single(b, "foyer_room_players", "gauge", "Players connected to listed rooms.", float64(players))
	b = single(b, "foyer_room_seats", "gauge", "Seats held for players still connecting.", float64(seats))
	return b
}

func byCause(m map[room.Cause]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

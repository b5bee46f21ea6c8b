package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/foyerlobby/foyer/cluster"
)

var (
	clusterUp          = desc("foyer_cluster_up", "1 while this host is connected to the cluster and its table written; 0 while it serves its own rooms alone.", "")
	clusterHosts       = desc("foyer_cluster_hosts", "Live hosts of the cluster, this one included.", "")
	clusterRemoteRooms = desc("foyer_cluster_remote_rooms", "Rooms of other hosts in this host's view.", "")
	clusterReconnects  = desc("foyer_cluster_reconnects_total", "Sessions started again after the connection to NATS was lost.", "")
	clusterPlaced      = desc("foyer_cluster_placed_total", "CREATEs placed by this host, by where.", "on")
	clusterSkips       = desc("foyer_cluster_placement_skips_total", "Hosts passed over by a placement: full, silent or refusing.", "")
	clusterForwarded   = desc("foyer_cluster_joins_forwarded_total", "JOINs sent to the host of their room, by outcome.", "outcome")
	clusterServed      = desc("foyer_cluster_served_total", "Requests other hosts sent here, by type.", "type")
	clusterMalformed   = desc("foyer_cluster_malformed_total", "Keys, values and requests from the cluster that could not be read.", "")
	clusterWatchDrops  = desc("foyer_cluster_watch_drops_total", "Room-table events a slow watcher missed.", "")

	clusterDescs = []*prometheus.Desc{clusterUp, clusterHosts, clusterRemoteRooms, clusterReconnects, clusterPlaced,
		clusterSkips, clusterForwarded, clusterServed, clusterMalformed, clusterWatchDrops}
)

// collectCluster writes the cluster's metrics (with [cluster] on).
func collectCluster(ch chan<- prometheus.Metric, s cluster.Stats) {
	up := 0
	if s.Up {
		up = 1
	}
	gauge(ch, clusterUp, up)
	gauge(ch, clusterHosts, s.Hosts)
	gauge(ch, clusterRemoteRooms, s.RemoteRooms)
	counter(ch, clusterReconnects, s.Reconnects)
	byName(ch, clusterPlaced, prometheus.CounterValue, map[string]uint64{"local": s.PlacedLocal, "remote": s.PlacedRemote})
	counter(ch, clusterSkips, s.Skipped)
	byName(ch, clusterForwarded, prometheus.CounterValue, map[string]uint64{
		"granted": s.JoinsForwarded - s.JoinsRefused, "refused": s.JoinsRefused})
	byName(ch, clusterServed, prometheus.CounterValue, map[string]uint64{"create": s.ServedCreates, "join": s.ServedJoins})
	counter(ch, clusterMalformed, s.Malformed)
	counter(ch, clusterWatchDrops, s.WatchDrops)
}

// clusterHealth is the /healthz line while the cluster is down: this host
// serves, its own rooms only.
func clusterHealth(s cluster.Stats) (string, bool) {
	if s.Up {
		return "", false
	}
	return "degraded: cut off from the cluster, serving this host's rooms alone", true
}

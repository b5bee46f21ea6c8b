package admin

import "github.com/foyerlobby/foyer/cluster"

// appendCluster writes the cluster's metrics (with [cluster] on).
func appendCluster(b []byte, s cluster.Stats) []byte {
	up := 0.0
	if s.Up {
		up = 1
	}
	b = single(b, "foyer_cluster_up", "gauge", "1 while this host is connected to the cluster and its table written; 0 while it serves its own rooms alone.", up)
	b = single(b, "foyer_cluster_hosts", "gauge", "Live hosts of the cluster, this one included.", float64(s.Hosts))
	b = single(b, "foyer_cluster_remote_rooms", "gauge", "Rooms of other hosts in this host's view.", float64(s.RemoteRooms))
	b = single(b, "foyer_cluster_reconnects_total", "counter", "Sessions started again after the connection to NATS was lost.", float64(s.Reconnects))
	b = counts(b, "foyer_cluster_placed_total", "counter", "CREATEs placed by this host, by where.", "on", map[string]uint64{
		"local": s.PlacedLocal, "remote": s.PlacedRemote})
	b = single(b, "foyer_cluster_placement_skips_total", "counter", "Hosts passed over by a placement: full, silent or refusing.", float64(s.Skipped))
	b = counts(b, "foyer_cluster_joins_forwarded_total", "counter", "JOINs sent to the host of their room, by outcome.", "outcome", map[string]uint64{
		"granted": s.JoinsForwarded - s.JoinsRefused, "refused": s.JoinsRefused})
	b = counts(b, "foyer_cluster_served_total", "counter", "Requests other hosts sent here, by type.", "type", map[string]uint64{
		"create": s.ServedCreates, "join": s.ServedJoins})
	b = single(b, "foyer_cluster_malformed_total", "counter", "Keys, values and requests from the cluster that could not be read.", float64(s.Malformed))
	b = single(b, "foyer_cluster_watch_drops_total", "counter", "Room-table events a slow watcher missed.", float64(s.WatchDrops))
	return b
}

// clusterHealth is the /healthz line while the cluster is down: this host
// serves, its own rooms only.
func clusterHealth(s cluster.Stats) (string, bool) {
	if s.Up {
		return "", false
	}
	return "degraded: cut off from the cluster, serving this host's rooms alone", true
}

package admin

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cluster"
)

// TestClusterHealthAndMetrics: a host cut off from its cluster answers
// /healthz "degraded" (it still serves: 200) and says so in /metrics.
func TestClusterHealthAndMetrics(t *testing.T) {
	var up atomic.Bool
	s, err := New(Config{Listen: "127.0.0.1:0"}, Sources{Cluster: func() cluster.Stats {
		return cluster.Stats{Host: "a", Up: up.Load(), Hosts: 3, RemoteRooms: 7, PlacedRemote: 2, JoinsForwarded: 5, JoinsRefused: 1}
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Serve(ctx)
	if code, _, body := get(t, s, "GET", "/healthz"); code != 200 || !strings.HasPrefix(body, "degraded: ") {
		t.Errorf("/healthz cut off: %d %q; want 200 degraded", code, body)
	}
	e := scrape(t, s)
	for series, want := range map[string]float64{
		"foyer_cluster_up": 0, "foyer_cluster_hosts": 3, "foyer_cluster_remote_rooms": 7,
		`foyer_cluster_placed_total{on="remote"}`:                2,
		`foyer_cluster_joins_forwarded_total{outcome="granted"}`: 4,
	} {
		if got, ok := e[series]; !ok || got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	up.Store(true)
	if code, _, body := get(t, s, "GET", "/healthz"); code != 200 || !strings.HasPrefix(body, "ok\n") {
		t.Errorf("/healthz connected: %d %q; want 200 ok", code, body)
	}
	if got := scrape(t, s)["foyer_cluster_up"]; got != 1 {
		t.Errorf("foyer_cluster_up = %v connected, want 1", got)
	}
}

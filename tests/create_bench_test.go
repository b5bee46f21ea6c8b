package tests

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/webtest"
)

// BenchmarkCreateFromClient measures CREATE → ROOM_CREATED as a client
// sees it, over UDP against foyer serve, its rooms in cgroups where the
// host has them: cold (no warm room: the create waits for a reference
// room to start) and warm (warm = 1: the create takes the room started
// ahead). Each room is stopped once created, and the next create waits
// until it is gone and the warm pool is full again, so that every create
// finds the lobby alike. It reports the p50 and p99 in milliseconds, the
// p50 of a LIST's round trip beside it, the p50 and p99 until the creator
// plays (its CLIENT_HELLO to the room's port, sent as soon as it hears of
// the room, answered), and for cold creates the p50 of each phase of
// their spawns.
func BenchmarkCreateFromClient(b *testing.B) {
	for _, mode := range []struct {
		name string
		warm int
	}{{"cold", 0}, {"warm", 1}} {
		b.Run(mode.name, func(b *testing.B) {
			s := startServerLogging(b, "info", createsUnlimited,
				fmt.Sprintf("warm = %d\nport_cooldown = \"1ms\"\nseats_per_address = 64\n", mode.warm))
			base := s.adminBase(b)
			c := newClient(b, "127.0.0.1", s.lobby)
			c.list(1) // a player lists first: its CREATEs are a verified source's
			var took, played, listed []time.Duration
			seq := uint16(1)
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
				if resp, body := webtest.Fetch(b, nil, http.MethodPost, fmt.Sprintf("%s/rooms/%d/stop", base, id)); resp.StatusCode != http.StatusAccepted {
					b.Fatalf("stopping room %d: %s %s", id, resp.Status, body)
				}
			}
			b.ReportMetric(percentile(took, 50)/1000, "p50-ms")
			b.ReportMetric(percentile(took, 99)/1000, "p99-ms")
			b.ReportMetric(percentile(played, 50)/1000, "play-p50-ms")
			b.ReportMetric(percentile(played, 99)/1000, "play-p99-ms")
			// The floor of any request: a LIST's round trip, just before.
			b.ReportMetric(percentile(listed, 50)/1000, "list-p50-ms")
			if mode.warm == 0 {
				// Where the cold creates' time went, as the lobby logged
				// it: the spawn's phases (see supervisor's "room created").
				for _, phase := range []string{"spawn", "prep", "fork", "boot", "dial", "watch", "ready"} {
					var ds []time.Duration
					for _, m := range s.logs.lines("room created") {
						if v, ok := m[phase+"_ms"].(float64); ok {
							ds = append(ds, time.Duration(v*float64(time.Millisecond)))
						}
					}
					b.ReportMetric(percentile(ds, 50)/1000, phase+"-p50-ms")
				}
			}
		})
	}
}

// createsUnlimited lets a benchmark's one client create (and list) as
// fast as it likes.
const createsUnlimited = "rate = 1000\nburst = 2000\ncreate_rate = 1000\ncreate_burst = 1000\ncreate_network_rate = 1000\ncreate_network_burst = 1000\n"

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

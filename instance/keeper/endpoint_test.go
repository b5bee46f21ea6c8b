package keeper

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
)

// heard is a KeptReporter and Labeler that keeps what the endpoint
// reports, with the seats of the IPs in seated and the seat token "seat"
// (seat 3).
type heard struct {
	mu        sync.Mutex
	seated    map[netip.Addr]bool
	labels    map[string]string // the tags set, by key
	name      string
	details   []instance.Details
	states    []packet.RoomState
	connected []netip.Addr
	left      []netip.Addr
}

func (h *heard) SetState(s packet.RoomState) {
	h.mu.Lock()
	h.states = append(h.states, s)
	h.mu.Unlock()
}
func (h *heard) PlayerConnected(ip netip.Addr) {
	h.mu.Lock()
	h.connected = append(h.connected, ip)
	h.mu.Unlock()
}
func (h *heard) PlayerDisconnected(ip netip.Addr) {
	h.mu.Lock()
	h.left = append(h.left, ip)
	h.mu.Unlock()
}
func (h *heard) SetDetails(d instance.Details) {
	h.mu.Lock()
	h.details = append(h.details, d)
	h.mu.Unlock()
}
func (h *heard) Exited(int, string) {}
func (h *heard) Seated(ip netip.Addr) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.UnixMilli(1e12), h.seated[ip]
}

func (h *heard) SeatToken(b []byte) (uint32, time.Time, bool) {
	if string(b) != "seat" {
		return 0, time.Time{}, false
	}
	return 3, time.UnixMilli(1e12), true
}
func (h *heard) SetName(name string) {
	h.mu.Lock()
	h.name = name
	h.mu.Unlock()
}
func (h *heard) SetMode(string) {}
func (h *heard) SetMap(string)  {}
func (h *heard) SetLabel(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if value == "" {
		delete(h.labels, key)
		return
	}
	h.labels[key] = value
}

// lastDetails is the last account reported.
func (h *heard) lastDetails() instance.Details {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.details[len(h.details)-1]
}

// serveEndpoint serves an endpoint for a room of 2 players in a test
// directory and returns it, what it reported, and a client of it.
func serveEndpoint(t testing.TB) (*endpoint, *heard, *http.Client) {
	t.Helper()
	e, err := newEndpoint(t.TempDir(), instance.Assignment{RoomID: 7, Port: 30007, MaxPlayers: 2})
	if err != nil {
		t.Fatal(err)
	}
	h := &heard{labels: map[string]string{}, seated: map[netip.Addr]bool{
		netip.MustParseAddr("10.0.0.1"): true, netip.MustParseAddr("10.0.0.2"): true, netip.MustParseAddr("10.0.0.3"): true,
	}}
	e.serve(h)
	t.Cleanup(e.close)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.path)
	}}}
	return e, h, c
}

// do sends a request with body to the endpoint and returns its status and
// JSON answer.
func do(t testing.TB, c *http.Client, method, route, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://room"+route, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %q is not JSON", method, route, b)
		}
	}
	return resp.StatusCode, v
}

// TestEndpointRoutes checks each route against what it reports: ready
// closes the ready channel, a player comes in only on a seat and only
// while there is room, leaves once, the seat of an address is verified
// and so is a seat token, metadata and tags reach the host's account and
// its listings (tags replacing tags), states and the shutdown reach the host, and malformed
// or oversized bodies are refused.
func TestEndpointRoutes(t *testing.T) {
	e, h, c := serveEndpoint(t)
	if code, _ := do(t, c, "POST", "/v1/ready", ""); code != http.StatusNoContent {
		t.Fatalf("ready: %d", code)
	}
	select {
	case <-e.ready:
	default:
		t.Fatal("ready did not make the room ready")
	}
	for _, tc := range []struct {
		method, route, body string
		code                int
		field               string
		want                any
	}{
		{"POST", "/v1/players/connect", `{"address":"10.0.0.9:5"}`, 403, "error", "no_seat"},
		{"POST", "/v1/players/connect", `{"address":"10.0.0.1:5"}`, 200, "players", 1.0},
		{"POST", "/v1/players/connect", `{"address":"10.0.0.1:5"}`, 200, "players", 1.0},
		{"POST", "/v1/players/connect", `{"address":"[::ffff:10.0.0.2]:6"}`, 200, "players", 2.0},
		{"POST", "/v1/players/connect", `{"address":"10.0.0.3:7"}`, 409, "error", "full"},
		{"POST", "/v1/players/disconnect", `{"address":"10.0.0.1:5"}`, 200, "players", 1.0},
		{"POST", "/v1/players/disconnect", `{"address":"10.0.0.1:5"}`, 404, "error", "not_connected"},
		{"POST", "/v1/players/connect", `{"address":"nowhere"}`, 400, "error", "bad_address"},
		{"POST", "/v1/seats/verify", `{"address":"10.0.0.3:7"}`, 200, "seated", true},
		{"POST", "/v1/seats/verify", `{"address":"10.0.0.9:7"}`, 200, "seated", false},
		{"POST", "/v1/seats/verify", `{"token":"73656174"}`, 200, "seat", 3.0},
		{"POST", "/v1/seats/verify", `{"token":"73656175"}`, 200, "seated", false},
		{"POST", "/v1/seats/verify", `{"token":"xyz"}`, 400, "error", "bad_token"},
		{"PUT", "/v1/metadata", `{"name":"n","tags":{"K":"v"}}`, 400, "error", "bad_tags"},
		{"PUT", "/v1/metadata", `{"name":"n","tags":{"a":"1","b":"2","c":"3","d":"4","e":"5"}}`, 400, "error", "bad_tags"},
		{"PUT", "/v1/metadata", `{"name":"n","tags":{"k":"v","x":"y"}}`, 204, "", nil},
		{"PUT", "/v1/metadata", `{"name":`, 400, "error", "bad_request"},
		{"PUT", "/v1/metadata", `{"name":"` + strings.Repeat("x", maxEndpointBody) + `"}`, 400, "error", "bad_request"},
		{"POST", "/v1/state", `{"state":"finished"}`, 400, "error", "bad_state"},
		{"GET", "/v1/room", "", 200, "room_id", 7.0},
	} {
		code, v := do(t, c, tc.method, tc.route, tc.body)
		if code != tc.code || v[tc.field] != tc.want {
			t.Errorf("%s %s %.40s: %d %v, want %d with %s %v", tc.method, tc.route, tc.body, code, v, tc.code, tc.field, tc.want)
		}
	}
	if got := h.lastDetails(); got.Players != 1 || got.MaxPlayers != 2 {
		t.Errorf("the last account is %+v, want 1 player of 2", got)
	}
	if len(h.connected) != 2 || len(h.left) != 1 {
		t.Errorf("reported %v connected, %v left", h.connected, h.left)
	}
	if code, _ := do(t, c, "PUT", "/v1/metadata", `{"name":"Room","mode":"duel","map":"arena","tags":{"k":"w"}}`); code != http.StatusNoContent {
		t.Fatalf("metadata: %d", code)
	}
	if got := h.lastDetails(); got.Name != "Room" || got.Game != "duel" || got.Map != "arena" || got.Players != 1 {
		t.Errorf("metadata reported as %+v", got)
	}
	if h.name != "Room" || len(h.labels) != 1 || h.labels["k"] != "w" {
		t.Errorf("listed as %q tagged %v, want Room tagged k=w", h.name, h.labels)
	}
	do(t, c, "POST", "/v1/state", `{"state":"countdown"}`)
	do(t, c, "POST", "/v1/allocate", "")
	do(t, c, "POST", "/v1/shutdown", "")
	if want := []packet.RoomState{packet.Countdown, packet.Playing, packet.Finished}; len(h.states) != 3 ||
		h.states[0] != want[0] || h.states[1] != want[1] || h.states[2] != want[2] {
		t.Errorf("states reported %v, want %v", h.states, want)
	}
}

// BenchmarkEndpointRequest measures what a game server's report costs
// through the endpoint: one POST /v1/health over the Unix socket, the
// connection kept, as a game's HTTP client keeps it.
func BenchmarkEndpointRequest(b *testing.B) {
	_, _, c := serveEndpoint(b)
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", "http://room/v1/health", nil)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b.Fatalf("health: %d", resp.StatusCode)
		}
	}
}

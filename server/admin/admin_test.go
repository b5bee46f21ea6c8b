package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/buildinfo"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/webtest"
	"github.com/foyerlobby/foyer/lobby/client"
)

// startAdmin serves the admin pages of a real lobby on a free loopback
// port until the end of the test, and checks that Serve then returns nil.
func startAdmin(t *testing.T, l *testLobby) *Server {
	t.Helper()
	s, err := New(Config{Listen: "127.0.0.1:0"}, sourcesOf(l), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	return s
}

// serve runs s until the end of the test, and checks that Serve then
// returns nil.
func serve(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// get fetches path and returns the status and body.
func get(t *testing.T, s *Server, method, path string) (int, http.Header, string) {
	t.Helper()
	resp, body := webtest.Fetch(t, nil, method, "http://"+s.Addr().String()+path)
	return resp.StatusCode, resp.Header, body
}

// scrape fetches /metrics, parses it with Prometheus's own parser and
// returns its samples by series, written as in the text format:
// name{label="value"}, and a histogram's name_bucket{le="bound"},
// name_sum and name_count.
func scrape(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	return scrapeVia(t, s, nil)
}

// scrapeVia is scrape through the client c (nil for the default one).
func scrapeVia(t *testing.T, s *Server, c *http.Client) map[string]float64 {
	t.Helper()
	resp, body := webtest.Fetch(t, c, "GET", "http://"+s.Addr().String()+"/metrics")
	code, h := resp.StatusCode, resp.Header
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain; version=0.0.4") || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("/metrics: %d %q %q", code, h.Get("Content-Type"), h.Get("Cache-Control"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := name
			if len(labels) > 0 {
				series += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[series] = m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				out[series] = m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				hist := m.Histogram
				for _, b := range hist.Bucket {
					out[fmt.Sprintf("%s_bucket{le=%q}", name, strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))] = float64(b.GetCumulativeCount())
				}
				out[name+`_bucket{le="+Inf"}`] = float64(hist.GetSampleCount())
				out[name+"_count"] = float64(hist.GetSampleCount())
				out[name+"_sum"] = hist.GetSampleSum()
			}
		}
	}
	return out
}

// value returns the value of series, failing the test if there is none.
func value(t *testing.T, samples map[string]float64, series string) float64 {
	t.Helper()
	v, ok := samples[series]
	if !ok {
		t.Fatalf("no series %s", series)
	}
	return v
}

var garbageBytes = []byte("GET / HTTP/1.0\r\n\r\n")

func TestMetricsFollowTraffic(t *testing.T) {
	l := startLobby(t, 2)
	s := startAdmin(t, l)
	before := scrape(t, s)
	for series, want := range map[string]float64{
		`foyer_lobby_requests_total{type="list"}`:          0,
		`foyer_rooms{state="waiting"}`:                     0,
		`foyer_supervisor_spawn_seconds_count`:             0,
		`foyer_lobby_rate_limited_sources_total`:           0,
		`foyer_supervisor_ports{state="in_use"}`:           0,
		`foyer_supervisor_spawn_seconds_bucket{le="+Inf"}`: 0,
	} {
		if got := value(t, before, series); got != want {
			t.Errorf("before any traffic: %s = %v, want %v", series, got, want)
		}
	}

	// One attempt each, however slow the machine: the counts below are
	// exact.
	c := l.Client(client.WithTimeout(time.Minute))
	ctx := context.Background()
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}
	seat, err := c.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, seat.Room+1000); err == nil {
		t.Fatal("join of a missing room succeeded")
	}
	garbage, err := net.Dial("udp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	garbage.Write(garbageBytes)
	// The garbage is counted when it arrives (the kernel drops it); a
	// LIST sent after it on the same path is answered after that.
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}

	after := scrape(t, s)
	for series, want := range map[string]float64{
		`foyer_lobby_requests_total{type="list"}`:      2,
		`foyer_lobby_requests_total{type="create"}`:    1,
		`foyer_lobby_requests_total{type="join"}`:      1,
		`foyer_lobby_granted_total{type="create"}`:     1,
		`foyer_lobby_refusals_total{reason="no_room"}`: 1,
		`foyer_rooms{state="waiting"}`:                 1,
		`foyer_room_seats`:                             1,
		`foyer_supervisor_spawn_seconds_count`:         1,
		`foyer_supervisor_rooms_created_total`:         1,
		`foyer_supervisor_ports{state="in_use"}`:       1,
	} {
		if got := value(t, after, series); got != want {
			t.Errorf("after traffic: %s = %v, want %v", series, got, want)
		}
	}
	// No request has the garbage's shape: the socket filter drops it.
	if got := value(t, after, "foyer_lobby_kernel_drops_total"); got != 1 {
		t.Errorf("kernel drops after one garbage datagram: %v, want 1", got)
	}
	if sum := value(t, after, "foyer_supervisor_spawn_seconds_sum"); sum <= 0 {
		t.Errorf("spawn latency sum %v after a spawn", sum)
	}
}

func TestRoomsPage(t *testing.T) {
	l := startLobby(t, 3)
	s := startAdmin(t, l)
	var empty tableJSON
	code, h, body := get(t, s, "GET", "/rooms")
	if code != 200 || h.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &empty) != nil ||
		empty.Rooms == nil || len(empty.Rooms) != 0 || !strings.Contains(body, `"rooms": []`) {
		t.Fatalf("/rooms of no rooms: %d %q\n%s", code, h.Get("Content-Type"), body)
	}
	// The room starts between these two moments: its start time must say
	// so, and its age can be no more than the time since the first.
	beforeCreate := time.Now()
	seat, err := l.Client().Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _, body = get(t, s, "GET", "/rooms")
	sincePage := time.Since(beforeCreate)
	afterPage := time.Now()
	var table tableJSON
	if err := json.Unmarshal([]byte(body), &table); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if len(table.Rooms) != 1 {
		t.Fatalf("/rooms after a create:\n%s", body)
	}
	r := table.Rooms[0]
	if r.ID != seat.Room || r.Port != seat.Port || r.State != "waiting" || r.MaxPlayers != 3 ||
		r.Players+r.Seats != 1 || r.PID == 0 || r.Source != "instance" || r.AgeSeconds < 0 || r.AgeSeconds > sincePage.Seconds() ||
		r.StartedAt.Before(beforeCreate.Round(0)) || r.StartedAt.After(afterPage.Round(0)) || table.Version <= empty.Version {
		t.Errorf("/rooms row %+v (version %d after %d) for room %d port %d", r, table.Version, empty.Version, seat.Room, seat.Port)
	}
	// Where the room runs in cgroups, what it uses is measured, and the
	// page says so. The checks above hold without them: only this one
	// waits for a host with cgroups.
	requiretest.Cgroups(t)
	if r.CPUSeconds == nil || *r.CPUSeconds <= 0 || r.MemoryBytes == nil || *r.MemoryBytes < 0 {
		t.Errorf("/rooms row without usage:\n%s", body)
	}
}

func TestHealthzAndMethods(t *testing.T) {
	l := startLobby(t, 4)
	s := startAdmin(t, l)
	if code, _, body := get(t, s, "GET", "/healthz"); code != 200 || body != "ok\nfoyer "+buildinfo.Version()+"\n" {
		t.Errorf("/healthz while serving: %d %q", code, body)
	}
	if code, _, body := get(t, s, "HEAD", "/healthz"); code != 200 || body != "" {
		t.Errorf("HEAD /healthz: %d %q", code, body)
	}
	if code, _, _ := get(t, s, "POST", "/metrics"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", code)
	}
	if code, _, _ := get(t, s, "GET", "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d", code)
	}
	s.Drain()
	if code, _, body := get(t, s, "GET", "/healthz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "shutting down\n") {
		t.Errorf("/healthz after Drain: %d %q", code, body)
	}
	// The other pages still answer: the lobby still has rooms to show.
	if code, _, _ := get(t, s, "GET", "/rooms"); code != 200 {
		t.Errorf("/rooms after Drain: %d", code)
	}
}

func TestDisabled(t *testing.T) {
	s, err := New(Config{}, Sources{}, zerolog.Nop())
	if s != nil || err != nil {
		t.Fatalf("New with no address: %v, %v; want a nil server", s, err)
	}
	s.Drain()
	if s.Addr().IsValid() {
		t.Errorf("a disabled server has address %v", s.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Serve(ctx); err != nil {
		t.Errorf("Serve of a disabled server: %v", err)
	}
}

func TestListenErrorNamesTheAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, err = New(Config{Listen: taken.Addr().String()}, Sources{}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("New on a taken port: %v", err)
	}
}

// Connections are bounded before any token is checked: past its share, a
// source's new connections are closed at once, so that connections opened
// and never used cannot take every descriptor of the process.
func TestConnectionsBounded(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0"}, Sources{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	conns := make([]net.Conn, maxConnsPerSource+10)
	for i := range conns {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	// The newest is past the share: the server closes it.
	last := conns[len(conns)-1]
	last.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := last.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the connection past the share: %v, want it closed", err)
	}
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	if open != maxConnsPerSource {
		t.Errorf("%d connections of one source held, want %d", open, maxConnsPerSource)
	}
}

package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// patience bounds waits for things that must happen; it is never a speed
// check.
const patience = 20 * time.Second

// stream is an open board/events stream, its frames decoded as they come.
type stream struct {
	resp   *http.Response
	frames chan frameJSON
	ended  chan error // the body's end: nil for a clean end
}

// openStream opens url's event stream with client and fails the test
// unless it answers 200 with an event stream.
func openStream(t *testing.T, client *http.Client, url string) *stream {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("%s: %d %q", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	st := &stream{resp: resp, frames: make(chan frameJSON, 16), ended: make(chan error, 1)}
	t.Cleanup(func() { resp.Body.Close() })
	go st.read(t)
	return st
}

// read decodes the events: a "retry:" line first, then one "data:" line
// of JSON per event.
func (st *stream) read(t *testing.T) {
	defer close(st.frames)
	r := bufio.NewReader(st.resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			st.ended <- err
			return
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var f frameJSON
		if err := json.Unmarshal(data, &f); err != nil {
			t.Errorf("an event that is not a frame (%v): %s", err, data)
			continue
		}
		st.frames <- f
	}
}

// until returns the first frame for which ok holds.
func (st *stream) until(t *testing.T, what string, ok func(frameJSON) bool) frameJSON {
	t.Helper()
	timeout := time.After(patience)
	var last frameJSON
	for {
		select {
		case f, open := <-st.frames:
			if !open {
				t.Fatalf("the stream ended before %s", what)
			}
			if ok(f) {
				return f
			}
			last = f
		case <-timeout:
			t.Fatalf("no frame with %s within %v; the last: %+v", what, patience, last)
		}
	}
}

func roomIn(rooms []roomJSON, id uint32) (roomJSON, bool) {
	i := slices.IndexFunc(rooms, func(r roomJSON) bool { return r.ID == id })
	if i < 0 {
		return roomJSON{}, false
	}
	return rooms[i], true
}

// The board follows the table: a new room shows as soon as it is made, a
// room that dies shows as ended with its cause, and the counters turn into
// rates.
func TestBoardStreamFollowsTheTable(t *testing.T) {
	l := startLobby(t, 3)
	s := startAdmin(t, l)
	base := "http://" + s.Addr().String()
	st := openStream(t, http.DefaultClient, base+"/board/events")
	first := st.until(t, "a frame", func(frameJSON) bool { return true })
	if len(first.Rooms) != 0 || first.Ended == nil || first.Rates.Points != ratePoints || first.Spawn == nil || first.Spawn.Count != 0 ||
		len(first.Totals.States) != len(roomStates) {
		t.Fatalf("first frame of an empty lobby: %+v", first)
	}

	c := l.Client(client.WithTimeout(time.Minute)) // one attempt, however slow the machine
	seat, err := c.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := st.until(t, "the new room", func(f frameJSON) bool { _, ok := roomIn(f.Rooms, seat.Room); return ok })
	r, _ := roomIn(f.Rooms, seat.Room)
	if r.State != "waiting" || r.Players+r.Seats != 1 || r.MaxPlayers != 3 || r.Port != seat.Port || r.Source != "instance" ||
		f.Totals.Rooms != 1 || f.Totals.Players != 1 || f.Totals.MaxPlayers != 3 || f.Totals.States["waiting"] != 1 || f.Spawn.Count != 1 {
		t.Errorf("frame with the new room: %+v", f)
	}
	st.until(t, "the create's request in the rates", func(f frameJSON) bool { return sumOf(f.Rates.Requests) > 0 })

	// A room whose process dies leaves the table and shows as ended.
	if err := syscall.Kill(r.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f = st.until(t, "the room ended", func(f frameJSON) bool { return len(f.Ended) > 0 })
	if _, listed := roomIn(f.Rooms, seat.Room); listed || f.Ended[0].ID != seat.Room || f.Ended[0].Cause != string(room.Crashed) ||
		f.Ended[0].Port != seat.Port || f.Totals.Rooms != 0 {
		t.Errorf("frame after the room died: %+v", f)
	}
}

func sumOf(v []float64) float64 {
	var n float64
	for _, x := range v {
		n += x
	}
	return n
}

// A stream lasts longer than the server's read and write timeouts, which
// bound one request and one answer; and when the server stops, the
// stream ends cleanly rather than being cut.
func TestBoardStreamOutlivesTheTimeouts(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0"}, Sources{Rooms: func() room.Snapshot { return room.Snapshot{} }}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s.http.ReadTimeout, s.http.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	st := openStream(t, http.DefaultClient, "http://"+s.Addr().String()+"/board/events")
	// A frame a second: the third comes well after both timeouts.
	for range 3 {
		st.until(t, "a frame", func(frameJSON) bool { return true })
	}
	cancel()
	for range st.frames {
	}
	if err := <-st.ended; err != nil {
		t.Errorf("the stream ended with %v when the server stopped, want a clean end", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// Streams are bounded: past maxStreams a page gets 503 and tries again
// later; a closed stream frees its place.
func TestBoardStreamsBounded(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0"}, Sources{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	url := "http://" + s.Addr().String() + "/board/events"
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: maxStreams + 2}}
	streams := make([]*stream, maxStreams)
	for i := range streams {
		streams[i] = openStream(t, client, url)
		streams[i].until(t, "a frame", func(frameJSON) bool { return true })
	}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stream %d: %d, Retry-After %q; want 503 and a delay", maxStreams+1, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	streams[0].resp.Body.Close()
	deadline := time.Now().Add(patience)
	for {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream closed %v ago still holds its place: %d", patience, resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The page and its files: the board's policy runs only the page's own
// script and style; the stream answers HEAD without streaming.
func TestBoardPage(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0"}, Sources{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	for path, want := range map[string]string{
		"/":          "text/html; charset=utf-8",
		"/board.js":  "text/javascript; charset=utf-8",
		"/board.css": "text/css; charset=utf-8",
	} {
		code, h, body := get(t, s, "GET", path)
		if code != 200 || h.Get("Content-Type") != want || h.Get("Content-Security-Policy") != boardPolicy ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || body == "" {
			t.Errorf("GET %s: %d %v", path, code, h)
		}
	}
	for _, directive := range []string{"default-src 'none'", "script-src 'self'", "require-trusted-types-for 'script'"} {
		if !strings.Contains(boardPolicy, directive) {
			t.Errorf("the board's policy lacks %q", directive)
		}
	}
	if strings.Contains(boardPolicy, "unsafe") {
		t.Errorf("the board's policy allows something unsafe: %s", boardPolicy)
	}
	// The page has no inline script or style for the policy to refuse.
	_, _, page := get(t, s, "GET", "/")
	for _, inline := range []string{"<script>", "<style", " style=", "javascript:"} {
		if strings.Contains(page, inline) {
			t.Errorf("the page has inline %q", inline)
		}
	}
	if m := regexp.MustCompile(`\son[a-z]+=`).FindString(page); m != "" {
		t.Errorf("the page has an inline handler %q", m)
	}
	code, h, body := get(t, s, "HEAD", "/board/events")
	if code != 200 || h.Get("Content-Type") != "text/event-stream" || body != "" {
		t.Errorf("HEAD /board/events: %d %q %q", code, h.Get("Content-Type"), body)
	}
	if code, _, _ := get(t, s, "POST", "/"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", code)
	}
	if code, _, _ := get(t, s, "GET", "/index.html"); code != http.StatusNotFound {
		t.Errorf("GET /index.html: %d", code)
	}
}

const testToken = "0123456789abcdef-0123456789abcdef-token"

// With a token, the board takes the token once, from its form or from
// /?token=, for an HttpOnly cookie that opens the board and its stream
// and nothing else.
func TestBoardToken(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0", Token: testToken}, Sources{Rooms: func() room.Snapshot { return room.Snapshot{} }}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	base := "http://" + s.Addr().String()
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	// No token: a login form for the board, 401 for the rest.
	code, h, body := get(t, s, "GET", "/")
	if code != http.StatusUnauthorized || !strings.Contains(body, `<form method="post" action="login">`) ||
		h.Get("Content-Security-Policy") != loginPolicy || strings.Contains(body, "not the token") {
		t.Errorf("GET / without the token: %d %v\n%s", code, h, body)
	}
	for _, path := range []string{"/board/events", "/board.js", "/rooms", "/metrics"} {
		if code, _, _ := get(t, s, "GET", path); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d", path, code)
		}
	}
	// A wrong token: the form again, saying so, and no cookie.
	for _, try := range []func() (*http.Response, error){
		func() (*http.Response, error) { return http.Get(base + "/?token=wrong") },
		func() (*http.Response, error) { return http.PostForm(base+"/login", url.Values{"token": {"wrong"}}) },
		func() (*http.Response, error) {
			return http.PostForm(base+"/login", url.Values{"token": {testToken + "x"}})
		},
	} {
		resp, err := try()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "not the token") || len(resp.Cookies()) != 0 {
			t.Errorf("%s %s with a wrong token: %d %v", resp.Request.Method, resp.Request.URL, resp.StatusCode, resp.Cookies())
		}
	}
	big, err := http.PostForm(base+"/login", url.Values{"token": {strings.Repeat("x", 2*maxLoginBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	big.Body.Close()
	if big.StatusCode != http.StatusRequestEntityTooLarge { // refused unread, before the handler
		t.Errorf("a login form over %d bytes: %d", maxLoginBytes, big.StatusCode)
	}

	// The token, either way: a cookie and back to the board, with the
	// token out of the address.
	for _, try := range []func(c *http.Client) (*http.Response, error){
		func(c *http.Client) (*http.Response, error) { return c.Get(base + "/?token=" + testToken) },
		func(c *http.Client) (*http.Response, error) {
			return c.PostForm(base+"/login", url.Values{"token": {testToken}})
		},
	} {
		jar, _ := cookiejar.New(nil)
		client := &http.Client{Jar: jar, CheckRedirect: noRedirect}
		resp, err := try(client)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cookies := resp.Cookies()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || len(cookies) != 1 {
			t.Fatalf("%s %s: %d to %q, cookies %v", resp.Request.Method, resp.Request.URL, resp.StatusCode, resp.Header.Get("Location"), cookies)
		}
		if c := cookies[0]; c.Name != boardCookie || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" ||
			c.MaxAge <= 0 || strings.Contains(c.Value, testToken) {
			t.Errorf("the board's cookie: %+v", c)
		}
		client.CheckRedirect = nil
		for path, want := range map[string]int{
			"/": 200, "/board.js": 200, "/rooms": http.StatusUnauthorized, "/metrics": http.StatusUnauthorized, "/healthz": http.StatusUnauthorized,
		} {
			resp, err := client.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s with the board's cookie: %d, want %d", path, resp.StatusCode, want)
			}
		}
		st := openStream(t, client, base+"/board/events")
		st.until(t, "a frame", func(frameJSON) bool { return true })
		st.resp.Body.Close()
	}

	// The bearer token opens everything, the board too; the cookie of
	// another token opens nothing.
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET / with the bearer token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("GET", base+"/", nil)
	req.AddCookie(&http.Cookie{Name: boardCookie, Value: boardCookieValue(testToken+"-old", time.Now().Add(time.Hour))})
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / with the cookie of another token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// A frame carries what registrants send as JSON strings: no markup, and
// no line break that could end the event early.
func TestBoardFrameEscapes(t *testing.T) {
	hostile := "<script>alert(1)</script>\n\ndata: {\"rooms\":[]}\r\n\u2028&"
	snap := room.Snapshot{Version: 7}
	now := time.Now()
	for i := range maxBoardRooms + 5 {
		snap.Rooms = append(snap.Rooms, room.Room{ID: uint32(i + 1), Port: 27015, State: packet.Waiting, Players: 1, MaxPlayers: 8,
			StartedAt: now.Add(-time.Duration(i) * time.Second), Source: room.GG2, Name: hostile, Map: hostile, Game: hostile,
			Host: netip.MustParseAddr("192.0.2.1")})
	}
	b := newBoard(Sources{Rooms: func() room.Snapshot { return snap }}, zerolog.Nop())
	frame := b.render(now, nil, nil)
	if i := bytes.IndexAny(frame, "<>\n\r"); i >= 0 {
		t.Fatalf("the frame has %q at %d", frame[i], i)
	}
	if bytes.Contains(frame, []byte("\u2028")) {
		t.Error("the frame has a raw line separator")
	}
	var f frameJSON
	if err := json.Unmarshal(frame, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Rooms) != maxBoardRooms || f.More != 5 || f.Totals.Rooms != maxBoardRooms+5 || f.Totals.Players != maxBoardRooms+5 ||
		f.Rooms[0].Name != hostile || f.Rooms[0].Host != "192.0.2.1" {
		t.Errorf("frame of %d rooms: %d shown, %d more, totals %+v, first %+v", len(snap.Rooms), len(f.Rooms), f.More, f.Totals, f.Rooms[0])
	}
	// Oldest first: the board's order does not move as rooms come.
	if f.Rooms[0].ID != maxBoardRooms+5 || f.Rooms[1].ID != maxBoardRooms+4 {
		t.Errorf("rooms shown first: %d, %d; want the oldest", f.Rooms[0].ID, f.Rooms[1].ID)
	}
}

func TestRates(t *testing.T) {
	start := time.Now()
	var samples []sample
	r := newRing[sample](ratePoints + 1)
	for i := range 2 * ratePoints {
		// Two requests a second; a drop every other second, and one
		// sample taken half a second late.
		at := start.Add(time.Duration(i) * time.Second)
		if i == ratePoints+10 {
			at = at.Add(time.Second / 2)
		}
		r.push(sample{at: at, requests: uint64(2 * i), drops: uint64(i / 2)})
	}
	samples = r.appendTo(samples)
	got := rates(samples)
	if len(got.Requests) != ratePoints || len(got.Drops) != ratePoints || got.Points != ratePoints || got.StepSeconds != 1 {
		t.Fatalf("rates of %d samples: %d and %d values", len(samples), len(got.Requests), len(got.Drops))
	}
	for i, v := range got.Requests {
		want := 2.0
		switch i { // the ring holds samples ratePoints-1 on: the late one is its 11th
		case 10: // 2 over 1.5 s
			want = 1.3
		case 11: // 2 over 0.5 s
			want = 4
		}
		if v != want {
			t.Errorf("requests[%d] = %v, want %v", i, v, want)
		}
	}
	if s := sumOf(got.Drops); s < ratePoints/2-1 || s > ratePoints/2+2 {
		t.Errorf("drops sum to %v over %d s of one drop every other second", s, ratePoints)
	}
	if got := rates(nil); got.Requests == nil || len(got.Requests) != 0 {
		t.Errorf("rates of no samples: %+v; want empty, not null", got)
	}
}

func TestLatency(t *testing.T) {
	n := len(supervisor.SpawnBuckets) + 1
	if l := latency(supervisor.Histogram{Counts: make([]uint64, n)}); l.Count != 0 || l.P50 != "" || l.P95 != "" ||
		len(l.Buckets) != n || l.Buckets[0] != "5ms" || l.Buckets[n-1] != ">5s" {
		t.Errorf("no spawns: %+v", l)
	}
	counts := make([]uint64, n)
	counts[1], counts[4], counts[n-1] = 50, 45, 5 // ≤10ms, ≤50ms, >5s
	l := latency(supervisor.Histogram{Counts: counts, Sum: 100 * 20 * time.Millisecond})
	if l.Count != 100 || l.P50 != "≤10ms" || l.P95 != "≤50ms" || l.MeanMS != 20 {
		t.Errorf("100 spawns: %+v", l)
	}
	counts[n-1] = 6
	if l := latency(supervisor.Histogram{Counts: counts}); l.P50 != "≤50ms" || l.P95 != ">5s" {
		t.Errorf("101 spawns, 6 slow: p50 %s p95 %s", l.P50, l.P95)
	}
}

// The board costs the same on its thousandth frame as on its first: the
// ring keeps its size.
func TestRingKeepsItsSize(t *testing.T) {
	r := newRing[int](3)
	if got := r.appendTo(nil); len(got) != 0 {
		t.Errorf("empty ring: %v", got)
	}
	for i := range 1000 {
		r.push(i)
	}
	if got := r.appendTo(nil); !slices.Equal(got, []int{997, 998, 999}) || len(r.buf) != 3 {
		t.Errorf("ring of 3 after 1000 pushes: %v", got)
	}
}

// The edges' counters add up: every edge's requests and drops, sampled
// as soon as the board is made.
func TestBoardSamplesEveryEdge(t *testing.T) {
	b := newBoard(Sources{
		Lobby: func() lobby.Stats {
			return lobby.Stats{Requests: map[string]uint64{"list": 3, "create": 1}, Drops: map[string]uint64{"rate_limited": 2}}
		},
		GG2: func() gg2server.Stats {
			return gg2server.Stats{Requests: map[string]uint64{"register": 10}, Drops: map[string]uint64{"truncated": 20}}
		},
		Gunz: func() gunzserver.Stats {
			return gunzserver.Stats{Requests: map[string]uint64{"locator": 100}, Drops: map[string]uint64{"checksum": 200}}
		},
	}, zerolog.Nop())
	got := b.samples.appendTo(nil)
	if len(got) != 1 || got[0].requests != 114 || got[0].drops != 222 {
		t.Errorf("samples: %+v", got)
	}
}

// BenchmarkBoardFrame makes the frame every open board gets each second,
// of tables of growing size, with full rate plots.
func BenchmarkBoardFrame(b *testing.B) {
	now := time.Now()
	samples := make([]sample, ratePoints+1)
	for i := range samples {
		samples[i] = sample{at: now.Add(time.Duration(i-ratePoints) * time.Second), requests: uint64(i * 40), drops: uint64(i)}
	}
	for _, n := range []int{10, maxBoardRooms, 1000} {
		b.Run(fmt.Sprintf("rooms=%d", n), func(b *testing.B) {
			snap := room.Snapshot{Version: 1}
			for i := range n {
				snap.Rooms = append(snap.Rooms, room.Room{ID: uint32(i + 1), Port: uint16(20000 + i), State: packet.Playing, Players: 3,
					MaxPlayers: 4, PID: 1000 + i, StartedAt: now.Add(-time.Duration(i) * time.Second), Source: room.Instance})
			}
			counts := make([]uint64, len(supervisor.SpawnBuckets)+1)
			board := newBoard(Sources{
				Rooms:      func() room.Snapshot { return snap },
				Supervisor: func() supervisor.Stats { return supervisor.Stats{SpawnLatency: supervisor.Histogram{Counts: counts}} },
			}, zerolog.Nop())
			b.ReportAllocs()
			var size int
			for b.Loop() {
				size = len(board.render(now, samples, nil))
			}
			b.ReportMetric(float64(size), "bytes/frame")
		})
	}
}

package admin

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/room"
)

// post sends an action: POST path with the headers given, and returns the
// status and body.
func post(t *testing.T, s *Server, path string, c *http.Client, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.Addr().String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// actionSources are a real lobby's sources, its actions included.
func actionSources(l *testLobby) Sources {
	src := sourcesOf(l)
	src.StopRoom, src.Drain, src.RoomLog = l.sup.StopRoom, l.sup.Drain, l.sup.RoomLog
	return src
}

// TestActions: on loopback without a token, a program stops a room, reads
// its log, drains the host (which /healthz and /metrics then say) and
// resumes it; a page of another site cannot, and GET changes nothing.
func TestActions(t *testing.T) {
	l := startLobby(t, 4)
	s, err := New(Config{Listen: "127.0.0.1:0"}, actionSources(l), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	events := l.sup.Table().Watch(t.Context())
	seat, err := l.Client().Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatUint(uint64(seat.Room), 10)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if code, _, body := get(t, s, "GET", "/rooms/"+id+"/log?lines=5"); code == 200 && strings.Contains(body, "room open") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the room's log never showed its opening")
		}
	}
	if code, _, _ := get(t, s, "GET", "/rooms/"+id+"/log?lines=0"); code != http.StatusBadRequest {
		t.Errorf("lines=0: %d", code)
	}
	// Another site's page, by either header a browser sends, is refused.
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "http://evil.example"}} {
		if code, _ := post(t, s, "/rooms/"+id+"/stop", nil, h...); code != http.StatusForbidden {
			t.Errorf("stop with %s: %s: %d, want 403", h[0], h[1], code)
		}
		if code, _ := post(t, s, "/drain", nil, h...); code != http.StatusForbidden || l.sup.Stats().Draining {
			t.Errorf("drain with %s: %s: %d, draining %v", h[0], h[1], code, l.sup.Stats().Draining)
		}
	}
	if code, _, _ := get(t, s, "GET", "/rooms/"+id+"/stop"); code == http.StatusAccepted {
		t.Error("GET stopped a room")
	}
	// The board's own page may.
	if code, body := post(t, s, "/rooms/"+id+"/stop", nil, "Sec-Fetch-Site", "same-origin"); code != http.StatusAccepted || body != "stopping room "+id+"\n" {
		t.Fatalf("stop: %d %q", code, body)
	}
	for ev := range events {
		if ev.Kind == room.Reaped && ev.Room.ID == seat.Room {
			if ev.Cause != room.Operator {
				t.Fatalf("reaped %+v, want cause operator", ev)
			}
			break
		}
	}
	if code, _, body := get(t, s, "GET", "/rooms/"+id+"/log"); code != 200 || !strings.Contains(body, "room finished") {
		t.Errorf("the log of the room that ended: %d %q", code, body)
	}
	if code, _ := post(t, s, "/rooms/"+id+"/stop", nil); code != http.StatusNotFound {
		t.Errorf("stop of a room gone: %d", code)
	}
	if code, body := post(t, s, "/drain", nil, "Origin", "http://"+s.Addr().String()); code != 200 || body != "drained: no room left\n" {
		t.Errorf("drain: %d %q", code, body)
	}
	if code, _, body := get(t, s, "GET", "/healthz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "drained: no room left\n") {
		t.Errorf("/healthz drained: %d %q", code, body)
	}
	if m := scrape(t, s); m["foyer_draining"] != 1 {
		t.Errorf("foyer_draining %v while draining", m["foyer_draining"])
	}
	if _, err := l.Client().Create(context.Background()); err == nil {
		t.Error("a drained host created a room")
	}
	if code, body := post(t, s, "/resume", nil); code != 200 || body != "taking rooms\n" {
		t.Errorf("resume: %d %q", code, body)
	}
	if code, _, body := get(t, s, "GET", "/healthz"); code != 200 || !strings.HasPrefix(body, "ok\n") {
		t.Errorf("/healthz resumed: %d %q", code, body)
	}
	if m := scrape(t, s); m["foyer_draining"] != 0 {
		t.Errorf("foyer_draining %v after resume", m["foyer_draining"])
	}
}

// TestActionsWithToken: with a token, an action wants the bearer token,
// or the board's cookie from the board's own page; a cookie sent by
// anything that does not say where it comes from is refused.
func TestActionsWithToken(t *testing.T) {
	l := startLobby(t, 4)
	s, err := New(Config{Listen: "127.0.0.1:0", Token: testToken}, actionSources(l), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	base := "http://" + s.Addr().String()
	if code, _ := post(t, s, "/drain", nil); code != http.StatusUnauthorized {
		t.Errorf("drain without the token: %d", code)
	}
	if code, _ := post(t, s, "/drain", nil, "Authorization", "Bearer "+testToken+"x"); code != http.StatusUnauthorized {
		t.Errorf("drain with a wrong token: %d", code)
	}
	if code, _, _ := get(t, s, "GET", "/rooms/1/log"); code != http.StatusUnauthorized {
		t.Errorf("a log without the token: %d", code)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if resp, err := browser.Get(base + "/?token=" + testToken); err != nil || resp.StatusCode != 200 {
		t.Fatalf("signing in: %v %v", resp, err)
	}
	if code, _ := post(t, s, "/drain", browser); code != http.StatusForbidden || l.sup.Stats().Draining {
		t.Errorf("drain with the cookie, saying nothing of where it comes from: %d", code)
	}
	if code, _ := post(t, s, "/drain", browser, "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden || l.sup.Stats().Draining {
		t.Errorf("drain with the cookie from another site: %d", code)
	}
	if code, _ := post(t, s, "/drain", browser, "Sec-Fetch-Site", "same-origin"); code != 200 || !l.sup.Stats().Draining {
		t.Errorf("drain with the cookie from the board: %d", code)
	}
	if code, _ := post(t, s, "/resume", nil, "Authorization", "Bearer "+testToken); code != 200 || l.sup.Stats().Draining {
		t.Errorf("resume with the token: %d", code)
	}
}

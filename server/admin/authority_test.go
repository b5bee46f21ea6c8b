package admin

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/room"
)

// tokenServer is a listener on loopback with testToken, whose clock the
// test sets.
func tokenServer(t *testing.T, cfg Config) (*Server, *fakeClock) {
	t.Helper()
	cfg.Listen, cfg.Token = "127.0.0.1:0", testToken
	s, err := New(cfg, Sources{Rooms: func() room.Snapshot { return room.Snapshot{} }}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s.guesses.now = clock.now
	serve(t, s)
	return s, clock
}

// withToken is a client that sends testToken.
var withToken = &http.Client{Transport: bearerTransport{}}

type bearerTransport struct{}

func (bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultTransport.RoundTrip(r)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// do sends one request with the headers given as name, value pairs, and
// returns its status.
func do(t *testing.T, c *http.Client, method, url string, headers ...string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A source gets guessBurst wrong guesses at once, then one per guessEvery;
// past that, every credential it sends is refused unchecked (429), the
// right one too, while another source is served; a request without a
// credential costs nothing. Each way to guess (bearer, login form,
// /?token=, a forged cookie) draws from one allowance.
func TestGuessesThrottledPerSource(t *testing.T) {
	s, clock := tokenServer(t, Config{})
	base := "http://" + s.Addr().String()
	bearer := func(tok string) int { return do(t, nil, "GET", base+"/rooms", "Authorization", "Bearer "+tok) }
	for range 10 { // no credential: no guess
		if code := do(t, nil, "GET", base+"/rooms"); code != 401 {
			t.Fatalf("no credential: %d", code)
		}
	}
	guesses := []func() int{
		func() int { return bearer("wrong") },
		func() int { return do(t, nil, "GET", base+"/?token=wrong") },
		func() int {
			return do(t, nil, "POST", base+"/login?token=x", "Content-Type", "application/x-www-form-urlencoded")
		},
		func() int { return do(t, nil, "GET", base+"/", "Cookie", boardCookie+"=forged") },
		func() int { return bearer(testToken + "x") },
	}
	for i, guess := range guesses {
		if code := guess(); code != 401 {
			t.Errorf("guess %d of %d: %d, want 401", i+1, guessBurst, code)
		}
	}
	for i, guess := range guesses {
		if code := guess(); code != http.StatusTooManyRequests {
			t.Errorf("guess %d past the burst: %d, want 429", i+1, code)
		}
	}
	if code := bearer(testToken); code != http.StatusTooManyRequests {
		t.Errorf("the right token from a throttled source: %d, want 429 (unchecked)", code)
	}
	clock.add(guessEvery)
	if code := bearer("wrong"); code != 401 {
		t.Errorf("a guess after %v: %d, want it checked (401)", guessEvery, code)
	}
	if code := bearer("wrong"); code != http.StatusTooManyRequests {
		t.Errorf("the next: %d, want 429", code)
	}
	clock.add(guessEvery)
	if code := bearer(testToken); code != 200 {
		t.Errorf("the right token after %v: %d", guessEvery, code)
	}
	m := scrapeVia(t, s, withToken)
	if m["foyer_admin_auth_failures_total"] != guessBurst+1 || m["foyer_admin_auth_throttled_total"] != guessBurst+2 {
		t.Errorf("failures %v, throttled %v; want %d and %d", m["foyer_admin_auth_failures_total"],
			m["foyer_admin_auth_throttled_total"], guessBurst+1, guessBurst+2)
	}
}

// In one minute after its burst a source gets ten guesses, whatever it
// sends: the allowance, counted on a clock the test moves.
func TestGuessesPerMinute(t *testing.T) {
	g := newGuesses(zerolog.Nop())
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	g.now = clock.now
	src := source(&http.Request{RemoteAddr: "192.0.2.1:4000"})
	checked := 0
	for range 600 { // ten a second for a minute, after the burst
		if ok, _ := g.take(src); ok {
			checked++
		}
		clock.add(100 * time.Millisecond)
	}
	if want := guessBurst + 10; checked > want || checked < want-1 {
		t.Errorf("%d guesses checked in a minute, want %d (the burst, then ten)", checked, want)
	}
	// An IPv6 source is its /64.
	a := source(&http.Request{RemoteAddr: "[2001:db8::1]:1"})
	b := source(&http.Request{RemoteAddr: "[2001:db8::ffff:2]:1"})
	if a != b {
		t.Errorf("%v and %v are one /64", a, b)
	}
}

// The listener answers only a Host that names it: its own address,
// localhost, or a name of Hosts, with or without a port, whatever the
// token; anything else (a rebinding name) gets 421 and is counted.
func TestHostMustNameTheListener(t *testing.T) {
	s, _ := tokenServer(t, Config{Hosts: []string{"Admin.Example.NET"}})
	url := "http://" + s.Addr().String() + "/rooms"
	auth := "Bearer " + testToken
	for host, want := range map[string]int{
		s.Addr().String():          200,
		"127.0.0.1":                200,
		"localhost:9477":           200,
		"LOCALHOST.":               200,
		"admin.example.net":        200,
		"admin.example.net:8080":   200,
		"rebind.attacker.example":  421,
		"127.0.0.2":                421, // not the address the request came to
		"[::1]":                    421,
		"example.net":              421,
		"admin.example.net.evil":   421,
		"localhost.attacker.test":  421,
		"rebind.attacker.example:": 421,
	} {
		if code := do(t, nil, "GET", url, "Host", host, "Authorization", auth); code != want {
			t.Errorf("Host %q: %d, want %d", host, code, want)
		}
	}
	if m := scrapeVia(t, s, withToken); m["foyer_admin_wrong_host_total"] != 7 {
		t.Errorf("foyer_admin_wrong_host_total %v, want 7", m["foyer_admin_wrong_host_total"])
	}
	// Without a token too.
	open, err := New(Config{Listen: "127.0.0.1:0"}, Sources{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, open)
	if code := do(t, nil, "GET", "http://"+open.Addr().String()+"/rooms", "Host", "rebind.attacker.example"); code != 421 {
		t.Errorf("a rebinding name on a listener without a token: %d, want 421", code)
	}
}

// The board's cookie lasts Session: the browser is told so (Max-Age), and
// the server refuses it after that, asking for the token again, without
// counting a guess.
func TestBoardCookieExpires(t *testing.T) {
	s, clock := tokenServer(t, Config{Session: time.Hour})
	base := "http://" + s.Addr().String()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge != 3600 {
		t.Fatalf("cookies %v, want one for an hour", resp.Cookies())
	}
	cookie := resp.Cookies()[0].Value
	if code := do(t, nil, "GET", base+"/", "Cookie", boardCookie+"="+cookie); code != 200 {
		t.Errorf("the board with a fresh cookie: %d", code)
	}
	clock.add(time.Hour - time.Second)
	if code := do(t, nil, "GET", base+"/", "Cookie", boardCookie+"="+cookie); code != 200 {
		t.Errorf("the board with a cookie a second before it expires: %d", code)
	}
	clock.add(time.Second)
	for range guessBurst + 1 { // no guess: never throttled
		if code := do(t, nil, "GET", base+"/", "Cookie", boardCookie+"="+cookie); code != 401 {
			t.Errorf("the board with an expired cookie: %d, want 401 and the login form", code)
		}
	}
	if m := scrapeVia(t, s, withToken); m["foyer_admin_auth_failures_total"] != 0 {
		t.Errorf("an expired cookie counted as %v failures", m["foyer_admin_auth_failures_total"])
	}
	// Its time cannot be moved on: the MAC covers it.
	b := []byte(cookie)
	b[3] ^= 1
	if code := do(t, nil, "GET", base+"/", "Cookie", boardCookie+"="+string(b)); code != 401 {
		t.Errorf("a cookie with its time changed: %d", code)
	}
}

// A token shorter than MinToken is refused.
func TestShortTokenRefused(t *testing.T) {
	_, err := New(Config{Listen: "127.0.0.1:0", Token: strings.Repeat("x", MinToken-1)}, Sources{}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("a token of %d characters: %v", MinToken-1, err)
	}
}

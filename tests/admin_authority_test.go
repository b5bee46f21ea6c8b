package tests

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// adminFrom is an HTTP client whose connections come from the loopback
// address ip: another source for the admin listener.
func adminFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: readyLimit, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}}
}

// adminDo sends one request with c and returns its status and headers;
// host, when set, is the request's Host header, auth its Authorization.
func adminDo(t *testing.T, c *http.Client, url, host, auth string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// adminTokenServe starts foyer serve with its admin listener on a free
// loopback port, the token read from a file of mode 0640 that `foyer
// token` wrote, and more [admin] keys; it returns the token and the
// listener's base URL.
func adminTokenServe(t *testing.T, keys string) (*readyServe, *exec.Cmd, string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "admin-token")
	if r := cliRun(t, nil, "token", "--file", file); r.code != 0 {
		t.Fatalf("foyer token --file: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	if fi, _ := os.Stat(file); len(token) != 43 || fi.Mode().Perm() != 0o640 {
		t.Fatalf("foyer token --file wrote %q, mode %v; want 43 characters, mode 0640", token, fi.Mode())
	}
	cmd := exec.Command(bin, "serve", "--ready-json", "--config", readyConfig(t,
		"[lobby]\nlisten = \"127.0.0.1:0\"\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken_file = \""+file+"\"\n"+keys))
	s, ready, _, _ := readyServeJSON(t, cmd)
	return s, cmd, token, "http://" + ready.Admin.String()
}

// Guessing the admin token: a source's wrong tokens are checked five at
// once and then one every six seconds (ten a minute), however fast it
// sends them; past that every request of it carrying a token is answered
// 429 unchecked, the right token included, while another source is
// served, and both are counted. A token shorter than 32 characters, and a
// token file other users can read, stop the start with the line of the
// key and the fix; `foyer token` makes one that serve takes.
func TestAdminTokenGuessingThrottled(t *testing.T) {
	s, cmd, token, base := adminTokenServe(t, "")
	attacker, operator := adminFrom("127.0.0.1"), adminFrom("127.0.0.2")
	start := time.Now()
	checked, refused := 0, 0
	const guesses = 300
	for i := range guesses {
		code, h := adminDo(t, attacker, base+"/rooms", "", "Bearer wrong-guess-"+strconv.Itoa(i)+"-padding-to-32-chars")
		switch code {
		case http.StatusUnauthorized:
			checked++
		case http.StatusTooManyRequests:
			if h.Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After")
			}
			refused++
		default:
			t.Fatalf("a wrong token: %d", code)
		}
	}
	took := time.Since(start)
	// Five at once, then one per six seconds of the run (and one for a
	// refill begun before it).
	allowed := 5 + int(took/(6*time.Second)) + 1
	t.Logf("%d wrong tokens in %v: %d checked, %d refused unchecked (allowed: 5, then 10 a minute)", guesses, took.Round(time.Millisecond), checked, refused)
	if checked < 5 || checked > allowed {
		t.Errorf("%d of %d guesses in %v were checked, want 5 to %d", checked, guesses, took, allowed)
	}
	if code, _ := adminDo(t, attacker, base+"/rooms", "", "Bearer "+token); code != http.StatusTooManyRequests {
		t.Errorf("the right token from the throttled source: %d, want 429 (unchecked)", code)
	}
	if code, _ := adminDo(t, operator, base+"/rooms", "", "Bearer "+token); code != 200 {
		t.Errorf("the right token from another source: %d, want 200", code)
	}
	m := adminMetricsVia(t, operator, base, token)
	if m["foyer_admin_auth_failures_total"] != float64(checked) || m["foyer_admin_auth_throttled_total"] != float64(refused+1) {
		t.Errorf("foyer_admin_auth_failures_total %v, foyer_admin_auth_throttled_total %v; want %d and %d",
			m["foyer_admin_auth_failures_total"], m["foyer_admin_auth_throttled_total"], checked, refused+1)
	}
	const throttled = "admin: a source that failed to authenticate too often is throttled"
	awaitLog(t, s.logs, throttled) // the log may lag the answers: it has a pipe of its own
	if len(s.logs.lines(throttled)) != 1 {
		t.Errorf("the throttling of the source is not logged once:\n%s", s.logs)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)

	// Refused at the start: short tokens, token files others read.
	short := readyConfig(t, "[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"passwordpassword\"\n")
	r := cliRun(t, nil, "serve", "--config", short)
	if want := short + `:3: [admin] token "passwordpassword": a token of 16 characters is too short (at least 32): ` + "`foyer token` makes one"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("serve with a 16-character token: exit %d\n%s\nwant %s", r.code, r.stderr, want)
	}
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(token+"\n"), 0o644)
	open := readyConfig(t, "[admin]\nlisten = \"127.0.0.1:0\"\ntoken_file = \""+file+"\"\n")
	r = cliRun(t, nil, "serve", "--config", open)
	if want := open + `:3: [admin] token_file "` + file + `": ` + file + " is readable by every user or writable by its group or others (mode 0644): chmod o-rw,g-w " + file; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("serve with a token file every user reads: exit %d\n%s\nwant %s", r.code, r.stderr, want)
	}
}

// adminMetricsVia fetches /metrics with the token through c.
func adminMetricsVia(t *testing.T, c *http.Client, base, token string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := adminSample.FindStringSubmatch(line); m != nil {
			out[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
	}
	return out
}

// DNS rebinding: a page that points a name of its own at 127.0.0.1 makes
// the browser send that name as the Host. The listener answers such a
// request 421 on every page, token or not, and answers its own address,
// localhost and the names of [admin] hosts.
func TestAdminAnswersOnlyItsOwnHost(t *testing.T) {
	cmd := exec.Command(bin, "serve", "--ready-json", "--config", readyConfig(t,
		"[lobby]\nlisten = \"127.0.0.1:0\"\n[admin]\nlisten = \"127.0.0.1:0\"\nhosts = [\"foyer-admin.example.net\"]\n"))
	s, ready, _, _ := readyServeJSON(t, cmd)
	c := adminFrom("127.0.0.1")
	base := "http://" + ready.Admin.String()
	port := strconv.Itoa(int(ready.Admin.Port()))
	for _, page := range []string{"/rooms", "/metrics", "/", "/healthz", "/board/events"} {
		for host, want := range map[string]int{
			"rebind.attacker.example":          http.StatusMisdirectedRequest,
			"rebind.attacker.example:" + port:  http.StatusMisdirectedRequest,
			"127.0.0.2:" + port:                http.StatusMisdirectedRequest,
			"localhost.attacker.example":       http.StatusMisdirectedRequest,
			ready.Admin.String():               200,
			"localhost:" + port:                200,
			"foyer-admin.example.net:" + port:  200,
			"FOYER-ADMIN.example.net.:" + port: 200,
		} {
			if page == "/board/events" && want == 200 {
				continue // a stream: it does not end
			}
			if code, _ := adminDo(t, c, base+page, host, ""); code != want {
				t.Errorf("GET %s with Host %q: %d, want %d", page, host, code, want)
			}
		}
	}
	if m := adminMetrics(t, base); m["foyer_admin_wrong_host_total"] != 5*4 {
		t.Errorf("foyer_admin_wrong_host_total %v, want %d", m["foyer_admin_wrong_host_total"], 5*4)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}

// The board's sign-in expires: its cookie says so to the browser, and
// the listener refuses it once [admin] session is over, asking for the
// token again.
func TestAdminBoardSessionExpires(t *testing.T) {
	const session = 2 * time.Second
	s, cmd, token, base := adminTokenServe(t, "session = \"2s\"\n")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: readyLimit}
	resp, err := c.Get(base + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u := resp.Request.URL
	if resp.StatusCode != 200 || len(jar.Cookies(u)) != 1 {
		t.Fatalf("GET /?token=: %d, cookies %v", resp.StatusCode, jar.Cookies(u))
	}
	cookie := jar.Cookies(u)[0]
	signedIn := time.Now()
	board := func() int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.AddCookie(cookie) // as a browser that kept it would
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := board(); code != 200 && time.Since(signedIn) < session {
		t.Errorf("the board with a fresh cookie: %d", code)
	}
	time.Sleep(time.Until(signedIn.Add(session + time.Second)))
	if code := board(); code != http.StatusUnauthorized {
		t.Errorf("the board with a cookie past its session: %d, want 401 and the login form", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}

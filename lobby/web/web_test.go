package web

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/webtest"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// describer stands for the GG2-style front-end: details by room port.
type describer struct {
	gen     atomic.Uint64
	details map[uint16]Details
}

func (d *describer) Generation() uint64 { return d.gen.Load() }

func (d *describer) Describe(rooms []room.Room, each func(int, Details)) {
	for i, r := range rooms {
		if det, ok := d.details[r.Port]; ok {
			each(i, det)
		}
	}
}

var vanguard = gg2.MustParseUUID("4fd0319b-5868-4f24-8b77-568cbb18fde9")

// fixture is the pages served on loopback over the real room table with
// one of Foyer's own rooms, a seat held in it, and three registered rooms
// (keys a, b, c), one in another lobby and one no edge describes.
type fixture struct {
	srv  *Server
	base string
	d    *describer
	rt   *roomtabletest.Rooms
	own  room.Room
}

func start(t *testing.T, tweak func(*Config)) *fixture {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	d := &describer{details: map[uint16]Details{
		8190: {Lobby: gg2.GG2LobbyUUID, Bots: 2, GameVersion: "v2.3", GameURL: "https://example.org/gg2"},
		8191: {Lobby: vanguard},
	}}
	srv, rt := edgetest.Start(t, cfg, tweak, func(c Config, rt *roomtabletest.Rooms) (*Server, error) {
		return New(c, rt, d, limit.NewGuard(edgetest.Limits(1000, 1000)), zerolog.Nop())
	})
	own := rt.Add(room.Room{Port: 30001, State: packet.Waiting, Players: 1, MaxPlayers: 4})
	edgetest.HoldSeats(t, rt, own.ID, 1)
	host := netip.MustParseAddr("192.0.2.9")
	rt.Register("a", room.Listing{Addr: netip.AddrPortFrom(host, 8190), Players: 3, MaxPlayers: 8, Name: "Bacon", Game: "Gang Garrison 2", Map: "ctf_truefort", Password: true})
	rt.Register("b", room.Listing{Addr: netip.AddrPortFrom(host, 8191), MaxPlayers: 6, Name: "Vanguard server", Game: "Vanguard"})
	rt.Register("c", room.Listing{Addr: netip.AddrPortFrom(host, 8192), MaxPlayers: 6, Name: "nobody's"})
	return &fixture{srv: srv, base: "http://" + srv.Addrs()[0].String(), d: d, rt: rt, own: own}
}

// id is the id of the room registered under key.
func (f *fixture) id(t *testing.T, key string) uint32 {
	t.Helper()
	r, ok := f.rt.Registered(key)
	if !ok {
		t.Fatalf("nothing registered under %q", key)
	}
	return r.ID
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	c := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return webtest.Fetch(t, &c, http.MethodGet, url)
}

func TestStatusPage(t *testing.T) {
	f := start(t, nil)
	resp, body := get(t, f.base+"/status")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	// The page is titled, and the own lobby named, by Config.Title; the
	// own lobby first, its rooms in room order, then the others.
	want := []string{
		"<title>Foyer Lobby</title>",
		"<h1>Foyer Lobby</h1>",
		"<h2>Active servers in the Foyer Lobby</h2>",
		fmt.Sprintf("<tr><td></td><td>Foyer room %d</td><td>default</td><td>2/4</td><td>foyer</td><td>127.0.0.1:30001</td></tr>", f.own.ID),
		`<tr><td>X</td><td>Bacon</td><td>ctf_truefort</td><td>3+2/8</td><td><a rel="nofollow noopener noreferrer" href="https://example.org/gg2">Gang Garrison 2 v2.3</a></td><td>192.0.2.9:8190</td></tr>`,
		"<h2>Active servers in the Vanguard Lobby</h2>",
		"<tr><td></td><td>Vanguard server</td><td></td><td>0/6</td><td>Vanguard</td><td>192.0.2.9:8191</td></tr>",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(body[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order: %s\n%s", w, body)
		}
		at += i + len(w)
	}
	if strings.Contains(body, "nobody's") {
		t.Error("a room no edge describes is listed")
	}
}

func TestStatusJSON(t *testing.T) {
	f := start(t, func(c *Config) { c.PublicAddr, c.Title = netip.MustParseAddr("198.51.100.1"), "Ann's <GG2>" })
	resp, body := get(t, f.base+"/status.json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var got jsonList
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := jsonList{Lobbies: []jsonLobby{
		{ID: "1ccf16b1-436d-856f-504d-cc1af306aaa7", Name: "Ann's <GG2>", Servers: []jsonServer{
			{Room: f.own.ID, Name: fmt.Sprint("Foyer room ", f.own.ID), Map: "default", Players: 2, Slots: 4, Game: "foyer", Address: "198.51.100.1:30001"},
			{Room: f.id(t, "a"), Password: true, Name: "Bacon", Map: "ctf_truefort", Players: 3, Bots: 2, Slots: 8, Game: "Gang Garrison 2",
				GameVersion: "v2.3", GameURL: "https://example.org/gg2", Address: "192.0.2.9:8190"},
		}},
		{ID: vanguard.String(), Name: "Vanguard Lobby", Servers: []jsonServer{
			{Room: f.id(t, "b"), Name: "Vanguard server", Slots: 6, Game: "Vanguard", Address: "192.0.2.9:8191"},
		}},
	}}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// Every field a registrant sends is shown as text; only http and https
// URLs become links.
func TestHostileFieldsEscaped(t *testing.T) {
	f := start(t, nil)
	xss := `<script>alert(1)</script>"'&`
	other := gg2.MustParseUUID("00000000-0000-0000-0000-0000000000ff")
	for i, url := range []string{"javascript:alert(1)", `https://x.org/"onmouseover="alert(1)`, "data:text/html,<script>", "https://\tx"} {
		port := uint16(9000 + i)
		f.rt.Register(fmt.Sprint("x", i), room.Listing{Addr: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), port),
			Name: xss + "\x00\x1b\xff", Game: xss, Map: xss})
		f.d.details[port] = Details{Lobby: other, GameVersion: xss, GameURL: url}
	}
	f.d.gen.Add(1)
	_, body := get(t, f.base+"/status")
	if strings.Contains(body, "<script") || strings.Contains(body, "javascript:") || strings.Contains(body, "data:") ||
		strings.Contains(body, `"onmouseover`) {
		t.Fatalf("hostile text got through:\n%s", body)
	}
	escaped := "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&amp;"
	if n := strings.Count(body, "<td>"+escaped+"\uFFFD\uFFFD\uFFFD</td>"); n != 4 {
		t.Errorf("%d names shown escaped, want 4", n)
	}
	if !strings.Contains(body, `href="https://x.org/&#34;onmouseover=&#34;alert(1)"`) {
		t.Errorf("the quoted URL is not one attribute:\n%s", body)
	}
	if n := strings.Count(body, "<a "); n != 3 { // Bacon's, the quoted one, the page's JSON
		t.Errorf("%d links, want 3", n)
	}
	_, js := get(t, f.base+"/status.json")
	if strings.ContainsAny(js, "<>") || strings.Contains(js, "javascript:") {
		t.Errorf("JSON carries raw markup or a script URL:\n%s", js)
	}
}

func TestMethodsAndPaths(t *testing.T) {
	f := start(t, nil)
	if resp, _ := get(t, f.base+"/"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/status" {
		t.Errorf("/: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, f.base+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("/metrics: %d", resp.StatusCode)
	}
	resp, err := http.Post(f.base+"/status", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", resp.StatusCode, resp.Header)
	}
}

// A request with a body, which no page takes, is answered 413 at once and
// its connection closed without reading the body: a client trickling a
// long body holds no place while it does.
func TestBodyRefusedUnread(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxConns = 1 })
	c, err := net.Dial("tcp", f.srv.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: 250000\r\n\r\nabc")
	b, err := io.ReadAll(c) // the server closes: no body byte more is read
	if err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 413 ") {
		t.Fatalf("answered %q, %v", b, err)
	}
	edgetest.Eventually(t, "the place released", func() bool { return f.srv.gate.Len() == 0 })
	if resp, _ := get(t, f.base+"/status"); resp.StatusCode != 200 {
		t.Errorf("the next client got %d", resp.StatusCode)
	}
	if n := f.srv.drops.Counter("request_body").Load(); n != 1 {
		t.Errorf("%d bodies counted", n)
	}
}

// A page is made again only when the room table or a description changes.
func TestPageCachedUntilChange(t *testing.T) {
	f := start(t, nil)
	host := netip.MustParseAddr("127.0.0.1")
	p1 := f.srv.page(htmlPage, host)
	if p2 := f.srv.page(htmlPage, host); &p2[0] != &p1[0] {
		t.Error("an unchanged page was made again")
	}
	f.d.gen.Add(1)
	p3 := f.srv.page(htmlPage, host)
	if &p3[0] == &p1[0] {
		t.Error("a new description was not shown")
	}
	f.rt.Register("a", room.Listing{Addr: netip.MustParseAddrPort("192.0.2.9:8190"), MaxPlayers: 8, Name: "Renamed"})
	if p4 := f.srv.page(htmlPage, host); &p4[0] == &p3[0] || !strings.Contains(string(p4), "Renamed") {
		t.Error("a table change was not shown")
	}
}

// One source holds at most MaxConnsPerIP connections; others are served.
func TestConnsPerSource(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxConnsPerIP = 1 })
	addr := f.srv.Addrs()[0].String()
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	edgetest.Eventually(t, "one connection", func() bool { return f.srv.gate.Len() == 1 })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "GET /status HTTP/1.0\r\n\r\n")
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a second connection from one source got %q", b)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	other, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_ = other.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(other, "GET /status HTTP/1.0\r\n\r\n")
	if b, _ := io.ReadAll(other); !strings.HasPrefix(string(b), "HTTP/1.0 200") {
		t.Errorf("another source got %.40q", b)
	}
}

func TestAppendText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		`<a href="x">'&`:    "&lt;a href=&#34;x&#34;&gt;&#39;&amp;",
		"tab\tnl\ncr\r":     "tab\tnl\ncr\r",
		"nul\x00esc\x1bdel": "nul\uFFFDesc\uFFFDdel",
		"del\x7f":           "del\uFFFD",
		"bad\xff\xfeutf8":   "bad\uFFFD\uFFFDutf8",
		"c1\u0085":          "c1\uFFFD",
		"é日本\u2028":         "é日本\u2028",
	} {
		if got := string(appendText(nil, in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestSafeURL(t *testing.T) {
	for u, want := range map[string]bool{
		"http://example.org/":                    true,
		"HTTPS://example.org/a?b=c&d":            true,
		"https://":                               false,
		"javascript:alert(1)":                    false,
		"data:text/html,x":                       false,
		"//example.org/":                         false,
		"https://x y":                            false,
		"https://x\x00":                          false,
		"https://\xff":                           false,
		"ftp://example.org/":                     false,
		"https://" + strings.Repeat("a", maxURL): false,
	} {
		if got := safeURL(u); got != want {
			t.Errorf("safeURL(%q) = %v", u, got)
		}
	}
}

// FuzzAppendText checks that escaped text carries no markup, no control
// characters and only valid UTF-8, and unescapes to the input with what
// cannot be shown replaced.
func FuzzAppendText(f *testing.F) {
	for _, s := range []string{"plain", `<script>alert("x")</script>`, "a\x00b\xffc", "é&#39;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := string(appendText(nil, s))
		if strings.ContainsAny(out, `<>"'`) || !utf8Valid(out) {
			t.Fatalf("%q escaped as %q", s, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r < 0xa0 {
				t.Fatalf("%q escaped as %q: control character %U", s, out, r)
			}
		}
		if back := html.UnescapeString(out); back != shown(s) {
			t.Fatalf("%q escaped as %q, which reads %q", s, out, back)
		}
	})
}

// shown is s as the page shows it: invalid UTF-8 and control characters
// (but tab, newline and carriage return) as U+FFFD.
func shown(s string) string {
	var b strings.Builder
	for _, r := range s { // each invalid byte reads as U+FFFD
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r < 0xa0 {
			r = '\uFFFD'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

// A page holds at most MaxPageBytes of rows: Foyer's own rooms first, then
// one server of each network before a second of any; the rest are
// counted on the page.
func TestPageCapped(t *testing.T) {
	f := start(t, func(c *Config) { c.MaxPageBytes = 6 << 10 })
	many := netip.MustParseAddr("203.0.113.1")
	for i := range 100 {
		port := uint16(9000 + i)
		f.d.details[port] = Details{Lobby: gg2.GG2LobbyUUID}
		f.rt.Register(fmt.Sprint("many", i), room.Listing{Addr: netip.AddrPortFrom(many, port), MaxPlayers: 8, Name: fmt.Sprint("flood ", i)})
	}
	f.d.details[7000] = Details{Lobby: gg2.GG2LobbyUUID}
	f.rt.Register("late", room.Listing{Addr: netip.MustParseAddrPort("198.51.100.7:7000"), MaxPlayers: 8, Name: "late but alone"})
	f.d.gen.Add(1)
	for _, path := range []string{"/status", "/status.json"} {
		_, body := get(t, f.base+path)
		if len(body) > 8<<10 {
			t.Errorf("%s: %d bytes", path, len(body))
		}
		for _, want := range []string{"Foyer room 1", "Bacon", "late but alone", "flood 0"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", path, want, body)
			}
		}
		if strings.Contains(body, "flood 99") {
			t.Errorf("%s shows every server", path)
		}
	}
	_, body := get(t, f.base+"/status")
	if !strings.Contains(body, "more servers are not shown.</p>") {
		t.Errorf("the page does not say servers were left out:\n%s", body)
	}
	var list jsonList
	_, js := get(t, f.base+"/status.json")
	if err := json.Unmarshal([]byte(js), &list); err != nil || list.NotShown == 0 {
		t.Errorf("JSON: %v, not_shown %d", err, list.NotShown)
	}
}

// The pages are the same whether their rows were encoded one by one (as
// the pages are made) or as one value: JSON as encoding/json writes
// jsonList, HTML one row a line.
func TestPagesEncodedWhole(t *testing.T) {
	f := start(t, nil)
	_, body := get(t, f.base+"/status.json")
	var list jsonList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	whole, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if string(whole)+"\n" != body {
		t.Errorf("JSON page\n%s\nwant\n%s", body, whole)
	}
	_, page := get(t, f.base+"/status")
	if n := strings.Count(page, "</td></tr>\n"); n != 3 {
		t.Errorf("%d rows ending a line, want 3:\n%s", n, page)
	}
}

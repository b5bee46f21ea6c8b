package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/internal/webtest"
	"github.com/foyerlobby/foyer/packet/gg2"
)

// httpGet fetches url, failing the test if it cannot, and returns the
// response (its body read) and the body.
func httpGet(t testing.TB, url string) (*http.Response, string) {
	t.Helper()
	return webtest.Fetch(t, nil, http.MethodGet, url)
}

// statusJSON is /status.json as a browser reads it.
type statusJSON struct {
	Lobbies []struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Servers []struct {
			Room        uint32 `json:"room"`
			Password    bool   `json:"password"`
			Name        string `json:"name"`
			Map         string `json:"map"`
			Players     int    `json:"players"`
			Bots        int    `json:"bots"`
			Slots       int    `json:"slots"`
			Game        string `json:"game"`
			GameVersion string `json:"game_version"`
			GameURL     string `json:"game_url"`
			Address     string `json:"address"`
		} `json:"servers"`
	} `json:"lobbies"`
}

// The public list shows registered servers (new-style, legacy, other
// lobbies) and Foyer's own rooms, grouped by lobby, as HTML and JSON; what
// registrants send is shown as text whatever it holds, and only http and
// https URLs are links.
func TestStatusPages(t *testing.T) {
	const title = `Ann's <b>GG2</b> & co Lobby`
	webPort := gg2FreePort(t)
	f, legacyAddr := legacyStart(t, fmt.Sprintf("udp_transport = true\n[web]\nlisten = \"127.0.0.1:%d\"\ntitle = %q", webPort, title))
	base := fmt.Sprintf("http://127.0.0.1:%d", webPort)
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	ownID, ownPort := c.request(compact, createRoom, seq.next(), nil).roomPort(t)

	// A hostile value in every field a registrant sends.
	const (
		xName = `<script>alert("name")</script>`
		xMap  = `<img src=x onerror=alert(1)>`
		xGame = `"><script>alert('game')</script>`
		xVer  = `</td><script>alert(4)</script>`
	)
	game := newGG2Game(t, f.gg2)
	hostile := gg2Registration(t, gg2.Counted, gg2.UDP, 27015, xName, 8, 2)
	hostile.Bots, hostile.Flags = 1, gg2.FlagPassword
	hostile.KeyValues = gg2.KeyValues{{Key: "name", Value: []byte(xName)}, {Key: "map", Value: []byte(xMap)},
		{Key: "game", Value: []byte(xGame)}, {Key: "game_ver", Value: []byte(xVer)}, {Key: "game_url", Value: []byte("javascript:alert(5)")}}
	game.register(hostile)
	quoted := gg2Registration(t, gg2.Counted, gg2.UDP, 27016, "quoted link", 8, 0)
	quoted.KeyValues = append(quoted.KeyValues, gg2.KeyValue{Key: "game_url", Value: []byte(`http://example.org/"><script>alert(6)</script>`)})
	game.register(quoted)
	vanguard := gg2Registration(t, gg2.Counted, gg2.UDP, 27017, "Vanguard server", 6, 1)
	vanguard.LobbyID = gg2.MustParseUUID("4fd0319b-5868-4f24-8b77-568cbb18fde9")
	vanguard.KeyValues = append(vanguard.KeyValues, gg2.KeyValue{Key: "game_url", Value: []byte("https://example.org/vanguard")})
	game.register(vanguard)
	accepts := make(chan uint16, 4)
	legacyPort := acceptingTCP(t, accepts)
	newGG2Game(t, legacyAddr).send(legacyDatagram([]byte{1}, legacyPort, "[<b>map</b>] <i>old</i> [1/2] - <script>mod</script>"))
	gg2Eventually(t, "every server listed", func() bool {
		return len(gg2List(t, f.gg2, gg2.GG2LobbyUUID).Servers) == 4 && len(gg2List(t, f.gg2, vanguard.LobbyID).Servers) == 1
	})

	resp, page := httpGet(t, base+"/status")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("/status: %d %v", resp.StatusCode, resp.Header)
	}
	// No markup from a registrant: every tag on the page is the page's own.
	for _, tag := range regexp.MustCompile(`<[^>]*>`).FindAllString(page, -1) {
		if !ownTag.MatchString(tag) {
			t.Errorf("a tag not of the page's own: %s", tag)
		}
	}
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace
	want := []string{
		// The page and Foyer's own lobby are named as [web] title says.
		"<title>" + esc(title) + "</title>",
		"<h1>" + esc(title) + "</h1>",
		"<h2>Active servers in the " + esc(title) + "</h2>",
		fmt.Sprintf("<tr><td></td><td>Foyer room %d</td><td>default</td>", ownID),
		fmt.Sprintf("<td>foyer</td><td>127.0.0.1:%d</td></tr>", ownPort),
		"<tr><td>X</td><td>" + esc(xName) + "</td><td>" + esc(xMap) + "</td><td>2+1/8</td><td>" + esc(xGame) + " " + esc(xVer) + "</td><td>127.0.0.1:27015</td></tr>",
		`<a rel="nofollow noopener noreferrer" href="` + esc(`http://example.org/"><script>alert(6)</script>`) + `">Gang Garrison 2</a>`,
		"<h2>Active servers in the Vanguard Lobby</h2>",
		`<a rel="nofollow noopener noreferrer" href="https://example.org/vanguard">Gang Garrison 2</a>`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(page[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order: %s\n%s", w, page)
		}
		at += i + len(w)
	}
	// The legacy server's place among the others depends on when its check
	// ended.
	legacyRow := "<td>" + esc("<i>old</i>") + "</td><td>" + esc("<b>map</b>") + "</td><td>1/2</td><td>" + esc("<script>mod</script>") + "</td>"
	if i := strings.Index(page, legacyRow); i < 0 || i > strings.Index(page, "Vanguard Lobby") {
		t.Errorf("the legacy server is not in the GG2 lobby's table:\n%s", page)
	}
	if strings.Contains(page, "javascript:") {
		t.Error("a javascript: URL is on the page")
	}

	resp, body := httpGet(t, base+"/status.json")
	var list statusJSON
	if err := json.Unmarshal([]byte(body), &list); resp.StatusCode != 200 || err != nil {
		t.Fatalf("/status.json: %d %v\n%s", resp.StatusCode, err, body)
	}
	if strings.ContainsAny(body, "<>") {
		t.Errorf("/status.json carries raw markup: %s", body)
	}
	if len(list.Lobbies) != 2 || list.Lobbies[0].Name != title || len(list.Lobbies[0].Servers) != 4 ||
		list.Lobbies[1].Name != "Vanguard Lobby" || len(list.Lobbies[1].Servers) != 1 {
		t.Fatalf("/status.json: %+v", list)
	}
	byAddr := map[string]int{}
	for i, s := range list.Lobbies[0].Servers {
		byAddr[s.Address] = i
	}
	servers := list.Lobbies[0].Servers
	h := servers[byAddr["127.0.0.1:27015"]]
	if h.Name != xName || h.Map != xMap || h.Game != xGame || h.GameVersion != xVer || h.GameURL != "" ||
		!h.Password || h.Players != 2 || h.Bots != 1 || h.Slots != 8 {
		t.Errorf("the hostile server in JSON: %+v", h)
	}
	if o := servers[byAddr[netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ownPort).String()]]; o.Room != ownID || o.Game != "foyer" {
		t.Errorf("the own room in JSON: %+v", o)
	}
	if l := servers[byAddr[fmt.Sprintf("127.0.0.1:%d", legacyPort)]]; l.Name != "<i>old</i>" || l.Game != "<script>mod</script>" {
		t.Errorf("the legacy server in JSON: %+v", l)
	}

	// Nothing of the admin listener, nothing but the two pages.
	for _, path := range []string{"/metrics", "/rooms", "/healthz", "/status/x"} {
		if resp, _ := httpGet(t, base+path); resp.StatusCode != 404 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

// ownTag matches the tags the page writes itself.
var ownTag = regexp.MustCompile(`^</?(html|head|body|meta|title|style|h1|h2|p|table|thead|tbody|tr|th|td|a)( [^<>]*)?>$|^<!doctype html>$`)

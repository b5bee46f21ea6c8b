package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/gg2"
)

// boardPatience bounds each wait for the board to show something: a
// guard against hangs, never a speed check.
const boardPatience = 30 * time.Second

// boardToken is the admin listener's token in the board's test.
const boardToken = "board-test-token-0123456789-0123456789"

// boardHostileName is a registered room's name that would run script if
// the board took it for markup, and turn the text around it right to left
// if it spilled.
const boardHostileName = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>` + "\u202e" + `"'&`

// The admin board in a real browser: Debian's chromium, headless, against
// the real binary with a token. The test logs in through the board's form,
// sees rooms made by `foyer create` and a registered one appear, plays a
// room to its end and sees its state change, and saves screenshots of the
// board as a TV and a phone show it.
func TestBoardInChromium(t *testing.T) {
	browserPath := requiretest.Command(t, "chromium")
	gg2Port := gg2FreePort(t)
	l := cliLobby(t, foyertest.Admin(netip.MustParseAddrPort("127.0.0.1:0")), foyertest.AdminToken(boardToken),
		foyertest.MaxPlayers(2), foyertest.Countdown(time.Second), foyertest.MatchDuration(3*time.Second),
		foyertest.Config(fmt.Sprintf("[gg2]\nenabled = true\nlisten = \"127.0.0.1:%d\"\nlegacy_listen = \"\"\nudp_transport = true", gg2Port)))
	addr := l.Addr().String()
	base := "http://" + l.AdminAddr().String()

	// The browser first: a room nobody comes to ends once its creator's
	// seat expires (seat_ttl, 10 s), which a browser slow to start on a
	// loaded machine may outlive.
	b := newBoardBrowser(t, browserPath)
	b.do(t, chromedp.Navigate(base+"/"))
	b.wait(t, "the login form", `document.querySelector('input[name=token]') !== null`)
	b.do(t, chromedp.SendKeys(chromedp.CSS(`input[name=token]`), boardToken), chromedp.Submit(chromedp.CSS(`input[name=token]`)))
	b.do(t, chromedp.WaitVisible(chromedp.ID("rooms")))

	var first, second cliSeatJSON
	cliDecode(t, cliOK(t, "create", "--json", addr), &first)
	cliDecode(t, cliOK(t, "create", "--json", addr), &second)
	game := newGG2Game(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), gg2Port))
	game.register(gg2Registration(t, gg2.Counted, gg2.UDP, 27015, boardHostileName, 8, 2))
	registered := boardRegistered(t, base)
	if !strings.Contains(registered.Name, "<script>") {
		t.Fatalf("the registered room's name %q lost its markup before the board: the test would prove nothing", registered.Name)
	}
	for _, id := range []uint32{first.Room, second.Room, registered.ID} {
		b.wait(t, fmt.Sprintf("room %d", id), boardCard(id, ""))
	}
	// The creator's seat counts until it expires: 1/2, or 0/2 after it.
	b.wait(t, "room "+fmt.Sprint(first.Room)+" as Foyer's, waiting with its places shown",
		fmt.Sprintf(`(c => c !== null && c.querySelector('.state').textContent === 'waiting' && /^[01]\/2$/.test(c.querySelector('.count').textContent) &&
			c.querySelector('.where').textContent.startsWith('port %d ·') && c.querySelector('.tags li').textContent === 'Foyer · instance')(%s)`,
			first.Port, boardCardExpr(first.Room)))
	// Where it runs in cgroups, its CPU time and memory are on its card.
	t.Run("usage", func(t *testing.T) {
		requiretest.Cgroups(t)
		b.wait(t, "room "+fmt.Sprint(first.Room)+"'s CPU time and memory",
			fmt.Sprintf(`(c => c !== null && (tags => tags.some(s => /^[0-9.]+s CPU$/.test(s)) && tags.some(s => /^[0-9.]+ MiB$/.test(s)))(
				[...c.querySelectorAll('.tags li')].map(li => li.textContent)))(%s)`, boardCardExpr(first.Room)))
	})
	name, _ := json.Marshal(registered.Name)
	b.wait(t, "the registered room's name as text, on a card marked registered",
		fmt.Sprintf(`(c => c !== null && c.querySelector('h2').textContent === %s && c.querySelector('.tags').textContent === 'registered · 127.0.0.1' &&
			c.querySelector('.count').textContent === '2/8')(%s)`, name, boardCardExpr(registered.ID)))
	if n, _ := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('#rooms img, #rooms script').length`)); n != 0 {
		t.Errorf("the registered room's name made %d elements", n)
	}
	if title, _ := chromedp.Run(b.ctx, chromedp.Title()); title != "Foyer rooms" {
		t.Errorf("page title %q: the registered room's name ran", title)
	}
	if cookies, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.cookie`)); cookies != "" {
		t.Errorf("the page's script reads the cookies %q: the board's cookie must be HttpOnly", cookies)
	}
	// The cookie opens the board only: /rooms still wants the token.
	if code := boardFetchStatus(t, b, base+"/rooms"); code != http.StatusUnauthorized {
		t.Errorf("/rooms with the board's cookie: %d, want 401", code)
	}

	// One room played to its end: its card goes from waiting through
	// playing to ended, and says why.
	alice := cliStartPlayer(t, "--ready", "--ping", "200ms", addr)
	m := alice.line(t, regexp.MustCompile(`^created room (\d+), port \d+`))
	var played uint32
	fmt.Sscan(m[1], &played)
	b.wait(t, "the played room waiting", boardCard(played, "waiting"))
	bob := cliStartPlayer(t, "--ready", "--ping", "200ms", addr, m[1])
	b.wait(t, "the played room playing with 2 of 2", fmt.Sprintf(`(c => c !== null && c.querySelector('.count').textContent === '2/2')(%s)`,
		boardCard(played, "playing")))
	b.wait(t, "the played room ended, finished", fmt.Sprintf(`(c => c !== null && c.querySelector('.state').textContent === 'ended · finished')(%s)`,
		boardCard(played, "ended")))
	for i, p := range []*cliPlayer{alice, bob} {
		if code, out := p.wait(t); code != 0 || !strings.Contains(out, "game over") {
			t.Errorf("player %d: exit %d\n%s", i+1, code, out)
		}
	}
	// Three rooms were spawned (the registered one runs elsewhere), and the
	// lobby answered requests in the last five minutes.
	b.wait(t, "three spawns on the latency plot", `document.getElementById('spawn-summary').textContent.endsWith(' 3 spawns')`)
	b.wait(t, "requests on the rate plot", `/^peak [1-9]/.test(document.getElementById('requests-peak').textContent)`)
	b.wait(t, "the stream live", `document.getElementById('status').dataset.live === 'yes'`)

	// A TV in the dark, a phone in the light: the page follows the
	// device's colour scheme.
	dir := t.TempDir()
	b.do(t, boardColorScheme("dark"))
	dark := b.background(t)
	b.screenshot(t, filepath.Join(dir, "board-tv-dark.png"))
	b.do(t, boardColorScheme("light"), chromedp.EmulateViewport(390, 844))
	if light := b.background(t); light == dark {
		t.Errorf("the page's background is %s in the dark and in the light", light)
	}
	b.wait(t, "the phone layout: one column, nothing wider than the screen",
		`document.documentElement.scrollWidth <= window.innerWidth && new Set([...document.querySelectorAll('#rooms article')].map(e => e.offsetLeft)).size === 1`)
	b.screenshot(t, filepath.Join(dir, "board-phone.png"))
	b.checkNoErrors(t)
}

// boardRoom is a room as /rooms shows it.
type boardRoom struct {
	ID     uint32 `json:"id"`
	Name   string `json:"name"`
	Source string `json:"source"`
}

// boardRegistered waits for the registered room in /rooms, asked with the
// bearer token, and returns it.
func boardRegistered(t *testing.T, base string) boardRoom {
	t.Helper()
	deadline := time.Now().Add(boardPatience)
	for time.Now().Before(deadline) {
		req, err := http.NewRequest("GET", base+"/rooms", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+boardToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var table struct{ Rooms []boardRoom }
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(body, &table) != nil {
			t.Fatalf("/rooms with the token: %d %v\n%s", resp.StatusCode, err, body)
		}
		for _, r := range table.Rooms {
			if r.Source == "gg2" {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the registered room never showed in /rooms")
	return boardRoom{}
}

// boardCardExpr is a JavaScript expression for room id's card, or null.
func boardCardExpr(id uint32) string {
	return fmt.Sprintf(`document.querySelector('article[data-room="%d"]')`, id)
}

// boardCard is a JavaScript expression for room id's card in state (any
// state if ""), or null.
func boardCard(id uint32, state string) string {
	if state == "" {
		return boardCardExpr(id)
	}
	return fmt.Sprintf(`document.querySelector('article[data-room="%d"][data-state="%s"]')`, id, state)
}

// boardFetchStatus fetches url from the page, with its cookies, and
// returns the status.
func boardFetchStatus(t *testing.T, b *boardBrowser, url string) int {
	t.Helper()
	u, _ := json.Marshal(url)
	code, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%s).then(r => r.status)`, u), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("fetch %s from the page: %v", url, err)
	}
	return code
}

// boardColorScheme has the page's media queries see scheme as the device's
// preferred colour scheme.
func boardColorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// boardBrowser is a headless chromium with one tab, and what it reported.
type boardBrowser struct {
	ctx    context.Context
	output *logBuffer // the browser's own output

	mu     sync.Mutex
	errors []string // exceptions thrown in the page
}

func newBoardBrowser(t *testing.T, path string) *boardBrowser {
	t.Helper()
	// The profile is a fresh directory, removed once the browser and its
	// children are gone (they may still write to it a moment after the
	// browser exits).
	profile, err := os.MkdirTemp("", "foyer-board-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	b := &boardBrowser{output: &logBuffer{}}
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		// Its singleton socket's directory goes in the profile too: a
		// browser ended by a kill leaves it behind.
		chromedp.Env("TMPDIR="+profile),
		chromedp.WindowSize(1920, 1080),
		chromedp.CombinedOutput(b.output),
	)
	ctx, stop := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		stop()
		stopAlloc()
		for range 100 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("chromium's profile %s could not be removed", profile)
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chromium's output:\n%s", b.output)
		}
	})
	b.ctx = ctx
	// The first Run starts the browser, with no deadline: one would end
	// the browser with it.
	err = chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*runtime.EventExceptionThrown); ok {
			b.mu.Lock()
			b.errors = append(b.errors, (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v\n%s", err, b.output)
	}
	return b
}

// do runs steps, bounded.
func (b *boardBrowser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, boardPatience)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b.page())
	}
}

// wait waits, bounded, until the JavaScript expression cond is true on
// the page.
func (b *boardBrowser) wait(t *testing.T, what, cond string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, boardPatience)
	defer cancel()
	poll := chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(boardPatience))
	if _, err := chromedp.Run(ctx, poll); err != nil {
		t.Fatalf("the board never showed %s (%v); it shows:\n%s", what, err, b.page())
	}
}

// page is the text of the page, for a failure's message.
func (b *boardBrowser) page() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return fmt.Sprintf("(no text: %v)", err)
	}
	return s
}

// background is the page's background colour.
func (b *boardBrowser) background(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, boardPatience)
	defer cancel()
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil {
		t.Fatalf("the page's background: %v", err)
	}
	return bg
}

// screenshot saves the whole page as a PNG at path and checks that it is
// one, of the page's size.
func (b *boardBrowser) screenshot(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, boardPatience)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || cfg.Width == 0 || cfg.Height == 0 {
		t.Fatalf("screenshot %s: not a PNG with pixels (%v, %dx%d)", path, err, cfg.Width, cfg.Height)
	}
	t.Logf("screenshot: %s (%dx%d)", path, cfg.Width, cfg.Height)
}

// checkNoErrors fails the test if the page threw.
func (b *boardBrowser) checkNoErrors(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("the page threw: %s", e)
	}
}

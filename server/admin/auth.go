package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// A browser cannot put a bearer token on the board's event stream
// (EventSource sends no headers of its own), and nobody types a token
// into a TV's address bar on every visit. So the board, and only the
// board, also accepts a cookie: the token, given once (in the login form
// the board shows instead of itself, or as /?token=... in a bookmark or a
// kiosk's start address), is exchanged for it. /metrics, /healthz and
// /rooms still want the bearer token itself.
//
// The cookie holds no token but an HMAC of a fixed text under the token:
// a stolen cookie opens the board (which /rooms already shows more of)
// and nothing else, a new token voids every cookie, and the server keeps
// no sessions. It is HttpOnly (no script reads it), SameSite=Lax (no other
// site's request carries it, except a plain link followed to the board)
// and lasts boardCookieAge.

const (
	boardCookie    = "foyer_board"
	boardCookieAge = 30 * 24 * time.Hour
	// maxLoginBytes bounds the login form's body.
	maxLoginBytes = 1 << 10
)

// boardCookieValue is the cookie a browser that gave token gets.
func boardCookieValue(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("foyer admin board cookie v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// hasBearer reports whether r carries want ("Bearer TOKEN") as its
// Authorization, compared in constant time.
func hasBearer(r *http.Request, want []byte) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
}

// boardGate lets through to next the requests with the bearer token or
// the board's cookie. It answers the login form's POST /login and a
// GET /?token=TOKEN by setting the cookie and sending the browser to /;
// other requests get 401, the board's address a login form.
type boardGate struct {
	token  string
	bearer []byte
	cookie []byte
	next   http.Handler
}

func newBoardGate(token string, next http.Handler) *boardGate {
	return &boardGate{token: token, bearer: []byte("Bearer " + token), cookie: []byte(boardCookieValue(token)), next: next}
}

func (g *boardGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/login":
		g.login(w, r)
	case hasBearer(r, g.bearer) || g.hasCookie(r):
		g.next.ServeHTTP(w, r)
	case r.URL.Path == "/" && r.URL.Query().Has("token"):
		g.exchange(w, r, r.URL.Query().Get("token"))
	case r.URL.Path == "/":
		loginPage(w, http.StatusUnauthorized, loginAsk)
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="foyer admin"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}
}

func (g *boardGate) hasCookie(r *http.Request) bool {
	c, err := r.Cookie(boardCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), g.cookie) == 1
}

// login takes the login form's token.
func (g *boardGate) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	g.exchange(w, r, r.PostForm.Get("token"))
}

// exchange sets the cookie and sends the browser to the board if token
// is the token, and shows the login form again if not. The redirection
// also takes a token out of the address bar.
func (g *boardGate) exchange(w http.ResponseWriter, r *http.Request, token string) {
	if subtle.ConstantTimeCompare([]byte(token), []byte(g.token)) != 1 {
		loginPage(w, http.StatusUnauthorized, loginWrong)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: boardCookie, Value: string(g.cookie), Path: "/",
		MaxAge: int(boardCookieAge.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// The login form, as it first asks and after a wrong token. It shows
// nothing of the request.
var (
	loginForm  = mustBoardFile("login.html", "text/html; charset=utf-8")
	loginAsk   = []byte(strings.Replace(string(loginForm.body), "<!--notice-->", "", 1))
	loginWrong = []byte(strings.Replace(string(loginForm.body), "<!--notice-->",
		`<p class="wrong">That is not the token of this listener.</p>`, 1))
)

// loginPolicy lets the login form have its inline style and send itself
// here; it runs no script.
const loginPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func loginPage(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", loginForm.contentType)
	h.Set("Content-Security-Policy", loginPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("WWW-Authenticate", `Bearer realm="foyer admin"`)
	w.WriteHeader(code)
	w.Write(body)
}

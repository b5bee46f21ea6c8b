package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
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
// The cookie holds no token but the time it expires and an HMAC of that
// time under the token: a stolen cookie opens the board (which /rooms
// already shows more of) and nothing else, until it expires; a new token
// voids every cookie, and the server keeps no sessions. It is HttpOnly
// (no script reads it), SameSite=Lax (no other site's request carries it,
// except a plain link followed to the board) and lasts [admin] session,
// which the server checks too: a browser that kept it longer is asked for
// the token again. Every credential checked here, and by bearer, is a
// guess of the token, within its source's allowance (throttle.go).

const (
	boardCookie = "foyer_board"
	// maxLoginBytes bounds the login form's body.
	maxLoginBytes = 1 << 10
)

// cookieMAC is the MAC of a board cookie that expires at expiry (Unix
// seconds, big-endian), under token.
func cookieMAC(token string, expiry []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("foyer admin board cookie v2\x00"))
	m.Write(expiry)
	return m.Sum(nil)
}

// boardCookieValue is the cookie a browser that gave token at now gets,
// for session.
func boardCookieValue(token string, expires time.Time) string {
	expiry := binary.BigEndian.AppendUint64(nil, uint64(expires.Unix()))
	return base64.RawURLEncoding.EncodeToString(append(expiry, cookieMAC(token, expiry)...))
}

// readCookie says whether value is a board cookie made with token
// (genuine), and whether it has expired at now.
func readCookie(token, value string, now time.Time) (genuine, expired bool) {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) != 8+sha256.Size {
		return false, false
	}
	if !hmac.Equal(b[8:], cookieMAC(token, b[:8])) {
		return false, false
	}
	return true, now.Unix() >= int64(binary.BigEndian.Uint64(b[:8]))
}

// hasBearer reports whether auth, an Authorization header, is want
// ("Bearer TOKEN"), compared in constant time.
func hasBearer(auth string, want []byte) bool {
	return subtle.ConstantTimeCompare([]byte(auth), want) == 1
}

// boardGate lets through to next the requests with the bearer token or
// the board's cookie. It answers the login form's POST /login and a
// GET /?token=TOKEN by setting the cookie and sending the browser to /;
// other requests get 401, the board's address a login form.
type boardGate struct {
	token   string
	bearer  []byte
	session time.Duration
	guesses *guesses
	next    http.Handler
}

func newBoardGate(token string, session time.Duration, g *guesses, next http.Handler) *boardGate {
	return &boardGate{token: token, bearer: []byte("Bearer " + token), session: session, guesses: g, next: next}
}

func (g *boardGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/login" {
		g.login(w, r)
		return
	}
	switch ok, answered := g.authorized(w, r); {
	case answered:
	case ok:
		g.next.ServeHTTP(w, r)
	case r.URL.Path == "/" && r.URL.Query().Has("token"):
		g.exchange(w, r, r.URL.Query().Get("token"))
	case r.URL.Path == "/":
		loginPage(w, http.StatusUnauthorized, loginAsk)
	default:
		unauthorized(w)
	}
}

// authorized checks r's bearer token or board cookie, if it has one,
// within its source's allowance: answered when it was refused unchecked
// (429). An expired cookie is no guess, but no credential either.
func (g *boardGate) authorized(w http.ResponseWriter, r *http.Request) (ok, answered bool) {
	auth := r.Header.Get("Authorization")
	c, err := r.Cookie(boardCookie)
	if auth == "" && err != nil {
		return false, false
	}
	expired := false
	genuine, checked := g.guesses.check(w, r, func() bool {
		if auth != "" && hasBearer(auth, g.bearer) {
			return true
		}
		var cookie bool
		if err == nil {
			cookie, expired = readCookie(g.token, c.Value, g.guesses.now())
		}
		return cookie
	})
	return genuine && !expired, !checked
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
	right, checked := g.guesses.check(w, r, func() bool { return subtle.ConstantTimeCompare([]byte(token), []byte(g.token)) == 1 })
	switch {
	case !checked:
		return
	case !right:
		loginPage(w, http.StatusUnauthorized, loginWrong)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: boardCookie, Value: boardCookieValue(g.token, g.guesses.now().Add(g.session)), Path: "/",
		MaxAge: int(g.session.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// unauthorized answers a request without the credential it needs.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="foyer admin"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
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

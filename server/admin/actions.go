package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// The actions change the host rather than show it, and are answered to
// POST only:
//
//	POST /rooms/{id}/stop   stop a room: its game is asked to stop, and
//	                        the room is killed whole after stop_grace
//	POST /drain             start no new room here; those that run play on
//	POST /resume            take rooms again
//
// With a token they want it as the bearer token (foyer stop, foyer drain,
// curl) or the board's cookie (the board's buttons). A browser is led
// into sending a request by any page it shows, with the cookie it holds
// for this listener, and on loopback without a token with no credential
// at all; so an action a browser sends must say it comes from the board's
// own page: Sec-Fetch-Site "same-origin", or, from a browser that does
// not send that header, an Origin that is this listener's. A request that
// says it comes from another site is refused (403), whatever it carries,
// and so is a cookie without either header. Programs that are no browser
// send neither header, and are let through on their bearer token (or on
// loopback without a token).

// maxLogLines bounds the lines /rooms/{id}/log returns.
const (
	defaultLogLines = 100
	maxLogLines     = 1000
)

// actionGate lets through to next the actions no other site made, with
// the credential they need.
type actionGate struct {
	token   string // "" without a token: loopback only
	bearer  []byte
	guesses *guesses
	next    http.Handler
}

func newActionGate(token string, g *guesses, next http.Handler) *actionGate {
	return &actionGate{token: token, bearer: []byte("Bearer " + token), guesses: g, next: next}
}

// origin says whether r was sent by a browser (it says where the request
// comes from), and whether it comes from this listener's own pages.
func origin(r *http.Request) (browser, same bool) {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return true, site == "same-origin"
	}
	if o := r.Header.Get("Origin"); o != "" {
		return true, o == "http://"+r.Host || o == "https://"+r.Host
	}
	return false, true
}

func (g *actionGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	browser, same := origin(r)
	if !same {
		http.Error(w, "refused: this request comes from another site's page", http.StatusForbidden)
		return
	}
	if g.token == "" {
		g.next.ServeHTTP(w, r)
		return
	}
	auth := r.Header.Get("Authorization")
	c, cookieErr := r.Cookie(boardCookie)
	switch {
	case auth == "" && cookieErr != nil:
		unauthorized(w)
		return
	case auth == "" && !browser:
		http.Error(w, "refused: the board's cookie is taken from the board's own page only; give the token", http.StatusForbidden)
		return
	}
	expired := false
	ok, checked := g.guesses.check(w, r, func() bool {
		if auth != "" {
			return hasBearer(auth, g.bearer)
		}
		var genuine bool
		genuine, expired = readCookie(g.token, c.Value, g.guesses.now())
		return genuine
	})
	switch {
	case !checked:
	case !ok || expired:
		unauthorized(w)
	default:
		g.next.ServeHTTP(w, r)
	}
}

// stopRoom stops the room of the path's id.
func (s *Server) stopRoom(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	if err != nil || id == 0 {
		http.Error(w, "not a room id", http.StatusNotFound)
		return
	}
	err = s.src.StopRoom(uint32(id))
	if errors.Is(err, room.ErrNoRoom) {
		http.Error(w, fmt.Sprintf("room %d has no process on this host "+
			"(in a cluster, stop it at the admin listener of the host /rooms names)", id), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.log.Info().Str("action", "stop").Uint64("room", id).Str("remote", r.RemoteAddr).Msg("admin action")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "stopping room %d\n", id)
}

// drain starts or ends the drain, as on says.
func (s *Server) drain(on bool) http.HandlerFunc {
	action := map[bool]string{true: "drain", false: "resume"}[on]
	return func(w http.ResponseWriter, r *http.Request) {
		s.src.Drain(on)
		s.log.Info().Str("action", action).Str("remote", r.RemoteAddr).Msg("admin action")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, s.drainState(s.src.Supervisor()))
	}
}

// roomLog answers the last lines of the room's log: ?lines=N, 100 by
// default, at most maxLogLines.
func (s *Server) roomLog(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	if err != nil || id == 0 {
		http.Error(w, "not a room id", http.StatusNotFound)
		return
	}
	lines := defaultLogLines
	if v := r.URL.Query().Get("lines"); v != "" {
		if lines, err = strconv.Atoi(v); err != nil || lines < 1 || lines > maxLogLines {
			http.Error(w, fmt.Sprintf("lines: want 1 to %d", maxLogLines), http.StatusBadRequest)
			return
		}
	}
	text, err := s.src.RoomLog(uint32(id), lines)
	if errors.Is(err, room.ErrNoRoom) {
		http.Error(w, fmt.Sprintf("no log of room %d on this host", id), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(text)
}

// drainState is how /healthz and the drain actions put the host's
// drain: "draining: 3 rooms play on", "drained: no room left", or
// "taking rooms".
func (s *Server) drainState(st supervisor.Stats) string {
	switch {
	case !st.Draining:
		return "taking rooms"
	case st.Live == 0:
		return "drained: no room left"
	case st.Live == 1:
		return "draining: 1 room plays on"
	}
	return fmt.Sprintf("draining: %d rooms play on", st.Live)
}

// drainPoll is how often foyer drain --wait may ask; /healthz says it in
// Retry-After while rooms are left.
const drainPoll = time.Second

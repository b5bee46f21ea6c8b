package admin

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// Guessing the token is slowed per source, as sshd's per-source penalties
// and Grafana's login limit do: each source (an IPv4 address, an IPv6
// /64) may fail guessBurst times at once, and once more per guessEvery
// after that; past it, every request of that source that carries a
// credential (a bearer token, the login form's or /?token='s token, a
// board cookie) is answered 429 without its credential being looked at,
// the right token included. So a source gets at most guessBurst guesses
// and then ten a minute, whatever it sends; a request without any
// credential is not a guess and costs nothing. Failures and refusals are
// counted (foyer_admin_auth_failures_total,
// foyer_admin_auth_throttled_total).
const (
	guessBurst = 5
	guessEvery = 6 * time.Second
	// maxGuessers bounds the sources remembered; when it is full, the
	// one that failed longest ago is forgotten.
	maxGuessers = 4096
)

// guesses is the per-source allowance of failed authentications.
type guesses struct {
	log zerolog.Logger
	// logs bounds the "source throttled" lines, whatever the number of
	// sources.
	logs *rate.Limiter

	mu      sync.Mutex
	sources map[netip.Prefix]*allowance
	now     func() time.Time // time.Now, but for the tests

	failures, throttled atomic.Uint64
}

// allowance is one source's: tokens left at at, refilled one per
// guessEvery up to guessBurst.
type allowance struct {
	tokens float64
	at     time.Time
	warned bool // its throttling was logged
}

func newGuesses(log zerolog.Logger) *guesses {
	return &guesses{log: log, logs: rate.NewLimiter(1, 5), sources: make(map[netip.Prefix]*allowance), now: time.Now}
}

// source is the key of r's sender: its address, or its /64 for IPv6.
func source(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// take draws the allowance for checking one credential of src: false,
// and how long until one is allowed, when src has none left.
func (g *guesses) take(src netip.Prefix) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	a := g.sources[src]
	if a == nil {
		if len(g.sources) >= maxGuessers {
			g.evict()
		}
		a = &allowance{tokens: guessBurst, at: now}
		g.sources[src] = a
	}
	a.tokens = min(guessBurst, a.tokens+now.Sub(a.at).Seconds()/guessEvery.Seconds())
	a.at = now
	if a.tokens < 1 {
		return false, time.Duration((1 - a.tokens) * float64(guessEvery))
	}
	a.tokens--
	return true, 0
}

// evict forgets the source with the fullest allowance. g.mu is held.
func (g *guesses) evict() {
	var oldest netip.Prefix
	var at time.Time
	for src, a := range g.sources {
		if at.IsZero() || a.at.Before(at) {
			oldest, at = src, a.at
		}
	}
	delete(g.sources, oldest)
}

// refund gives back what take drew for a credential that was right.
func (g *guesses) refund(src netip.Prefix) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.sources[src]; a != nil {
		a.tokens = min(guessBurst, a.tokens+1)
		if a.tokens >= guessBurst {
			delete(g.sources, src)
		}
	}
}

// failed counts a wrong credential of src.
func (g *guesses) failed(src netip.Prefix) { g.failures.Add(1) }

// refuse answers a request of src that is past its allowance: 429, with
// how long until its next guess.
func (g *guesses) refuse(w http.ResponseWriter, src netip.Prefix, wait time.Duration) {
	g.throttled.Add(1)
	g.mu.Lock()
	a := g.sources[src]
	first := a != nil && !a.warned
	if first {
		a.warned = true
	}
	g.mu.Unlock()
	if first && g.logs.Allow() {
		g.log.Warn().Stringer("source", src).Int("burst", guessBurst).Dur("then_one_per", guessEvery).
			Msg("admin: a source that failed to authenticate too often is throttled")
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	http.Error(w, "too many failed authentications from your address: try again later", http.StatusTooManyRequests)
}

// check runs one credential check of r with right, within the allowance
// of r's source. When the source is past it, check answers 429 without
// calling right, and reports checked false; otherwise it reports what
// right said, counting a wrong credential.
func (g *guesses) check(w http.ResponseWriter, r *http.Request, right func() bool) (ok, checked bool) {
	src := source(r)
	allowed, wait := g.take(src)
	if !allowed {
		g.refuse(w, src, wait)
		return false, false
	}
	if right() {
		g.refund(src)
		return true, true
	}
	g.failed(src)
	return false, true
}

var (
	authFailuresDesc  = desc("foyer_admin_auth_failures_total", "Requests to the admin listener with a wrong token or board cookie.", "")
	authThrottledDesc = desc("foyer_admin_auth_throttled_total", "Requests with a credential refused unchecked (429): their source failed too often.", "")
	wrongHostDesc     = desc("foyer_admin_wrong_host_total", "Requests to the admin listener naming a host it does not answer to (421).", "")
)

// authCollector shows the admin listener's own counters.
type authCollector struct {
	g         *guesses
	wrongHost *atomic.Uint64
}

func (c authCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- authFailuresDesc
	ch <- authThrottledDesc
	ch <- wrongHostDesc
}

func (c authCollector) Collect(ch chan<- prometheus.Metric) {
	counter(ch, authFailuresDesc, c.g.failures.Load())
	counter(ch, authThrottledDesc, c.g.throttled.Load())
	counter(ch, wrongHostDesc, c.wrongHost.Load())
}

// localAddr is the address r arrived on.
func localAddr(r *http.Request) netip.Addr {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr().Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}

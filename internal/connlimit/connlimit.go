// Package connlimit bounds the TCP connections a public listener serves at
// once: in total, per source and per network, so that one address or one
// network cannot take every place. When the listener is full, a newcomer
// takes the place of the connection that has waited longest without
// sending a request, so that idle connections from many addresses cannot
// hold the places either; a listener may also let it take the place of
// the connection busy longest (Config.CutBusyAfter), so that slow readers
// from many addresses cannot hold them. MinRate cuts a connection whose
// peer reads what it is sent slower than a minimum rate.
//
// A source is an IPv4 address, or an IPv6 /64: one host commonly has a
// whole /64 to pick addresses from. A network is what limit.PrefixOf
// says: an IPv4 /24, an IPv6 /56.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
)

// Config bounds the connections of one listener. Every count must be
// positive.
type Config struct {
	// Max is the connections served at once, PerSource those from one
	// source, PerNetwork those from one network.
	Max, PerSource, PerNetwork int
	// CutBusyAfter, when positive, lets a newcomer to a full listener
	// with no idle connection take the place of the connection that has
	// been busy longest, once that one has been busy this long: a reply
	// that takes longer than that is slow, and while the listener is full
	// it makes way. Zero keeps busy connections.
	CutBusyAfter time.Duration
}

// Limiter counts the connections of one listener. It is safe for
// concurrent use.
type Limiter struct {
	mu        sync.Mutex
	cfg       Config
	n         int
	bySource  map[source]int
	byNetwork map[netip.Prefix]int
	idle      list // waiting for a request, longest first
	busy      list // being answered, longest first
	now       func() time.Time
}

// list is a list of places, oldest first.
type list struct{ first, last *Conn }

// source is an IPv4 address (mapped) or an IPv6 /64, as 16 bytes.
type source [16]byte

func sourceOf(ip netip.Addr) source {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		ip = p.Addr()
	}
	return source(ip.As16())
}

// New returns a limiter of c.
func New(c Config) *Limiter {
	return &Limiter{cfg: c, bySource: make(map[source]int), byNetwork: make(map[netip.Prefix]int), now: time.Now}
}

// Verdict is what Admit decided.
type Verdict uint8

const (
	// Admitted: there was a free place.
	Admitted Verdict = iota
	// AdmittedCut: the listener was full; the connection idle longest was
	// cut to make room.
	AdmittedCut
	// AdmittedBusyCut: the listener was full with no idle connection; the
	// one busy longest, past Config.CutBusyAfter, was cut to make room.
	AdmittedBusyCut
	// SourceFull: the source holds its share already; close the newcomer.
	SourceFull
	// NetworkFull: the source's network holds its share already; close
	// the newcomer.
	NetworkFull
	// Full: every place is taken by a connection being served; close the
	// newcomer.
	Full
)

// Admitted reports whether the connection was admitted: its place must
// be released.
func (v Verdict) Admitted() bool { return v <= AdmittedBusyCut }

// Reason names v for drop counters: "idle_cut" and "busy_cut" for a
// connection cut to make room, "source_conn_limit", "network_conn_limit"
// and "conn_limit" for a newcomer refused; empty for Admitted.
func Reason(v Verdict) string {
	switch v {
	case AdmittedCut:
		return "idle_cut"
	case AdmittedBusyCut:
		return "busy_cut"
	case SourceFull:
		return "source_conn_limit"
	case NetworkFull:
		return "network_conn_limit"
	case Full:
		return "conn_limit"
	}
	return ""
}

// Conn is one admitted connection's place. It starts idle: a listener
// calls Busy once the request has arrived, Idle when the connection waits
// for another (HTTP keep-alive), and Release once it is closed.
type Conn struct {
	l          *Limiter
	c          net.Conn
	src        source
	net        netip.Prefix
	prev, next *Conn // in the idle or the busy list
	in         *list // the list it is in, nil once released or cut
	since      time.Time
	cut        bool // its place went to a newcomer
	released   bool
}

// Admit decides whether c, from src, is served. With Admitted,
// AdmittedCut or AdmittedBusyCut the returned place must be released;
// otherwise c is the caller's to close. A cut connection is closed under
// its server, whose reads or writes then fail, and which then releases its
// place.
func (l *Limiter) Admit(c net.Conn, src netip.Addr) (*Conn, Verdict) {
	k, network := sourceOf(src), limit.PrefixOf(src)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.bySource[k] >= l.cfg.PerSource:
		return nil, SourceFull
	case l.byNetwork[network] >= l.cfg.PerNetwork:
		return nil, NetworkFull
	}
	v := Admitted
	now := l.now()
	if l.n >= l.cfg.Max {
		victim := l.idle.first
		v = AdmittedCut
		if victim == nil {
			victim = l.busy.first
			if l.cfg.CutBusyAfter <= 0 || victim == nil || now.Sub(victim.since) < l.cfg.CutBusyAfter {
				return nil, Full
			}
			v = AdmittedBusyCut
		}
		victim.in.unlink(victim)
		victim.cut = true
		l.n--
		// Closed rather than given a past deadline, which the victim's
		// server may not have set its own over yet.
		_ = victim.c.Close()
	}
	l.n++
	l.bySource[k]++
	l.byNetwork[network]++
	p := &Conn{l: l, c: c, src: k, net: network}
	l.idle.link(p, now)
	return p, v
}

// Busy marks the request as arrived: the connection is no longer cut to
// make room while idle, only, where the listener allows it, once it has
// been busy for Config.CutBusyAfter.
func (p *Conn) Busy() {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.in == &p.l.idle {
		p.in.unlink(p)
		p.l.busy.link(p, p.l.now())
	}
}

// Idle marks the connection as waiting for a request again.
func (p *Conn) Idle() {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.in == &p.l.busy {
		p.in.unlink(p)
		p.l.idle.link(p, p.l.now())
	}
}

// Release gives the place back; calls after the first do nothing.
func (p *Conn) Release() {
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.released {
		return
	}
	p.released = true
	if p.in != nil {
		p.in.unlink(p)
	}
	if !p.cut {
		l.n--
	}
	if l.bySource[p.src]--; l.bySource[p.src] <= 0 {
		delete(l.bySource, p.src)
	}
	if l.byNetwork[p.net]--; l.byNetwork[p.net] <= 0 {
		delete(l.byNetwork, p.net)
	}
}

// Len is the number of places taken.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// link appends p to ls, since now; l.mu is held.
func (ls *list) link(p *Conn, now time.Time) {
	p.in, p.since, p.prev, p.next = ls, now, ls.last, nil
	if ls.last != nil {
		ls.last.next = p
	} else {
		ls.first = p
	}
	ls.last = p
}

// unlink removes p from ls; l.mu is held.
func (ls *list) unlink(p *Conn) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		ls.first = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		ls.last = p.prev
	}
	p.in, p.prev, p.next = nil, nil, nil
}

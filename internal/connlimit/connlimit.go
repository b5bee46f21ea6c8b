// Package connlimit bounds the TCP connections a public listener serves at
// once: in total, and per source, so that one address cannot take every
// place. When the listener is full, a newcomer takes the place of the
// connection that has waited longest without sending a request, so that
// idle connections from many addresses cannot hold the places either.
//
// A source is an IPv4 address, or an IPv6 /64: one host commonly has a
// whole /64 to pick addresses from.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
)

// Limiter counts the connections of one listener. It is safe for
// concurrent use.
type Limiter struct {
	mu        sync.Mutex
	max, per  int
	n         int
	bySource  map[source]int
	idleFirst *Conn // the connection idle longest
	idleLast  *Conn
}

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

// New allows max connections at once, at most perSource of them from one
// source; both must be positive.
func New(max, perSource int) *Limiter {
	return &Limiter{max: max, per: perSource, bySource: make(map[source]int)}
}

// Verdict is what Admit decided.
type Verdict uint8

const (
	// Admitted: there was a free place.
	Admitted Verdict = iota
	// AdmittedCut: the listener was full; the connection idle longest was
	// cut to make room.
	AdmittedCut
	// SourceFull: the source holds its share already; close the newcomer.
	SourceFull
	// Full: every place is taken by a connection being served; close the
	// newcomer.
	Full
)

// Conn is one admitted connection's place. It starts idle: a listener
// calls Busy once the request has arrived, Idle when the connection waits
// for another (HTTP keep-alive), and Release once it is closed.
type Conn struct {
	l          *Limiter
	c          net.Conn
	src        source
	prev, next *Conn // in the idle list, while idle
	idle       bool
	cut        bool // its place went to a newcomer
	released   bool
}

// Admit decides whether c, from src, is served. With Admitted or
// AdmittedCut the returned place must be released; otherwise c is the
// caller's to close. A cut connection is closed under its server, whose
// reads then fail, and which then releases its place.
func (l *Limiter) Admit(c net.Conn, src netip.Addr) (*Conn, Verdict) {
	k := sourceOf(src)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySource[k] >= l.per {
		return nil, SourceFull
	}
	v := Admitted
	if l.n >= l.max {
		victim := l.idleFirst
		if victim == nil {
			return nil, Full
		}
		l.unlinkIdle(victim)
		victim.cut = true
		l.n--
		// Closed rather than given a past deadline, which the victim's
		// server may not have set its own over yet.
		_ = victim.c.Close()
		v = AdmittedCut
	}
	l.n++
	l.bySource[k]++
	p := &Conn{l: l, c: c, src: k}
	l.linkIdle(p)
	return p, v
}

// Busy marks the request as arrived: the connection is no longer cut to
// make room.
func (p *Conn) Busy() {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.idle {
		p.l.unlinkIdle(p)
	}
}

// Idle marks the connection as waiting for a request again.
func (p *Conn) Idle() {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if !p.idle && !p.cut && !p.released {
		p.l.linkIdle(p)
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
	if p.idle {
		l.unlinkIdle(p)
	}
	if !p.cut {
		l.n--
	}
	if l.bySource[p.src]--; l.bySource[p.src] <= 0 {
		delete(l.bySource, p.src)
	}
}

// Len is the number of places taken.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// linkIdle appends p to the idle list; l.mu is held.
func (l *Limiter) linkIdle(p *Conn) {
	p.idle, p.prev, p.next = true, l.idleLast, nil
	if l.idleLast != nil {
		l.idleLast.next = p
	} else {
		l.idleFirst = p
	}
	l.idleLast = p
}

// unlinkIdle removes p from the idle list; l.mu is held.
func (l *Limiter) unlinkIdle(p *Conn) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		l.idleFirst = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		l.idleLast = p.prev
	}
	p.idle, p.prev, p.next = false, nil, nil
}

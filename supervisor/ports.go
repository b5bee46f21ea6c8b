package supervisor

import (
	"net"
	"net/netip"
	"time"
)

// portPool hands out the UDP ports of the configured range. A released port
// cools down before reuse, so a client still sending to a finished room does
// not land in the next one; a port an instance could not bind is
// quarantined much longer, since whoever holds it is likely to keep it.
//
// Both waits have a fixed length, so each queue is ordered by readiness and
// only its head needs looking at. The pool is not safe for concurrent use;
// the supervisor guards it with its mutex.
type portPool struct {
	cooldown, quarantine time.Duration
	cooling              []parkedPort // FIFO; never-used ports start here, ready at once
	quarantined          []parkedPort // FIFO
	inUse                int
}

type parkedPort struct {
	port    uint16
	readyAt time.Time
}

func newPortPool(first, last uint16, cooldown, quarantine time.Duration) *portPool {
	p := &portPool{cooldown: cooldown, quarantine: quarantine}
	p.cooling = make([]parkedPort, 0, int(last)-int(first)+1)
	for port := int(first); port <= int(last); port++ {
		p.cooling = append(p.cooling, parkedPort{port: uint16(port)})
	}
	return p
}

// acquire returns a ready port, preferring cooled ports over quarantined
// ones, or false when none is ready.
func (p *portPool) acquire(now time.Time) (uint16, bool) {
	for _, q := range []*[]parkedPort{&p.cooling, &p.quarantined} {
		if len(*q) > 0 && !(*q)[0].readyAt.After(now) {
			port := (*q)[0].port
			*q = (*q)[1:]
			p.inUse++
			return port, true
		}
	}
	return 0, false
}

// claim takes port out of the pool for an adopted room, as acquire would
// have, and reports whether it was in the pool (not already handed out
// nor outside the range).
func (p *portPool) claim(port uint16) bool {
	for _, q := range []*[]parkedPort{&p.cooling, &p.quarantined} {
		for i, pp := range *q {
			if pp.port == port {
				*q = append((*q)[:i], (*q)[i+1:]...)
				p.inUse++
				return true
			}
		}
	}
	return false
}

// release returns an acquired port; it is ready again after the cooldown.
func (p *portPool) release(port uint16, now time.Time) {
	p.inUse--
	p.cooling = append(p.cooling, parkedPort{port, now.Add(p.cooldown)})
}

// quarantineAcquired returns an acquired port that could not be bound; it
// is ready again after the quarantine.
func (p *portPool) quarantineAcquired(port uint16, now time.Time) {
	p.inUse--
	p.quarantined = append(p.quarantined, parkedPort{port, now.Add(p.quarantine)})
}

// counts reports how many ports are ready now, cooling down, quarantined
// and handed out.
func (p *portPool) counts(now time.Time) (ready, cooling, quarantined, inUse int) {
	for _, pp := range p.cooling {
		if pp.readyAt.After(now) {
			cooling++
		} else {
			ready++
		}
	}
	for _, pp := range p.quarantined {
		if pp.readyAt.After(now) {
			quarantined++
		} else {
			ready++
		}
	}
	return ready, cooling, quarantined, p.inUse
}

// portFree reports whether nothing holds the UDP port right now: no
// socket of the kernel's tables is bound to it, on any address (a room
// squatting ports of the pool binds them where it likes), and it can be
// bound on 127.0.0.1. It is a cheap first filter (a look costs
// microseconds, a spawn milliseconds); the instance's own bind stays the
// real test, for a port taken between this check and that bind.
func portFree(port uint16) bool {
	if udpBound(port) {
		return false
	}
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port)))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

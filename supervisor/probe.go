package supervisor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// probeInterval is how often every probed server is asked for its info.
const probeInterval = time.Second

// probeReadyPoll is how often a server still starting is asked, so a
// create does not wait a whole probeInterval for it.
const probeReadyPoll = 50 * time.Millisecond

// prober learns the status of foreign Teeworlds/DDNet servers by asking
// each for its extended info once per probeInterval. One socket per
// probed address serves every room (a room is told apart by its port,
// unique in the pool), and one goroutine sends for all of them, so 200
// idle rooms cost 200 small datagrams a second and no goroutine each.
//
// Each round asks with a fresh random token, and only replies carrying it
// count: a stale or forged datagram on loopback cannot make a dead server
// look alive.
type prober struct {
	addrs []netip.Addr // where servers are asked, in order of preference
	apply func(*probeTarget, teeinfo.Info)

	mu      sync.Mutex
	conns   map[netip.Addr]*net.UDPConn
	targets map[uint16]*probeTarget // by port
	buf     []byte                  // request scratch, guarded by mu
}

// probeTarget is one probed server. Its fields are guarded by prober.mu.
type probeTarget struct {
	port  uint16
	id    uint32 // the room's, to find it in the table
	room  *record
	token int        // the round's reply token; -1 once answered
	addr  netip.Addr // the address that answered, asked alone from then on
	asm   teeinfo.Assembler
	first teeinfo.Info  // the first complete reply
	ready chan struct{} // closed with the first complete reply
}

// probeAddrs lists the addresses servers are probed on, in order of
// preference. A command given the bind address ({bind}) binds exactly
// there; any other binds where its own arguments say, so both loopback
// addresses are tried too (a server may bind either family, whatever the
// supervisor's bind), after the bind address if there is one.
func probeAddrs(cfg Config) []netip.Addr {
	var addrs []netip.Addr
	if cfg.Bind.IsValid() && !cfg.Bind.IsUnspecified() {
		addrs = append(addrs, cfg.Bind.Unmap())
		if slices.ContainsFunc(cfg.Command, func(a string) bool { return strings.Contains(a, "{bind}") }) {
			return addrs
		}
	}
	for _, a := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// newProber opens a socket on each of addrs, where the servers are asked.
// An address that cannot be bound (IPv6 disabled) is skipped; none at all
// is an error.
func newProber(addrs []netip.Addr, log zerolog.Logger, apply func(*probeTarget, teeinfo.Info)) (*prober, error) {
	p := &prober{apply: apply, conns: make(map[netip.Addr]*net.UDPConn), targets: make(map[uint16]*probeTarget)}
	var errs []error
	for _, a := range addrs {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.addrs = append(p.addrs, a)
		p.conns[a] = c
	}
	if len(p.addrs) == 0 {
		return nil, fmt.Errorf("supervisor: probe sockets: %w", errors.Join(errs...))
	}
	if len(errs) > 0 {
		log.Warn().Err(errors.Join(errs...)).Msg("probing on fewer addresses")
	}
	return p, nil
}

// run polls every target each probeInterval and reads replies on every
// socket until done is closed; then the sockets are closed. wg counts the
// goroutines it starts.
func (p *prober) run(done <-chan struct{}, wg *sync.WaitGroup) {
	for a, c := range p.conns {
		wg.Go(func() { p.read(a, c) })
	}
	wg.Go(func() {
		t := time.NewTicker(probeInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				for _, c := range p.conns {
					c.Close()
				}
				return
			case <-t.C:
				p.round()
			}
		}
	})
}

// add starts probing the server of room r, id, on port.
func (p *prober) add(port uint16, id uint32, r *record) *probeTarget {
	t := &probeTarget{port: port, id: id, room: r, ready: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.token = rand.IntN(1 << 24)
	p.targets[port] = t
	return t
}

// remove stops probing t.
func (p *prober) remove(t *probeTarget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.targets[t.port] == t {
		delete(p.targets, t.port)
	}
}

// round starts a new round for every target.
func (p *prober) round() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.targets {
		t.token = rand.IntN(1 << 24)
		t.asm.Reset()
		p.ask(t)
	}
}

// poke asks t again within the current round, while it starts up.
func (p *prober) poke(t *probeTarget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.token >= 0 {
		p.ask(t)
	}
}

// ask sends t's extended info request, to the address that answered
// before or else to every probed address. p.mu is held.
func (p *prober) ask(t *probeTarget) {
	req := teeinfo.Request{Extended: true, ExtraToken: uint16(t.token >> 8), Token: uint8(t.token)}
	p.buf = req.Append(p.buf[:0])
	for _, a := range p.addrs {
		if t.addr.IsValid() && a != t.addr {
			continue
		}
		// A send error (nothing listening yet) shows as a missing reply.
		_, _ = p.conns[a].WriteToUDPAddrPort(p.buf, netip.AddrPortFrom(a, t.port))
	}
}

// read takes the replies arriving on the socket of address a.
func (p *prober) read(a netip.Addr, c *net.UDPConn) {
	buf := make([]byte, 2048)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil || from.Addr().Unmap() != a {
			continue
		}
		rep, err := teeinfo.ParseReply(buf[:n])
		if err != nil {
			continue
		}
		if t, in, ok := p.take(a, from.Port(), &rep); ok {
			p.apply(t, in)
		}
	}
}

// take adds one reply datagram from a:port to its target's round and
// returns the info once the reply is complete.
func (p *prober) take(a netip.Addr, port uint16, rep *teeinfo.Reply) (*probeTarget, teeinfo.Info, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.targets[port]
	if t == nil || t.token < 0 || rep.Info.Token != t.token {
		return nil, teeinfo.Info{}, false
	}
	if done, err := t.asm.Add(rep); err != nil || !done {
		return nil, teeinfo.Info{}, false
	}
	in := t.asm.Info()
	t.asm.Reset()
	t.token = -1 // answered; the next round asks again
	t.addr = a
	select {
	case <-t.ready:
	default:
		t.first = in
		close(t.ready)
	}
	return t, in, true
}

// firstInfo is t's first complete reply; valid once t.ready is closed.
func (p *prober) firstInfo(t *probeTarget) teeinfo.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return t.first
}

package keeper

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// prober asks one Teeworlds/DDNet server for its extended info, from one
// socket per address the server may listen on, and assembles the replies.
// Each round asks with a fresh random token and only replies carrying it
// count: a stale or forged datagram on loopback cannot make a dead server
// look alive.
type prober struct {
	port  uint16
	addrs []netip.Addr // where the server is asked, in order of preference
	conns []*net.UDPConn

	mu    sync.Mutex
	token int        // the round's reply token; -1 once answered
	addr  netip.Addr // the address that answered, asked alone from then on
	asm   teeinfo.Assembler
	buf   []byte
	info  chan teeinfo.Info // each complete reply, the newest kept
}

// probeAddrs lists the addresses a server is probed on, in order of
// preference. A command given the bind address ({bind}) binds exactly
// there; any other binds where its own arguments say, so both loopback
// addresses are tried too (a server may bind either family, whatever the
// room's bind), after the bind address if there is one.
func probeAddrs(bind netip.Addr, command []string) []netip.Addr {
	var addrs []netip.Addr
	if bind.IsValid() && !bind.IsUnspecified() {
		addrs = append(addrs, bind.Unmap())
		if slices.ContainsFunc(command, func(a string) bool { return strings.Contains(a, "{bind}") }) {
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

// newProber opens a socket on each of addrs to ask the server on port. An
// address that cannot be bound (IPv6 disabled) is skipped; none at all is
// an error.
func newProber(port uint16, addrs []netip.Addr) (*prober, error) {
	p := &prober{port: port, token: -1, info: make(chan teeinfo.Info, 1)}
	var errs []error
	for _, a := range addrs {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.addrs = append(p.addrs, a)
		p.conns = append(p.conns, c)
	}
	if len(p.conns) == 0 {
		return nil, fmt.Errorf("keeper: probe sockets: %w", errors.Join(errs...))
	}
	for i, c := range p.conns {
		go p.read(p.addrs[i], c)
	}
	return p, nil
}

// close ends the prober's reads.
func (p *prober) close() {
	for _, c := range p.conns {
		c.Close()
	}
}

// round starts a new round: a fresh token, asked again.
func (p *prober) round() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token = rand.IntN(1 << 24)
	p.asm.Reset()
	p.ask()
}

// poke asks again within the current round, if it is unanswered, while
// the server starts up.
func (p *prober) poke() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token >= 0 {
		p.ask()
	}
}

// ask sends the round's request, to the address that answered before or
// else to every probed address. p.mu is held.
func (p *prober) ask() {
	req := teeinfo.Request{Extended: true, ExtraToken: uint16(p.token >> 8), Token: uint8(p.token)}
	p.buf = req.Append(p.buf[:0])
	for i, a := range p.addrs {
		if p.addr.IsValid() && a != p.addr {
			continue
		}
		// A send error (nothing listening yet) shows as a missing reply.
		_, _ = p.conns[i].WriteToUDPAddrPort(p.buf, netip.AddrPortFrom(a, p.port))
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
		if err != nil || from.Addr().Unmap() != a || from.Port() != p.port {
			continue
		}
		rep, err := teeinfo.ParseReply(buf[:n])
		if err != nil {
			continue
		}
		if in, ok := p.take(a, &rep); ok {
			p.offer(in)
		}
	}
}

// take adds one reply datagram from a to the round and returns the info
// once the reply is complete.
func (p *prober) take(a netip.Addr, rep *teeinfo.Reply) (teeinfo.Info, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token < 0 || rep.Info.Token != p.token {
		return teeinfo.Info{}, false
	}
	if done, err := p.asm.Add(rep); err != nil || !done {
		return teeinfo.Info{}, false
	}
	in := p.asm.Info()
	p.asm.Reset()
	p.token = -1 // answered; the next round asks again
	p.addr = a
	return in, true
}

// offer hands in to the reader of info; the newest reply replaces one not
// yet taken.
func (p *prober) offer(in teeinfo.Info) {
	for {
		select {
		case p.info <- in:
			return
		default:
		}
		select {
		case <-p.info:
		default:
		}
	}
}

package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/foyerlobby/foyer/packet"
)

// Lobby is one lobby that answered Discover.
type Lobby struct {
	// Addr is where the answer came from: the lobby's address on the
	// network the query went out on.
	Addr  netip.AddrPort
	Rooms []packet.Room
}

// ErrNoRoute means that Discover's query went out nowhere: this host has
// no route to the addresses it broadcasts to (it is on no network but
// loopback, say). Naming a network's broadcast address, or a lobby's, with
// WithBroadcast is the way to ask elsewhere.
var ErrNoRoute = errors.New("no network to broadcast on")

// maxLobbies bounds what one Discover remembers: anyone on the network may
// answer, and answers cost memory.
const maxLobbies = 1024

// discoverResend is the gap between repeated queries; broadcasts are not
// retried by anyone else, so Discover repeats itself (up to the attempts
// option) while it listens.
const discoverResend = time.Second

// Discover broadcasts a LIST to port and collects the lobbies that answer,
// until ctx ends; the end of ctx is the normal way for it to finish, so it
// then returns what it found and a nil error. Lobbies are ordered by
// address; each is listed once, with its latest answer.
//
// By default the query goes to 255.255.255.255 and to the broadcast address
// of every IPv4 interface that is up; WithBroadcast replaces that list.
// WithAttempts sets how many times the query is sent (a second apart),
// WithFraming its header.
func Discover(ctx context.Context, port uint16, opts ...Option) ([]Lobby, error) {
	cfg := newConfig(opts)
	targets := cfg.broadcast
	if len(targets) == 0 {
		targets = broadcastAddrs()
	}
	local := netip.IPv4Unspecified()
	if allLoopback(targets) {
		// A query that stays on this host needs no socket on the network.
		local = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		return nil, fmt.Errorf("discover port %d: %w", port, err)
	}
	defer conn.Close()

	seq := uint16(rand.Uint32())
	req := packet.Message{Header: packet.Header{Framing: cfg.framing, Type: packet.ListRooms, Seq: seq}}
	pkt, err := req.Append(nil)
	if err != nil {
		return nil, fmt.Errorf("discover port %d: encode: %w", port, err)
	}

	// Wake the read below when ctx ends; a past deadline is the one way to
	// interrupt a blocked read without closing the socket under it.
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	sendErr := make(chan error, 1)
	go func() { sendErr <- query(ctx, conn, pkt, targets, port, cfg.attempts) }()

	found := make(map[netip.AddrPort][]packet.Room)
	buf := make([]byte, 64<<10)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				continue // one silent target ends nothing
			}
			return nil, fmt.Errorf("discover port %d: %w", port, err)
		}
		m, err := packet.Parse(buf[:n])
		if err != nil || m.Type != packet.RoomList || m.Seq != seq {
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if _, seen := found[from]; seen || len(found) < maxLobbies {
			found[from] = m.Rooms
		}
	}
	if err := <-sendErr; err != nil && len(found) == 0 {
		if errors.Is(err, syscall.ENETUNREACH) {
			err = fmt.Errorf("%w (%v)", ErrNoRoute, err)
		}
		return nil, fmt.Errorf("discover port %d: %w", port, err)
	}

	lobbies := make([]Lobby, 0, len(found))
	for addr, rooms := range found {
		lobbies = append(lobbies, Lobby{Addr: addr, Rooms: rooms})
	}
	slices.SortFunc(lobbies, func(a, b Lobby) int { return cmp.Compare(a.Addr.String(), b.Addr.String()) })
	return lobbies, nil
}

// query sends pkt to every target, attempts times, a second apart, until
// ctx ends. It fails, with the last send's error, only if no send at all
// went out.
func query(ctx context.Context, conn *net.UDPConn, pkt []byte, targets []netip.Addr, port uint16, attempts int) error {
	var lastErr error
	sent := false
	tick := time.NewTicker(discoverResend)
	defer tick.Stop()
rounds:
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				break rounds
			}
		}
		for _, t := range targets {
			if _, err := conn.WriteToUDPAddrPort(pkt, netip.AddrPortFrom(t, port)); err != nil {
				lastErr = err
				continue
			}
			sent = true
		}
	}
	if !sent {
		return lastErr
	}
	return nil
}

func allLoopback(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return false
		}
	}
	return len(addrs) > 0
}

// broadcastAddrs is the limited broadcast address, which Linux sends out of
// one interface only, and the directed broadcast address of every IPv4
// network this host is on, which reaches the others.
func broadcastAddrs() []netip.Addr {
	out := []netip.Addr{netip.AddrFrom4([4]byte{255, 255, 255, 255})}
	ifs, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagBroadcast == 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, bits := ipn.Mask.Size()
			if b, ok := directedBroadcast(netip.PrefixFrom(ip.Unmap(), ones), bits); ok && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// directedBroadcast returns the all-ones host address of an IPv4 prefix
// whose mask had maskBits bits. Prefixes too narrow to have a broadcast
// address (/31, /32) and non-IPv4 ones have none.
func directedBroadcast(p netip.Prefix, maskBits int) (netip.Addr, bool) {
	if !p.Addr().Is4() || maskBits != 32 || p.Bits() < 0 || p.Bits() > 30 {
		return netip.Addr{}, false
	}
	a := p.Addr().As4()
	host := ^uint32(0) >> p.Bits()
	v := (uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

//go:build linux

// Package floodtest sends UDP datagrams with forged IPv4 source addresses
// through a raw socket, as an attacker does, so that tests and benchmarks
// can show what a server does under a spoofed flood. It needs root (or
// CAP_NET_RAW). It batches with sendmmsg, so one core sends hundreds of
// thousands of datagrams a second.
package floodtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/mmsg"
)

// Config says what to send.
type Config struct {
	// To is where the datagrams go; it must be IPv4.
	To netip.AddrPort
	// Payload is every datagram's UDP payload.
	Payload []byte
	// Sources is how many forged sources are cycled through, each an
	// address in 127.0.0.0/8 other than 127.0.0.1 with its own port, so
	// replies stay on the machine.
	Sources int
	// Networks, when positive (at most MaxNetworks), spreads the sources
	// over that many /24s of 127.16.0.0/12, taken in turn: source i is in
	// network i mod Networks, so that a flood comes from many networks at
	// once (see SpreadSource). Zero numbers the sources from 127.0.0.2 on,
	// filling one /24 after another (see Source).
	Networks int
	// Rate is datagrams per second; 0 sends as fast as one core can.
	Rate int
	// Once ends the flood when each source has sent one datagram, rather
	// than cycling through the sources until ctx is done.
	Once bool
}

// batch is how many datagrams one sendmmsg call carries.
const batch = 64

// headers is the IPv4 and UDP headers' length.
const headers = 20 + 8

// Run sends until ctx is done (or, with Once, until every source has
// sent) and returns how many datagrams went out.
func Run(ctx context.Context, c Config) (uint64, error) {
	if !c.To.Addr().Is4() || c.Sources < 1 || len(c.Payload) > 1400 || c.Networks < 0 || c.Networks > MaxNetworks {
		return 0, errors.New("flood: want an IPv4 target, at least one source, at most MaxNetworks networks and a payload of at most 1400 bytes")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return 0, fmt.Errorf("flood: raw socket (needs root): %w", err)
	}
	defer unix.Close(fd)
	dst := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: c.To.Addr().As4()}
	bufs := make([][]byte, batch)
	iovs := make([]unix.Iovec, batch)
	msgs := make([]mmsg.Header, batch)
	for i := range bufs {
		bufs[i] = make([]byte, headers+len(c.Payload))
		fill(bufs[i], c.To, c.Payload)
		iovs[i].Base = &bufs[i][0]
		iovs[i].SetLen(len(bufs[i]))
		msgs[i].Hdr.Name = (*byte)(unsafe.Pointer(&dst))
		msgs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	// A paced flood sends small batches, about a hundred a second, so that
	// a slow one is spread out rather than bursty.
	per := batch
	if c.Rate > 0 {
		per = min(max(c.Rate/100, 1), batch)
	}
	var sent uint64
	next := 0
	start := time.Now()
	for ctx.Err() == nil && (!c.Once || sent < uint64(c.Sources)) {
		if c.Rate > 0 {
			due := start.Add(time.Duration(sent) * time.Second / time.Duration(c.Rate))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return sent, nil
				case <-time.After(d):
				}
			}
		}
		k := per
		if c.Once {
			k = min(k, c.Sources-int(sent))
		}
		for i := range bufs[:k] {
			setSource(bufs[i], (next+i)%c.Sources, c.Networks)
		}
		// What the kernel did not take is sent again, from the same
		// sources, so that they go out in turn.
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(k), 0, 0, 0)
		switch errno {
		case 0:
			sent += uint64(n)
			next = (next + int(n)) % c.Sources
		case unix.ENOBUFS, unix.EAGAIN, unix.EINTR:
		default:
			return sent, fmt.Errorf("flood: sendmmsg: %w", errno)
		}
	}
	return sent, nil
}

// fill writes the headers of a datagram to to around payload; the source
// is set per send (setSource). The kernel fills in the IP checksum; a UDP
// checksum of 0 means none, as IPv4 allows.
func fill(b []byte, to netip.AddrPort, payload []byte) {
	b[0] = 0x45 // IPv4, 5 words of header
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8] = 64 // TTL
	b[9] = unix.IPPROTO_UDP
	dst := to.Addr().As4()
	copy(b[16:20], dst[:])
	binary.BigEndian.PutUint16(b[22:], to.Port())
	binary.BigEndian.PutUint16(b[24:], uint16(8+len(payload)))
	copy(b[headers:], payload)
}

// MaxNetworks is the most networks Config.Networks spreads a flood over:
// the /24s of 127.16.0.0/12.
const MaxNetworks = 1 << 12

// setSource makes b come from forged source i, of networks networks (0:
// numbered in order): an address of 127.0.0.0/8 other than 127.0.0.1,
// with a port of its own.
func setSource(b []byte, i, networks int) {
	if networks > 0 {
		n, host := i%networks, i/networks
		b[12], b[13], b[14], b[15] = 127, byte(16+n>>8), byte(n), byte(2+host%250)
	} else {
		n := uint32(i) + 2 // skips 127.0.0.0 and 127.0.0.1
		b[12], b[13], b[14], b[15] = 127, byte(n>>16), byte(n>>8), byte(n)
	}
	binary.BigEndian.PutUint16(b[20:], uint16(1024+i%60000))
}

// Source returns the address forged source i sends from, the sources
// numbered in order, for tests that look for it.
func Source(i int) netip.AddrPort { return SpreadSource(i, 0) }

// SpreadSource returns the address forged source i sends from when the
// sources are spread over networks networks.
func SpreadSource(i, networks int) netip.AddrPort {
	b := make([]byte, headers)
	setSource(b, i, networks)
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), binary.BigEndian.Uint16(b[20:]))
}

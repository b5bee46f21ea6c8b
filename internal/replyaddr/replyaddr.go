//go:build linux

// Package replyaddr has a UDP socket bound to every address (0.0.0.0, ::)
// answer each datagram from the address it was sent to. Left to itself,
// the kernel picks a reply's source by its routes, the interface's primary
// address, so that on a host with several addresses (a secondary address,
// a floating IP) a client that asked one gets its answer from another, and
// a client whose socket is connected, as most are, never sees it. Asked to
// (Enable), the kernel tells each datagram's destination in a control
// message (IP_PKTINFO, IPV6_PKTINFO); a reply that carries it back (Append)
// leaves from there.
//
// Everything here is allocation-free, for read loops that handle every
// datagram of a flood.
package replyaddr

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Space is the room one datagram's destination takes among its control
// messages, received or sent: an IPv4 datagram read from a dual-stack
// socket comes with both families' messages.
var Space = unix.CmsgSpace(unix.SizeofInet6Pktinfo) + unix.CmsgSpace(unix.SizeofInet4Pktinfo)

// Enable asks the kernel to tell the destination of every datagram read
// from c, a socket of IPv4 (v6 false) or IPv6 (v6 true). An IPv6 socket
// that also takes IPv4 (dual-stack) is told both families'.
func Enable(c syscall.Conn, v6 bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if v6 {
			if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); serr != nil {
				return
			}
			only, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
			if err != nil || only == 1 {
				return
			}
		}
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// Walk calls f with the level, type and data of each control message in
// oob, as recvmsg filled it.
func Walk(oob []byte, f func(level, typ int32, data []byte)) {
	hdr := unix.CmsgLen(0)
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < hdr || n > len(oob) {
			return
		}
		f(h.Level, h.Type, oob[hdr:n])
		step := unix.CmsgSpace(n - hdr)
		if step > len(oob) {
			return
		}
		oob = oob[step:]
	}
}

// Read reads one control message: if it tells a datagram's destination
// (ok), dst is the address in the datagram's header, and src the address a
// reply leaves from: the same, but for a datagram sent to an IPv4
// broadcast address the address of the interface it came in on, and none
// (invalid) for one sent to an IPv6 multicast address, whose reply the
// routes are left to place.
func Read(level, typ int32, data []byte) (dst, src netip.Addr, ok bool) {
	switch {
	case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
		// struct in_pktinfo: ifindex, the local address replies go out
		// from, then the header's destination address.
		return netip.AddrFrom4([4]byte(data[8:12])), netip.AddrFrom4([4]byte(data[4:8])), true
	case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
		// An IPv4 datagram on a dual-stack socket has its address mapped.
		dst = netip.AddrFrom16([16]byte(data[:16])).Unmap()
		if !dst.IsMulticast() {
			src = dst
		}
		return dst, src, true
	}
	return netip.Addr{}, netip.Addr{}, false
}

// Find returns what Read says of the destination message in oob, if
// there is one (of two, the last: an IPv4 datagram's own, on a dual-stack
// socket, comes after its mapped IPv6 one).
func Find(oob []byte) (dst, src netip.Addr) {
	Walk(oob, func(level, typ int32, data []byte) {
		if d, s, ok := Read(level, typ, data); ok {
			dst, src = d, s
		}
	})
	return dst, src
}

// Append appends to b the control message that sends a datagram from src,
// as Read gave it: IP_PKTINFO for an IPv4 address (which an IPv6 socket
// takes too, for its IPv4 peers), IPV6_PKTINFO for an IPv6 one; nothing
// for an invalid src or an unspecified one. The interface is left to the
// routes.
func Append(b []byte, src netip.Addr) []byte {
	if !src.IsValid() || src.IsUnspecified() {
		return b
	}
	level, typ, size := int32(unix.IPPROTO_IPV6), int32(unix.IPV6_PKTINFO), unix.SizeofInet6Pktinfo
	if src.Is4() {
		level, typ, size = unix.IPPROTO_IP, unix.IP_PKTINFO, unix.SizeofInet4Pktinfo
	}
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(size))...)
	m := b[start:]
	h := (*unix.Cmsghdr)(unsafe.Pointer(&m[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(size))
	data := m[unix.CmsgLen(0):]
	if src.Is4() {
		a := src.As4()
		copy(data[4:8], a[:]) // ipi_spec_dst; ifindex and ipi_addr 0
	} else {
		a := src.As16()
		copy(data[:16], a[:])
		binary.NativeEndian.PutUint32(data[16:], 0) // ipi6_ifindex
	}
	return b
}

package lobby

import (
	"encoding/binary"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// controlSpace is the room a datagram's control messages need: the socket's
// drop counter and, on a wildcard socket, the address it arrived on.
var controlSpace = unix.CmsgSpace(4) + unix.CmsgSpace(unix.SizeofInet6Pktinfo)

// enableControl asks the kernel to attach to every datagram read from c
// the socket's count of datagrams dropped for want of buffer space
// (SO_RXQ_OVFL), the lobby's sign of a flood, and, when c listens on every
// address, the address the datagram was sent to (IP_PKTINFO or
// IPV6_RECVPKTINFO), which decides what the lobby may offer its sender.
func enableControl(c *net.UDPConn, wildcard, v6 bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
		switch {
		case serr != nil || !wildcard:
		case v6:
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
		default:
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// parseControl reads the control messages of one datagram: the address it
// was sent to (invalid if not attached) and the socket's drop counter (ok
// false if not attached). It allocates nothing.
func parseControl(oob []byte) (dst netip.Addr, drops uint32, ok bool) {
	hdr := unix.CmsgLen(0)
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < hdr || n > len(oob) {
			break
		}
		data := oob[hdr:n]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			drops, ok = binary.NativeEndian.Uint32(data), true
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			// struct in_pktinfo: ifindex, the local address replies go
			// out from, then the header's destination address.
			dst = netip.AddrFrom4([4]byte(data[8:12]))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			dst = netip.AddrFrom16([16]byte(data[:16])).Unmap()
		}
		step := unix.CmsgSpace(n - hdr)
		if step > len(oob) {
			break
		}
		oob = oob[step:]
	}
	return dst, drops, ok
}

package lobby

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr, which golang.org/x/sys/unix does not define.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// mmsgIO is recvmmsg and sendmmsg on a socket, through headers, vectors
// and addresses set up once for a batch's slots, so that a call neither
// allocates nor converts addresses through the net package (as
// golang.org/x/net's batches do, a net.UDPAddr per datagram).
type mmsgIO struct {
	rc syscall.RawConn
	v6 bool // an AF_INET6 socket

	rh    []mmsghdr
	rname []unix.RawSockaddrInet6
	riov  []unix.Iovec
	wh    []mmsghdr
	wname []unix.RawSockaddrInet6
	wiov  []unix.Iovec
}

func newMmsgIO(c *net.UDPConn, in []slot, out int) socketIO {
	rc, err := c.SyscallConn()
	if err != nil {
		return stdIO{c}
	}
	m := &mmsgIO{rc: rc,
		rh: make([]mmsghdr, len(in)), rname: make([]unix.RawSockaddrInet6, len(in)), riov: make([]unix.Iovec, len(in)),
		wh: make([]mmsghdr, out), wname: make([]unix.RawSockaddrInet6, out), wiov: make([]unix.Iovec, out)}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		m.v6 = true
	}
	for i := range in {
		m.riov[i].Base = &in[i].buf[0]
		m.riov[i].SetLen(len(in[i].buf))
		h := &m.rh[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&m.rname[i]))
		h.Iov = &m.riov[i]
		h.SetIovlen(1)
		if len(in[i].oob) > 0 {
			h.Control = &in[i].oob[0]
		}
	}
	for i := range m.wh {
		h := &m.wh[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&m.wname[i]))
		h.Iov = &m.wiov[i]
		h.SetIovlen(1)
	}
	return m
}

func (m *mmsgIO) read(in []slot) (int, error) {
	k := min(len(in), len(m.rh))
	for i := range k {
		h := &m.rh[i].hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(len(in[i].oob))
		h.Flags = 0
	}
	n, err := m.call(m.rc.Read, unix.SYS_RECVMMSG, m.rh[:k])
	for i := range n {
		in[i].n = int(m.rh[i].len)
		in[i].oobn = int(m.rh[i].hdr.Controllen)
		in[i].from = addrPortOf(&m.rname[i])
	}
	return n, err
}

func (m *mmsgIO) write(out []reply) (int, error) {
	k := min(len(out), len(m.wh))
	for i := range k {
		r := &out[i]
		m.wiov[i].Base = unsafe.SliceData(r.b)
		m.wiov[i].SetLen(len(r.b))
		h := &m.wh[i].hdr
		h.Namelen = putSockaddr(&m.wname[i], r.to, m.v6)
		h.Control = unsafe.SliceData(r.oob)
		h.SetControllen(len(r.oob))
	}
	return m.call(m.rc.Write, unix.SYS_SENDMMSG, m.wh[:k])
}

// call makes the system call trap on hs through do (the RawConn's Read
// or Write, which waits on the poller while the socket says EAGAIN) and
// returns how many messages it handled.
func (m *mmsgIO) call(do func(func(uintptr) bool) error, trap uintptr, hs []mmsghdr) (int, error) {
	var n uintptr
	var errno syscall.Errno
	err := do(func(fd uintptr) bool {
		for {
			n, _, errno = unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), 0, 0, 0)
			if errno != unix.EINTR {
				return errno != unix.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	}
	return int(n), nil
}

// addrPortOf reads a sockaddr_in or sockaddr_in6 the kernel wrote. An
// IPv6 address with a scope (link-local) gets the scope's number as its
// zone: the only case that allocates.
func addrPortOf(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	if sa.Family == unix.AF_INET {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	a := netip.AddrFrom16(sa.Addr)
	if sa.Scope_id != 0 {
		a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
	}
	return netip.AddrPortFrom(a, port)
}

// putSockaddr writes to as the sockaddr of an AF_INET6 socket (v6) or an
// AF_INET one into sa and returns its length. A zone is an interface's
// number or name.
func putSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, v6 bool) uint32 {
	port := (*[2]byte)(unsafe.Pointer(&sa.Port))
	binary.BigEndian.PutUint16(port[:], to.Port())
	if !v6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		sa4.Addr = to.Addr().Unmap().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	sa.Flowinfo = 0
	sa.Addr = to.Addr().As16()
	sa.Scope_id = 0
	if z := to.Addr().Zone(); z != "" {
		if n, err := strconv.ParseUint(z, 10, 32); err == nil {
			sa.Scope_id = uint32(n)
		} else if ifi, err := net.InterfaceByName(z); err == nil {
			sa.Scope_id = uint32(ifi.Index)
		}
	}
	return unix.SizeofSockaddrInet6
}

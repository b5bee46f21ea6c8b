//go:build linux

// Package mmsg moves batches of UDP datagrams with recvmmsg and sendmmsg,
// through headers, vectors and addresses set up once, so that a call
// neither allocates nor converts addresses through the net package (as
// golang.org/x/net's batches do, a net.UDPAddr per datagram).
//
// A batch may make its calls raw (unix.RawSyscall6), the Go runtime not
// told that the thread enters the kernel. On a socket of the net package,
// which is non-blocking, neither call ever sleeps: it takes what is
// queued, or fails with EAGAIN and the RawConn waits on the poller. Told
// of a call, the runtime hands the goroutine's processor to another
// thread when the call outlasts a tick of its monitor and other work is
// queued, which a batch sent over loopback (the receiver's work runs in
// the sender's call) often does; the goroutine then resumes on whichever
// thread is free. Under load (BenchmarkEdgeVsEcho) that hand-off and the
// thread switches that follow cost a lobby's reader about a tenth of its
// CPU time per request. But a raw call keeps its processor: the other
// goroutines, and the poller that wakes them, get it only when the caller
// waits on the poller (its socket empty) or the runtime preempts it, and
// under load neither may come for a while: with as many raw callers as
// processors (GOMAXPROCS), or more, requests once waited over 200 ms for
// a reader the poller had not woken. So callers that leave no processor
// to spare (Yields) give theirs up every rawYield calls
// (runtime.Gosched): the goroutines that are ready run then, and those
// the poller wakes are ready within the runtime monitor's tick (10 ms).
// Go changes GOMAXPROCS when the process's CPU quota changes, so a batch
// looks at it again every rawRecheck calls.
package mmsg

import (
	"encoding/binary"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Header is struct mmsghdr, which golang.org/x/sys/unix does not define.
type Header struct {
	Hdr unix.Msghdr
	Len uint32
	_   [4]byte
}

// Batch is the headers of up to Len datagrams of one socket, one
// direction: those read into the buffers SetBuffer gave, or those
// SetDatagram queued to send. Only one goroutine uses a Batch.
type Batch struct {
	rc     syscall.RawConn
	v6     bool // an AF_INET6 socket
	h      []Header
	name   []unix.RawSockaddrInet6
	iov    []unix.Iovec
	oobLen []int // the control buffers' lengths, restored before a read

	// callers is how many goroutines loop on batches as this one's does,
	// 0 if its calls are never raw; yield is Yields(callers) when last
	// looked at, calls the calls made so far.
	callers int
	raw     bool
	yield   bool
	calls   uint

	// The call in flight: its system call, how many headers it passes,
	// what it returned; syscall is the function the RawConn runs, made
	// once so that a call allocates nothing.
	trap    uintptr
	k       int
	n       uintptr
	errno   syscall.Errno
	syscall func(fd uintptr) bool
}

// rawRecheck is how many calls a batch makes between two looks at
// GOMAXPROCS: under load, when raw calls matter, several a second.
const rawRecheck = 256

// rawYield is how many calls a batch whose callers leave no processor to
// spare makes between two times it gives its processor up: under load a
// few hundred times a second, each well under a microsecond.
const rawYield = 64

// Yields says whether callers goroutines that each loop on batches, their
// calls raw, leave no processor to spare: they are as many as the
// processors that run goroutines (GOMAXPROCS now), or more. Each then
// gives its processor up every rawYield calls (see the package's comment).
func Yields(callers int) bool { return callers >= runtime.GOMAXPROCS(0) }

// New returns a batch of n datagrams on c, for one of callers goroutines
// that each loop on batches of their own: its calls are raw unless
// callers is 0, and it gives its processor up every rawYield calls while
// Yields(callers) holds, looked at again every rawRecheck calls.
func New(c *net.UDPConn, n, callers int) (*Batch, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &Batch{rc: rc, h: make([]Header, n), name: make([]unix.RawSockaddrInet6, n),
		iov: make([]unix.Iovec, n), oobLen: make([]int, n), callers: callers, raw: callers > 0}
	b.syscall = func(fd uintptr) bool {
		call := unix.Syscall6
		if b.raw {
			call = unix.RawSyscall6
		}
		for {
			b.n, _, b.errno = call(b.trap, fd, uintptr(unsafe.Pointer(&b.h[0])), uintptr(b.k), 0, 0, 0)
			if b.errno != unix.EINTR {
				return b.errno != unix.EAGAIN
			}
		}
	}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		b.v6 = true
	}
	for i := range b.h {
		h := &b.h[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&b.name[i]))
		h.Iov = &b.iov[i]
		h.SetIovlen(1)
	}
	return b, nil
}

// Len is how many datagrams one call moves at most.
func (b *Batch) Len() int { return len(b.h) }

// SetBuffer makes buf and oob (which may be empty) where Recv puts the
// i-th datagram and its control messages.
func (b *Batch) SetBuffer(i int, buf, oob []byte) {
	b.iov[i].Base = unsafe.SliceData(buf)
	b.iov[i].SetLen(len(buf))
	b.h[i].Hdr.Control = unsafe.SliceData(oob)
	b.oobLen[i] = len(oob)
}

// Recv reads at least one datagram and at most min(n, Len()) into the
// buffers, waiting on the poller while there are none (or until the
// socket's read deadline), and returns how many it read.
func (b *Batch) Recv(n int) (int, error) {
	k := min(n, len(b.h))
	for i := range k {
		h := &b.h[i].Hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(b.oobLen[i])
		h.Flags = 0
	}
	return b.call(b.rc.Read, unix.SYS_RECVMMSG, k)
}

// Received is what Recv read into slot i: the datagram's length, its
// control messages' length and its sender.
func (b *Batch) Received(i int) (n, oobn int, from netip.AddrPort) {
	return int(b.h[i].Len), int(b.h[i].Hdr.Controllen), addrPortOf(&b.name[i])
}

// SetDatagram queues p, with control messages oob (which may be empty),
// to go to to as the i-th datagram of the next Send. p and oob must stay
// as they are until then.
func (b *Batch) SetDatagram(i int, p, oob []byte, to netip.AddrPort) {
	b.iov[i].Base = unsafe.SliceData(p)
	b.iov[i].SetLen(len(p))
	h := &b.h[i].Hdr
	h.Namelen = putSockaddr(&b.name[i], to, b.v6)
	h.Control = unsafe.SliceData(oob)
	h.SetControllen(len(oob))
}

// Send sends the first min(n, Len()) datagrams queued, waiting on the
// poller while the socket's buffer is full, and returns how many went: at
// least one, or an error (that of the first not sent).
func (b *Batch) Send(n int) (int, error) {
	return b.call(b.rc.Write, unix.SYS_SENDMMSG, min(n, len(b.h)))
}

// call makes the system call trap on the first k headers through do (the
// RawConn's Read or Write, which waits on the poller while the socket
// says EAGAIN) and returns how many messages it handled.
func (b *Batch) call(do func(func(uintptr) bool) error, trap uintptr, k int) (int, error) {
	if b.calls%rawRecheck == 0 {
		b.yield = b.raw && Yields(b.callers)
	}
	if b.yield && b.calls%rawYield == rawYield-1 {
		runtime.Gosched()
	}
	b.calls++
	b.trap, b.k = trap, k
	err := do(b.syscall)
	switch {
	case err != nil:
		return 0, err
	case b.errno != 0:
		return 0, b.errno
	}
	return int(b.n), nil
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

package sockfilter

import (
	"errors"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/sockets"
)

// Attach sets prog as c's socket filter, in place of any it had.
func Attach(c *net.UDPConn, prog []bpf.Instruction) error {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	return sockets.Control(c, func(fd int) error {
		return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog)
	})
}

// Drops is the count of datagrams the kernel dropped at c since it was
// made: refused by its filter, or with no room left in its receive
// buffer. The kernel keeps it in 32 bits; see Counter.
func Drops(c *net.UDPConn) (uint32, error) {
	m, err := NewMeter(c)
	if err != nil {
		return 0, err
	}
	return m.Drops()
}

// Meter reads one socket's drop count (see Drops) as often as asked
// without allocating: a read loop asks every millisecond.
type Meter struct {
	rc    syscall.RawConn
	get   func(fd uintptr) // m.meminfo, bound once
	mem   [meminfoVars]uint32
	n     uint32
	errno syscall.Errno
}

// NewMeter returns a Meter of c.
func NewMeter(c *net.UDPConn) (*Meter, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	m := &Meter{rc: rc}
	m.get = m.meminfo
	return m, nil
}

// Drops is the socket's drop count now.
func (m *Meter) Drops() (uint32, error) {
	if err := m.rc.Control(m.get); err != nil {
		return 0, err
	}
	if m.errno != 0 {
		return 0, m.errno
	}
	return m.mem[meminfoDrops], nil
}

// meminfo reads the socket's SO_MEMINFO into m.mem. Raw: it never
// blocks, and a read loop making its calls raw asks it every
// millisecond. A call the runtime is told of wakes its monitor thread
// when that sleeps, which then stays up polling: under load, more CPU
// than the call.
func (m *Meter) meminfo(fd uintptr) {
	m.n = uint32(unsafe.Sizeof(m.mem))
	_, _, m.errno = unix.RawSyscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&m.mem[0])), uintptr(unsafe.Pointer(&m.n)), 0)
}

// The fields of SO_MEMINFO that matter here (linux/sock_diag.h): its
// length, and the index of the drop count.
const (
	meminfoDrops = 8
	meminfoVars  = 9
)

// Supported reports whether this system can filter sockets.
const Supported = true

// Detach removes c's socket filter, if it has one.
func Detach(c *net.UDPConn) error {
	err := sockets.Control(c, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0) })
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

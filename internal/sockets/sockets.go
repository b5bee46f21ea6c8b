// Package sockets binds a process's listening sockets so that they can be
// handed to the process that takes its place (an upgrade without a gap):
// the same sockets, with the datagrams and connections queued in them,
// not new ones bound after the old are closed.
//
// Every listener of the process binds through ListenUDP, ListenTCP or
// Listen. In a process started by a predecessor, Inherit first receives
// the predecessor's sockets, each under the key it was asked for
// ("udp4 127.0.0.1:7777": network and address as requested, port 0
// included); a listener asking for a key again gets the inherited socket,
// in order, and one asking for something new binds it. Files returns
// every socket still open, with its key, for a successor.
//
// The registry is the process's: sockets are a process-wide resource, and
// the listeners that bind them live in packages that know nothing of
// upgrades.
package sockets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/udpsock"
)

// socket is one bound socket of the process.
type socket struct {
	key  string
	conn syscall.Conn // *net.UDPConn or *net.TCPListener
}

var reg struct {
	mu        sync.Mutex
	bound     []socket
	inherited map[string][]*os.File // by key, in the order they were passed
}

// Key is the key of a socket asked for with network and address.
func Key(network, address string) string { return network + " " + address }

// Inherit takes the sockets a predecessor passed, files[i] under keys[i].
// They are handed out by the listen functions; CloseUnclaimed closes those
// nobody asked for.
func Inherit(files []*os.File, keys []string) error {
	if len(files) != len(keys) {
		return fmt.Errorf("sockets: %d files for %d keys", len(files), len(keys))
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.inherited = make(map[string][]*os.File)
	for i, f := range files {
		// Rooms this process starts must not inherit them again.
		unix.CloseOnExec(int(f.Fd()))
		reg.inherited[keys[i]] = append(reg.inherited[keys[i]], f)
	}
	return nil
}

// claim returns the next inherited socket asked for under key, or nil.
func claim(key string) *os.File {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	fs := reg.inherited[key]
	if len(fs) == 0 {
		return nil
	}
	reg.inherited[key] = fs[1:]
	return fs[0]
}

func record(key string, c syscall.Conn) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.bound = append(reg.bound, socket{key, c})
}

// ListenUDP is net.ListenUDP, or the socket a predecessor bound for the
// same network and address.
func ListenUDP(network string, laddr *net.UDPAddr) (*net.UDPConn, error) {
	return bind(Key(network, laddr.String()), udpsock.FromFile, func() (*net.UDPConn, error) {
		return net.ListenUDP(network, laddr)
	})
}

// ListenUDPGroup binds n sockets to laddr that share its port
// (SO_REUSEPORT): the kernel spreads the datagrams sent there over them by
// their sender, each sender's always to the same socket, so that n readers
// share the load without sharing a receive queue. The first socket is
// bound alone, as ListenUDP binds, so that a port held by another process
// (another lobby started by mistake) is refused as ever, and only then
// opened to the others, which join it at its port. Each is the socket a
// predecessor bound for the same network and address, where there is one;
// a predecessor with fewer gets the rest bound next to its own, and the
// ones of a predecessor with more are left to CloseUnclaimed. Only a
// process of the same user can join the group (the kernel's rule).
func ListenUDPGroup(network string, laddr *net.UDPAddr, n int) ([]*net.UDPConn, error) {
	if n < 1 {
		return nil, fmt.Errorf("sockets: a group of %d sockets", n)
	}
	first, err := ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	group := []*net.UDPConn{first}
	if n == 1 {
		return group, nil
	}
	fail := func(err error) ([]*net.UDPConn, error) {
		for _, c := range group {
			c.Close()
		}
		return nil, err
	}
	if err := Control(first, reusePort); err != nil {
		return fail(fmt.Errorf("sockets: SO_REUSEPORT: %w", err))
	}
	at := first.LocalAddr().(*net.UDPAddr)
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error { return rawControl(rc, reusePort) }}
	for range n - 1 {
		c, err := bind(Key(network, at.String()), udpsock.FromFile, func() (*net.UDPConn, error) {
			pc, err := lc.ListenPacket(context.Background(), network, at.String())
			if err != nil {
				return nil, err
			}
			return pc.(*net.UDPConn), nil
		})
		if err != nil {
			return fail(err)
		}
		group = append(group, c)
	}
	return group, nil
}

func reusePort(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }

// Control runs f on c's descriptor.
func Control(c syscall.Conn, f func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return rawControl(rc, f)
}

func rawControl(rc syscall.RawConn, f func(fd int) error) error {
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// ListenTCP is net.ListenTCP, or the socket a predecessor bound for the
// same network and address.
func ListenTCP(network string, laddr *net.TCPAddr) (*net.TCPListener, error) {
	return bind(Key(network, laddr.String()), inheritTCP, func() (*net.TCPListener, error) {
		return net.ListenTCP(network, laddr)
	})
}

// Listen is net.Listen for TCP, or the socket a predecessor bound for the
// same network and address.
func Listen(network, address string) (net.Listener, error) {
	addr, err := net.ResolveTCPAddr(network, address)
	if err != nil {
		return nil, err
	}
	ln, err := bind(Key(network, address), inheritTCP, func() (*net.TCPListener, error) {
		return net.ListenTCP(network, addr)
	})
	if err != nil {
		return nil, err // not a nil *net.TCPListener in a non-nil interface
	}
	return ln, nil
}

// bind returns the socket inherited under key, made by inherit, or else a
// new one from listen, and records it for a successor.
func bind[S syscall.Conn](key string, inherit func(*os.File) (S, error), listen func() (S, error)) (S, error) {
	var s S
	var err error
	if f := claim(key); f != nil {
		s, err = inherit(f)
		f.Close()
		if err != nil {
			return s, fmt.Errorf("sockets: inherited %s: %w", key, err)
		}
	} else if s, err = listen(); err != nil {
		return s, err
	}
	record(key, s)
	return s, nil
}

func inheritTCP(f *os.File) (*net.TCPListener, error) {
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		ln.Close()
		return nil, errors.New("not a TCP listener")
	}
	return tl, nil
}

// CloseUnclaimed closes the inherited sockets no listener asked for (the
// configuration changed) and returns their keys.
func CloseUnclaimed() []string {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var keys []string
	for key, fs := range reg.inherited {
		for _, f := range fs {
			f.Close()
			keys = append(keys, key)
		}
	}
	reg.inherited = nil
	return keys
}

// Files returns a duplicate of every socket still open, and its key, for
// a successor to inherit (exec.Cmd.ExtraFiles); the caller closes them.
// The duplicates share the sockets' queues with the originals, and stay
// in non-blocking mode, which the originals depend on.
func Files() ([]*os.File, []string, error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var files []*os.File
	var keys []string
	for _, s := range reg.bound {
		f, err := dup(s.conn)
		if errors.Is(err, net.ErrClosed) {
			continue
		}
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("sockets: %s: %w", s.key, err)
		}
		files = append(files, f)
		keys = append(keys, s.key)
	}
	return files, keys, nil
}

// dup duplicates c's descriptor. Not with conn.File: os/exec would put
// that file, and with it the socket the process still reads, in blocking
// mode (see os.File.Fd); a file made by os.NewFile from a non-blocking
// descriptor stays as it is.
func dup(c syscall.Conn) (*os.File, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	return os.NewFile(uintptr(nfd), "socket"), nil
}

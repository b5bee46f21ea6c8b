package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/proc"
)

// ErrGone matches an Attach to a socket nothing listens on any more: the
// instance that made it has exited.
var ErrGone = errors.New("its instance no longer runs")

// ErrNotARoom matches an Attach to a socket whose process is no Foyer
// instance of this user, or an instance that was never started.
var ErrNotARoom = errors.New("not a room")

// Attach connects to the instance listening on socket, one launched with
// a Dir and a Grace by this host before a restart or by another host,
// and adopts it: it returns the instance's description and a Process
// that reports its status as a launched one does. The host is not the
// process's parent: it knows the process by a pidfd, checked against the
// pid of the socket's peer and the start time the instance gives, and
// learns how it ended from its last report. Its Stop and Kill work as for
// a launched process.
//
// Errors match ErrNotARoom for a socket of something else (a process of
// another user, one that does not answer Describe, or one whose account
// of itself does not match the socket's peer), and ErrGone when nothing
// listens any more.
func Attach(ctx context.Context, socket string, log zerolog.Logger) (*Process, Description, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w (%v)", ErrGone, errors.Unwrap(err))
		}
		return nil, Description{}, fmt.Errorf("instance: attach %s: %w", socket, err)
	}
	// A room's process runs as the user that owns the room's directory:
	// this process's, or the room's own (a lobby run as root gives each
	// room a user). A socket in it whose process is another user's is
	// another room's, or something else's, that the room pointed here.
	cred, err := peer(c.(*net.UnixConn))
	if err == nil {
		if owner := dirOwner(filepath.Dir(socket)); int(cred.Uid) != owner {
			err = fmt.Errorf("%w: its process %d belongs to user %d, not to the room's, %d", ErrNotARoom, cred.Pid, cred.Uid, owner)
		}
	}
	if err != nil {
		c.Close()
		return nil, Description{}, fmt.Errorf("instance: attach %s: %w", socket, err)
	}
	var dialed atomic.Bool
	conn, err := grpc.NewClient("passthrough:///"+socket, append(dialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The one connection whose peer was checked, never another: a
		// socket that vanished is an instance gone.
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			if dialed.Swap(true) {
				return nil, errors.New("instance: connection lost")
			}
			return c, nil
		}),
	)...)
	if err != nil {
		c.Close()
		return nil, Description{}, fmt.Errorf("instance: attach %s: %w", socket, err)
	}
	p, desc, err := adopt(ctx, conn, int(cred.Pid), log)
	if err != nil {
		conn.Close()
		return nil, Description{}, fmt.Errorf("instance: attach %s: %w", socket, err)
	}
	return p, desc, nil
}

// adopt asks the instance at the other end of conn, whose process is pid,
// who it is, takes a pidfd of it and opens its status stream.
func adopt(ctx context.Context, conn *grpc.ClientConn, pid int, log zerolog.Logger) (*Process, Description, error) {
	rpc := instancepb.NewInstanceClient(conn)
	m, err := rpc.Describe(ctx, &instancepb.DescribeRequest{})
	if err != nil {
		return nil, Description{}, fmt.Errorf("%w: describe: %v", ErrNotARoom, err)
	}
	desc, err := descriptionFrom(m)
	switch {
	case err != nil:
		return nil, Description{}, fmt.Errorf("%w: %v", ErrNotARoom, err)
	case desc.PID != pid:
		return nil, Description{}, fmt.Errorf("%w: it says it is process %d, its socket is process %d's", ErrNotARoom, desc.PID, pid)
	}
	h, err := proc.Open(pid, desc.StartTicks)
	if err != nil {
		return nil, Description{}, err
	}
	p := &Process{life: adopted{h}, log: log, rpc: rpc, status: make(chan Status, statusBuffer)}
	p.free = func() {
		<-h.Exited()
		h.Close()
		conn.Close()
	}
	if !desc.Started {
		// Launched by a host that died before it handed out the room:
		// there is nothing to adopt. It is stopped, not left to end after
		// its grace, since it holds nothing anyone waits for.
		p.Stop(DefaultStartTimeout)
		go p.release()
		return nil, Description{}, fmt.Errorf("%w: process %d was never given a room (stopped)", ErrNotARoom, pid)
	}
	if err := p.watch(false); err != nil {
		h.Close()
		return nil, Description{}, fmt.Errorf("watch: %w", err)
	}
	go p.release()
	return p, desc, nil
}

// dirOwner is the user that owns dir, the room's directory; this
// process's user when it cannot be told.
func dirOwner(dir string) int {
	if fi, err := os.Lstat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.IsDir() {
			return int(st.Uid)
		}
	}
	return os.Getuid()
}

// peer is the process at the other end of a unix socket connection: the
// one that made the listening socket.
func peer(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, serr
}

// adopted is a process the host did not start, known by a pidfd.
type adopted struct{ h *proc.Handle }

var _ life = adopted{}

func (a adopted) pid() int                    { return a.h.PID() }
func (a adopted) exited() <-chan struct{}     { return a.h.Exited() }
func (a adopted) exitStatus() (int, string)   { return -1, "" }
func (a adopted) signalGroup(sig unix.Signal) { a.h.SignalGroup(sig) }

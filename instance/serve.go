package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	instancepb "github.com/foyerlobby/foyer/instance/proto"
	"github.com/foyerlobby/foyer/packet"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Timings of the instance side.
const (
	// ackWait is how long a finished instance waits for the host to
	// acknowledge its final status before it exits anyway.
	ackWait = time.Second
	// parentCheck is how often the instance looks for its parent when it
	// cannot wait on a pidfd. The host's parent-death signal is the first
	// line of defence; this one also covers a host that forgot to set it.
	parentCheck = 500 * time.Millisecond
	// closeGrace is what the game gets to stop when the host goes away
	// without a Stop.
	closeGrace = time.Second
)

// maxStreams bounds the concurrent calls on the instance's connection.
const maxStreams = 16

// Serve runs g as an instance: it answers the plugin handshake, serves
// the host until the game finishes or the host goes away, and exits the
// process; it never returns. Run by hand, it says what it is and exits
// with status 1.
//
// Serve takes over os.Stdout and os.Stderr (go-plugin carries them to the
// host, which discards them); a game that logs should write to the
// original stderr, captured before Serve is called: the host forwards its
// lines to its own log.
func Serve(g Game) {
	if os.Getenv(instancepb.Handshake.MagicCookieKey) != instancepb.Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "This program is a Foyer room (instance protocol %d).\n"+
			"A Foyer supervisor starts it and drives it over its plugin handshake;\n"+
			"run by hand it has nothing to do.\n", instancepb.ProtocolVersion)
		os.Exit(1)
	}
	s := newServer(g)
	go watchParent(os.Getppid())
	go s.exitWhenFinished()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: instancepb.Handshake,
		Plugins:         plugin.PluginSet{instancepb.PluginName: &instancepb.Plugin{Impl: s}},
		GRPCServer:      newGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "plugin",
			Level:      hclog.Error,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
	// plugin.Serve returns when the host closed its connection: nobody
	// will Start, Stop or watch this instance any more.
	s.stopGame(closeGrace)
	os.Exit(0)
}

// newGRPCServer is the instance's gRPC server: sized for a handful of
// small messages on one local connection. A fixed flow-control window
// turns off the bandwidth probe, whose pings would cost the host a wake-up.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts,
		grpc.InitialWindowSize(instancepb.MaxMessage),
		grpc.InitialConnWindowSize(instancepb.MaxMessage),
		grpc.ReadBufferSize(instancepb.ConnBuffer),
		grpc.WriteBufferSize(instancepb.ConnBuffer),
		grpc.MaxRecvMsgSize(instancepb.MaxMessage),
		// go-plugin's own services hold three streams open; the rest
		// are Watch and the odd Start or Stop.
		grpc.MaxConcurrentStreams(maxStreams),
	)...)
}

// watchParent exits the process once its parent, the host, is gone. It
// waits on a pidfd of the parent, which costs an idle room no wake-up; a
// kernel without pidfds gets the polling fallback.
func watchParent(ppid int) {
	// A child is reparented before its parent's pidfd turns readable, so
	// getppid is the final word on a wake-up.
	for os.Getppid() == ppid {
		if err := awaitParentExit(ppid); err != nil {
			pollParent(ppid)
		}
	}
	os.Exit(1)
}

// awaitParentExit returns nil once the parent ppid has exited (or after a
// spurious wake-up), and an error when it cannot wait on a pidfd.
func awaitParentExit(ppid int) error {
	fd, err := unix.PidfdOpen(ppid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "parent pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if os.Getppid() != ppid {
		return nil // gone before the pidfd was opened: ppid may be another's
	}
	// A pidfd turns readable when the process exits: the first call
	// makes the runtime's poller wait for that, the second one ends it.
	polled := false
	return rc.Read(func(uintptr) bool {
		done := polled
		polled = true
		return done
	})
}

// pollParent returns once the parent is no longer ppid.
func pollParent(ppid int) {
	t := time.NewTicker(parentCheck)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			return
		}
	}
}

// server is the instance service seen from the instance.
type server struct {
	instancepb.UnimplementedInstanceServer
	game    Game
	rep     *reporter
	life    context.Context // the game's lifetime
	endLife context.CancelFunc

	mu       sync.Mutex // serialises Start, and Stop after it
	started  bool
	watching atomic.Bool
	stopOnce sync.Once
	ackOnce  sync.Once
	acked    chan struct{} // the host has the final status
	exitBy   atomic.Int64  // Unix ns; set by Stop: exit before the host kills
}

func newServer(g Game) *server {
	life, end := context.WithCancel(context.Background())
	return &server{game: g, rep: newReporter(), life: life, endLife: end, acked: make(chan struct{})}
}

// Start binds the port and starts the game; see instance.proto for the
// status codes.
func (s *server) Start(_ context.Context, req *instancepb.StartRequest) (*instancepb.StartResponse, error) {
	a, err := assignmentFrom(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil, status.Error(codes.FailedPrecondition, "instance: already started")
	}
	conn, err := listenUDP(a.Bind, a.Port)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, status.Errorf(codes.AlreadyExists, "instance: udp port %d: %v", a.Port, err)
		}
		return nil, status.Errorf(codes.FailedPrecondition, "instance: udp port %d: %v", a.Port, err)
	}
	s.started = true
	// The game reads through infoConn, which answers server browsers on
	// the same port before the game sees anything.
	gameConn := &infoConn{PacketConn: conn, udp: conn, info: newInfoAnswerer(a, s.rep, s.game)}
	if err := s.game.Start(s.life, a, gameConn, s.rep); err != nil {
		conn.Close()
		if errors.Is(err, ErrPortInUse) {
			s.started = false
			return nil, status.Error(codes.AlreadyExists, err.Error())
		}
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &instancepb.StartResponse{}, nil
}

func assignmentFrom(req *instancepb.StartRequest) (Assignment, error) {
	a := Assignment{RoomID: req.GetRoomId(), MaxPlayers: int(req.GetMaxPlayers()), Settings: req.GetSettings()}
	if p := req.GetPort(); p == 0 || p > 0xFFFF {
		return a, fmt.Errorf("instance: port %d is not 1-65535", p)
	}
	a.Port = uint16(req.GetPort())
	if a.MaxPlayers < 1 {
		return a, errors.New("instance: max players must be at least 1")
	}
	if b := req.GetBind(); b != "" {
		ip, err := netip.ParseAddr(b)
		if err != nil {
			return a, fmt.Errorf("instance: bind address: %v", err)
		}
		a.Bind = ip
	}
	return a, nil
}

func listenUDP(bind netip.Addr, port uint16) (*net.UDPConn, error) {
	addr := &net.UDPAddr{Port: int(port)}
	if bind.IsValid() {
		addr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(bind, port))
	}
	return net.ListenUDP("udp", addr)
}

// Stop stops the game and reports Finished, which ends the process.
func (s *server) Stop(_ context.Context, req *instancepb.StopRequest) (*instancepb.StopResponse, error) {
	// The game gets most of the grace; the rest carries the final status
	// to the host, and the process exits within 7/8 of it whether or not
	// the host acknowledged that status: the host SIGKILLs the group at
	// the end of the grace, and an instance it asked to stop should end
	// cleanly, not be killed.
	grace := time.Duration(req.GetGraceMs()) * time.Millisecond
	s.exitBy.Store(time.Now().Add(grace * 7 / 8).UnixNano())
	s.stopGame(grace * 3 / 4)
	s.rep.SetState(packet.Finished)
	return &instancepb.StopResponse{}, nil
}

// stopGame stops a started game once, within grace.
func (s *server) stopGame(grace time.Duration) {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		started := s.started
		s.mu.Unlock()
		if started {
			ctx, cancel := context.WithTimeout(s.life, grace)
			_ = s.game.Stop(ctx)
			cancel()
		}
		s.endLife()
	})
}

// Watch streams the reports: the present first, then every change, and
// heartbeats in between.
func (s *server) Watch(_ *instancepb.WatchRequest, stream grpc.ServerStreamingServer[instancepb.Status]) error {
	if !s.watching.CompareAndSwap(false, true) {
		return status.Error(codes.FailedPrecondition, "instance: already watched")
	}
	defer s.watching.Store(false)
	ctx := stream.Context()
	if done, err := s.send(ctx, stream, s.rep.snapshot()); done {
		return err
	}
	hb := time.NewTimer(HeartbeatInterval)
	defer hb.Stop()
	for {
		select {
		case <-s.rep.wake:
			for _, st := range s.rep.take() {
				if done, err := s.send(ctx, stream, st); done {
					return err
				}
			}
		case <-hb.C:
			if done, err := s.send(ctx, stream, s.rep.current()); done {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		hb.Reset(HeartbeatInterval)
	}
}

// send sends st and says whether the call is over: after a failed send,
// or after the final status, once the host has acknowledged it by
// cancelling the call.
func (s *server) send(ctx context.Context, stream grpc.ServerStreamingServer[instancepb.Status], st *instancepb.Status) (bool, error) {
	if err := stream.Send(st); err != nil {
		return true, err
	}
	if st.GetState() != instancepb.State_STATE_FINISHED {
		return false, nil
	}
	<-ctx.Done()
	s.ackOnce.Do(func() { close(s.acked) })
	return true, nil
}

// exitWhenFinished ends the process once the game has finished and the
// host has its final status, or has had ackWait to take it (less when a
// Stop's grace leaves less).
func (s *server) exitWhenFinished() {
	<-s.rep.finished
	s.endLife()
	wait := ackWait
	if by := s.exitBy.Load(); by != 0 {
		wait = min(wait, time.Until(time.Unix(0, by)))
	}
	t := time.NewTimer(wait)
	select {
	case <-s.acked:
	case <-t.C:
	}
	os.Exit(0)
}

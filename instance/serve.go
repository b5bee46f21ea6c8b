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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Timings of the instance side.
const (
	// ackWait is how long a finished instance waits for the host to
	// acknowledge its final status before it exits anyway.
	ackWait = time.Second
	// parentCheck is how often the instance looks for its parent. The
	// host's parent-death signal is the first line of defence; this one
	// also covers a host that forgot to set it.
	parentCheck = 500 * time.Millisecond
	// closeGrace is what the game gets to stop when the host goes away
	// without a Stop.
	closeGrace = time.Second
)

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
	if os.Getenv(handshake.MagicCookieKey) != handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "This program is a Foyer room (instance protocol %d).\n"+
			"A Foyer supervisor starts it and drives it over its plugin handshake;\n"+
			"run by hand it has nothing to do.\n", ProtocolVersion)
		os.Exit(1)
	}
	s := newServer(g)
	go watchParent(os.Getppid())
	go s.exitWhenFinished()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{pluginName: &roomPlugin{server: s}},
		GRPCServer:      plugin.DefaultGRPCServer,
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

func watchParent(ppid int) {
	t := time.NewTicker(parentCheck)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			os.Exit(1)
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
	// to the host before it kills the process group.
	s.stopGame(time.Duration(req.GetGraceMs()) * time.Millisecond * 3 / 4)
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
// host has its final status, or has had ackWait to take it.
func (s *server) exitWhenFinished() {
	<-s.rep.finished
	s.endLife()
	t := time.NewTimer(ackWait)
	select {
	case <-s.acked:
	case <-t.C:
	}
	os.Exit(0)
}

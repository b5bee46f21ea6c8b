package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/udpsock"
	"github.com/foyerlobby/foyer/packet"
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
// original stderr, captured before Serve is called. When the host gives
// the room a directory (instancepb.EnvRoomDir), descriptors 1 and 2 go to
// room.log there from Start on: the room's output is kept with the room,
// whoever watches it, and the host reads it there. The log is started
// again (room.log.1 keeps the one before) once it passes maxRoomLog.
//
// A host with a state directory starts its instances to outlive it (see
// instancepb.EnvReattachGrace): such an instance keeps playing while no
// host watches it, for the grace it was given, and a new host may adopt
// it in that time; past it, the instance stops its game (players see the
// match end as stopped by the host), ends its room and exits. Any other
// instance ends with its host: on SIGTERM (its parent-death signal), or
// once it sees its parent gone, it ends its room and exits at once.
// Ending the room kills what the game left of it: every other process in
// the room's cgroups, which are then removed (instancepb.EnvRoomCgroup),
// or, without cgroups, every descendant of the instance. Descriptors 1
// and 2 of an instance the host gave no directory go nowhere once the
// host that started it stops watching, since nobody reads the pipes any
// more. Only descriptors 1 and 2 are moved: what a game writes to the os.Stdout and
// os.Stderr Serve put in place goes to go-plugin's stream, which nobody
// drains once that host is gone, and blocks when its pipe is full. A game
// that may outlive its host logs to the stderr it captured before Serve.
func Serve(g Game) {
	if os.Getenv(instancepb.Handshake.MagicCookieKey) != instancepb.Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "This program is a Foyer room (instance protocol %d).\n"+
			"A Foyer supervisor starts it and drives it over its plugin handshake;\n"+
			"run by hand it has nothing to do.\n", instancepb.ProtocolVersion)
		os.Exit(1)
	}
	s := newServer(g, os.Getenv(instancepb.EnvRoomDir))
	s.cgroup = os.Getenv(instancepb.EnvRoomCgroup)
	s.inherited = inheritedSocket(os.Getenv(instancepb.EnvRoomSocket))
	os.Unsetenv(instancepb.EnvRoomSocket) // the number means nothing to what the game starts
	s.ownSocketDir()
	if s.runner != nil && s.inherited != nil {
		// A Runner's program binds the port itself.
		s.inherited.Close()
		s.inherited = nil
	}
	// The pipes to the host that started this process outlive their
	// reader when the host dies, and the instance has work left then (the
	// rest of its match, or the end of its room): a write must fail, not
	// kill. A Runner's program starts with SIGPIPE's default all the same.
	proc.SurviveBrokenPipes()
	if grace, err := time.ParseDuration(os.Getenv(instancepb.EnvReattachGrace)); err == nil && grace > 0 {
		s.orphan = newOrphanTimer(grace, s.abandoned)
	} else {
		// The host's parent-death signal is SIGTERM, so that the room
		// ends whole with its host; a game that ignores SIGTERM still
		// ends with it, when watchParent sees the host gone.
		s.host = os.Getppid()
		if !signal.Ignored(syscall.SIGTERM) {
			term := make(chan os.Signal, 1)
			signal.Notify(term, syscall.SIGTERM)
			go func() {
				<-term
				s.exit(1, true)
			}()
		}
		go func() {
			watchParent(s.host)
			s.exit(1, true)
		}()
	}
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
	s.exit(0, false)
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
		// are Watch and the odd Start, Stop, Describe or Keep.
		grpc.MaxConcurrentStreams(maxStreams),
	)...)
}

// watchParent returns once its parent, the host, is gone. It waits on a
// pidfd of the parent, which costs an idle room no wake-up; a kernel
// without pidfds gets the polling fallback.
func watchParent(ppid int) {
	// A child is reparented before its parent's pidfd turns readable, so
	// getppid is the final word on a wake-up.
	for os.Getppid() == ppid {
		if err := awaitParentExit(ppid); err != nil {
			pollParent(ppid)
		}
	}
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

// orphanTimer ends an instance that no host watches for grace. It runs
// from the start (a host that dies before it first watches leaves the
// instance alone too), stops while a host watches, and starts again when
// the last watcher goes.
type orphanTimer struct {
	grace time.Duration
	mu    sync.Mutex
	timer *time.Timer // nil while a host watches
	end   func()
}

func newOrphanTimer(grace time.Duration, end func()) *orphanTimer {
	o := &orphanTimer{grace: grace, end: end}
	o.timer = time.AfterFunc(grace, end)
	return o
}

// watched stops the timer: a host watches.
func (o *orphanTimer) watched() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

// unwatched starts the timer again: no host watches.
func (o *orphanTimer) unwatched() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.timer == nil {
		o.timer = time.AfterFunc(o.grace, o.end)
	}
}

// server is the instance service seen from the instance.
type server struct {
	instancepb.UnimplementedInstanceServer
	game    Game
	runner  Runner // game as a Runner; nil for a game that serves its port
	dir     string // the room's private directory; "" when the host gave none
	rep     *reporter
	door    *door                  // who the game's socket lets in
	wake    atomic.Pointer[func()] // wakes the game's read for a knock; nil before Start
	life    context.Context        // the game's lifetime
	endLife context.CancelFunc
	orphan  *orphanTimer // nil for an instance that ends with its host
	cgroup  string       // "TREE/ROOM" of the room's cgroups; "" without
	host    int          // the pid of the host an instance without orphan ends with
	self    proc.Stat    // this process, read at the start
	stderr  *os.File     // descriptor 2, whatever Serve put in os.Stderr
	// socketDir is the directory of go-plugin's socket the instance made
	// for itself, when its host named none; removed on exit, since
	// go-plugin removes the socket only when its server closes, and the
	// instance exits without closing it. "" when the host named one.
	socketDir string
	// inherited is the room's socket the host bound and passed, until
	// Start takes it; nil without.
	inherited *net.UDPConn
	// exiting is taken by the one caller of exit and never given back:
	// the process ends once, and never while its room is being ended.
	exiting sync.Mutex

	mu       sync.Mutex // serialises Start, and Stop after it; guards the fields below
	started  bool
	assigned *instancepb.StartRequest // the successful Start
	since    time.Time                // when it succeeded
	kept     *instancepb.HostState

	watchMu  sync.Mutex
	watcher  uint64             // the current Watch call's number; 0: none
	unwatch  context.CancelFunc // ends the current Watch call
	calls    uint64             // Watch calls so far
	logMu    sync.Mutex         // guards the fields below, and moving descriptors 1 and 2
	logging  bool               // they go to room.log
	logGone  bool               // they go to /dev/null
	logCheck time.Time          // when room.log's size was last checked
	stopOnce sync.Once
	ackOnce  sync.Once
	acked    chan struct{} // the host has the final status
	exitBy   atomic.Int64  // Unix ns; set by Stop: exit before the host kills
}

func newServer(g Game, dir string) *server {
	life, end := context.WithCancel(context.Background())
	d := newDoor()
	rep := newReporter(d.player)
	rep.refused, rep.seated, rep.token = d.refusedCount, d.held, d.checkToken
	s := &server{game: g, dir: dir, rep: rep, door: d, life: life, endLife: end, acked: make(chan struct{})}
	s.runner, _ = g.(Runner)
	s.stderr = os.NewFile(2, "stderr")
	s.self, _ = proc.ReadStat(os.Getpid())
	return s
}

// Start binds the port and starts the game (or runs a Runner's program);
// see instance.proto for the status codes.
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
	if s.dir != "" {
		s.logToFile() // the game's output is the room's, from its start
	}
	s.door.setRoom(a.RoomID, time.Duration(req.GetReconnectGraceMs())*time.Millisecond)
	s.door.addKeys(req.GetSeatKeys())
	if s.runner != nil {
		err = s.runner.Run(s.life, a, s.rep)
	} else {
		err = s.startGame(a)
	}
	switch {
	case errors.Is(err, ErrPortInUse):
		return nil, status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, ErrTryAgain):
		return nil, status.Error(codes.Aborted, err.Error())
	case err != nil:
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.started, s.assigned, s.since = true, req, time.Now().Truncate(time.Millisecond)
	return &instancepb.StartResponse{StartedUnixMs: s.since.UnixMilli()}, nil
}

// startGame starts the game on a's port: on the socket the host passed,
// if it is bound there, or on one bound now. s.mu is held.
func (s *server) startGame(a Assignment) error {
	conn := s.inherited
	s.inherited = nil
	if conn != nil && !boundOn(conn, a) {
		conn.Close()
		conn = nil
	}
	var err error
	if conn == nil {
		conn, err = udpsock.Listen(a.Bind, a.Port)
	}
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: udp port %d: %v", ErrPortInUse, a.Port, err)
		}
		return fmt.Errorf("instance: udp port %d: %v", a.Port, err)
	}
	// The game reads through roomConn, which answers server browsers on
	// the same port and keeps out the unseated before the game sees
	// anything.
	rc, err := newRoomConn(conn, a.Bind, newInfoAnswerer(a, s.rep, s.game), s.door)
	if err != nil {
		conn.Close()
		return fmt.Errorf("instance: udp port %d: %v", a.Port, err)
	}
	rc.reconnected, _ = s.game.(Reconnecter)
	wake := rc.wake
	s.wake.Store(&wake)
	if err := s.game.Start(s.life, a, rc, s.rep); err != nil {
		conn.Close()
		return err
	}
	return nil
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

// inheritedSocket takes the UDP socket at descriptor v (the value of
// instancepb.EnvRoomSocket); nil when v names none.
func inheritedSocket(v string) *net.UDPConn {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "room socket")
	defer f.Close() // the conn has its own descriptor
	c, _ := udpsock.FromFile(f)
	return c
}

// boundOn reports whether c is bound where a says the game's port is: on
// a.Port, at a.Bind or, without it, at every address.
func boundOn(c *net.UDPConn, a Assignment) bool {
	at := c.LocalAddr().(*net.UDPAddr).AddrPort()
	if at.Port() != a.Port {
		return false
	}
	if !a.Bind.IsValid() {
		return at.Addr().IsUnspecified()
	}
	return at.Addr().Unmap() == a.Bind.Unmap()
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

// abandoned ends an instance no host has watched for its grace: the game
// stops as when the host stops it, the rest of the room is ended, and the
// process exits.
func (s *server) abandoned() {
	s.logToFile()
	// To the file itself: Serve put a pipe of go-plugin's in os.Stderr.
	fmt.Fprintf(s.stderr, "foyer instance: no host for %v: stopping the game\n", s.orphan.grace)
	s.stopGame(closeGrace)
	s.exit(0, true)
}

// exit ends the process with code; a second caller waits for that. When
// no host will end the room (hostGone: it died, or sent SIGTERM, or the
// orphan's grace ran out; or hostless says so), the room is ended first.
func (s *server) exit(code int, hostGone bool) {
	s.exiting.Lock()
	if hostGone || s.hostless() {
		s.endRoom()
	}
	if s.socketDir != "" {
		os.RemoveAll(s.socketDir)
	}
	os.Exit(code)
}

// ownSocketDir gives go-plugin a directory of the instance's own for its
// socket when the host named none (a Foyer host always names one), so
// that the socket goes on exit rather than staying in the temporary
// directory.
func (s *server) ownSocketDir() {
	if os.Getenv(plugin.EnvUnixSocketDir) != "" {
		return
	}
	dir, err := os.MkdirTemp("", "foyer-instance-")
	if err != nil {
		return // go-plugin's default, the temporary directory itself
	}
	s.socketDir = dir
	os.Setenv(plugin.EnvUnixSocketDir, dir)
}

// hostless reports whether no host will end the room: the host of an
// instance that ends with it is gone, or, for one that outlives it, none
// watches and none took the final status.
func (s *server) hostless() bool {
	if s.orphan == nil {
		return os.Getppid() != s.host
	}
	select {
	case <-s.acked:
		return false
	default:
		return !s.watched()
	}
}

// endRoomTimeout bounds the killing of what is left of the room.
const endRoomTimeout = 5 * time.Second

// endRoom ends what this process left of its room when no host will: in
// the room's cgroups, every other process, and the cgroups themselves
// (cgroup.End); without cgroups, this process's descendants (the keeper
// of a foreign server is their subreaper, so its server's escapees are
// among them).
func (s *server) endRoom() {
	ctx, cancel := context.WithTimeout(context.Background(), endRoomTimeout)
	defer cancel()
	if err := endProcesses(ctx, s.cgroup); err != nil {
		fmt.Fprintf(s.stderr, "foyer instance: ending the room: %v\n", err)
	}
}

// Describe says who the instance is, for a host about to adopt it.
func (s *server) Describe(context.Context, *instancepb.DescribeRequest) (*instancepb.Description, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &instancepb.Description{
		Started:    s.started,
		Assignment: s.assigned,
		Status:     s.rep.current(),
		Host:       s.kept,
		Pid:        int32(os.Getpid()),
		StartTicks: s.self.StartTicks,
		Kept:       s.runner != nil,
	}
	if s.started {
		d.StartedUnixMs = s.since.UnixMilli()
	}
	return d, nil
}

// Keep takes the host's state: the room's seats, which its door admits
// by, and what the next host that describes this instance learns.
func (s *server) Keep(_ context.Context, st *instancepb.HostState) (*instancepb.KeepResponse, error) {
	s.mu.Lock()
	s.kept = st
	s.mu.Unlock()
	s.door.addKeys(st.GetSeatKeys())
	s.rep.keep(st.GetMeta())
	if s.door.seat(st.GetSeats(), time.Now()) {
		if wake := s.wake.Load(); wake != nil {
			(*wake)()
		}
	}
	return &instancepb.KeepResponse{}, nil
}

// Watch streams the reports: the present first, then every change, and a
// heartbeat every HeartbeatInterval, whatever the changes: a change that
// put the next heartbeat off would hold back the account a kept program
// gives again (it rides on heartbeats only), and a room whose players
// come and go faster than the interval would look silent. A new call ends
// the one before it.
func (s *server) Watch(_ *instancepb.WatchRequest, stream grpc.ServerStreamingServer[instancepb.Status]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	me := s.claimWatch(cancel)
	defer s.dropWatch(me)
	if done, err := s.send(ctx, stream, s.rep.snapshot()); done {
		return s.watchEnd(stream, err)
	}
	hb := time.NewTicker(HeartbeatInterval)
	defer hb.Stop()
	for {
		s.bound(time.Now())
		select {
		case <-s.rep.wake:
			for _, st := range s.rep.take() {
				if done, err := s.send(ctx, stream, st); done {
					return s.watchEnd(stream, err)
				}
			}
		case <-hb.C:
			if done, err := s.send(ctx, stream, s.rep.heartbeat()); done {
				return s.watchEnd(stream, err)
			}
		case <-ctx.Done():
			return s.watchEnd(stream, ctx.Err())
		}
	}
}

// claimWatch makes the calling Watch the current one, ending the one
// before it, and returns its number.
func (s *server) claimWatch(cancel context.CancelFunc) uint64 {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.unwatch != nil {
		s.unwatch()
	}
	s.calls++
	s.watcher, s.unwatch = s.calls, cancel
	if s.orphan != nil {
		s.orphan.watched()
	}
	return s.calls
}

// dropWatch ends Watch call me. Once the first watcher, the host that
// started this process, is gone, nobody reads its stdout and stderr: they
// go to the room's log. When no other call took over, the instance is an
// orphan until a host watches again.
func (s *server) dropWatch(me uint64) {
	if s.orphan != nil {
		s.logToFile()
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watcher != me {
		return // preempted: the new call is the host now
	}
	s.watcher, s.unwatch = 0, nil
	if s.orphan != nil {
		s.orphan.unwatched()
	}
}

// watchEnd is what a Watch call returns: a call ended by a newer one says
// so, the others return err.
func (s *server) watchEnd(stream grpc.ServerStreamingServer[instancepb.Status], err error) error {
	if stream.Context().Err() == nil && err != nil && errors.Is(err, context.Canceled) {
		return status.Error(codes.Aborted, "instance: another host watches")
	}
	return err
}

// maxRoomLog is the size past which the room's log starts again: room.log
// becomes room.log.1, replacing the one before, and a new room.log
// begins. A room's log takes at most about twice this of its directory.
const maxRoomLog = 16 << 20

// logCheckEvery is how often the size of the room's log is looked at.
const logCheckEvery = 2 * time.Second

// logToFile sends this process's stdout and stderr to the room's log from
// now on, once; without a directory, to /dev/null.
func (s *server) logToFile() {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.logging || s.logGone {
		return
	}
	if s.dir == "" {
		s.logGone = redirect(os.DevNull)
		return
	}
	s.logging = redirect(filepath.Join(s.dir, instancepb.RoomLog))
}

// bound starts the room's log again once it has grown past maxRoomLog,
// looking at most every logCheckEvery.
func (s *server) bound(now time.Time) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if !s.logging || now.Sub(s.logCheck) < logCheckEvery {
		return
	}
	s.logCheck = now
	if size, ok := stderrSize(); !ok || size < maxRoomLog {
		return
	}
	path := filepath.Join(s.dir, instancepb.RoomLog)
	if os.Rename(path, path+".1") == nil {
		redirect(path)
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
	s.exit(s.rep.exitCode(), false)
}

// watched reports whether a host watches the instance now.
func (s *server) watched() bool {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	return s.watcher != 0
}

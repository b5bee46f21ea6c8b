package host

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/packet"
)

// DefaultStartTimeout is the handshake deadline when LaunchConfig leaves
// StartTimeout zero.
const DefaultStartTimeout = 5 * time.Second

// abandonWait bounds how long a failed Launch waits for the process it
// killed to be reaped. SIGKILL makes that quick, but a loaded machine can
// take seconds to schedule the exit and the reaper; returning earlier would
// let a caller believe the process gone while it still runs.
const abandonWait = 10 * time.Second

// statusBuffer is how many reports wait for a slow reader of Status before
// the stream pushes back on the instance.
const statusBuffer = 64

// statusLinger is how long reports still wait for a reader of Status after
// the process has exited, before the rest is dropped.
const statusLinger = 2 * time.Second

// ErrTryAgain matches the error of a Start whose program ended before it
// was ready (instance.ErrTryAgain on the instance's side): the process is
// still fresh and Start may be called again with another port.
var ErrTryAgain = instance.ErrTryAgain

// LaunchConfig says how to start one instance process.
type LaunchConfig struct {
	Cmd          *exec.Cmd     // Setpgid (and Pdeathsig, without Grace) are set by Launch
	StartTimeout time.Duration // handshake deadline
	Log          zerolog.Logger
	// StartProcess starts cmd; the supervisor runs it on its one locked OS
	// thread so Pdeathsig outlives nothing. Nil means cmd.Start.
	StartProcess func(cmd *exec.Cmd) error
	// Dir is the room's private directory, which must exist: the
	// instance's socket is made there, where Attach finds it again, and
	// the instance logs there once nobody reads its stderr. The caller
	// removes it. Empty: a temporary directory of go-plugin's, removed
	// once the host is connected (nothing is left if the host is killed).
	Dir string
	// Grace, when positive, lets the instance outlive its host: it has no
	// parent-death signal and keeps playing for Grace without a host,
	// waiting to be adopted (see Attach). Zero ties it to the host: its
	// parent-death signal is SIGTERM, on which it ends its room whole
	// (see instance.Serve) and exits.
	Grace time.Duration
	// Cgroup, "TREE/ROOM", names the cgroups StartProcess starts the
	// instance in (package cgroup), so that an instance that ends its
	// room without a host ends what is there too. Empty: none.
	Cgroup string
	// Socket, if not nil, is the room's UDP socket, bound by the caller
	// on the port (and address) Start will name: the instance inherits
	// it (instancepb.EnvRoomSocket) and serves its game on it. The
	// caller closes its own once the process is started.
	Socket *os.File
}

// Phases says where the time of a Launch went, each phase from the end
// of the one before.
type Phases struct {
	// Fork is until StartProcess returned: go-plugin's set-up, then
	// joining the room's cgroups, fork and exec.
	Fork time.Duration
	// Boot is the program's start until its handshake line is read: the
	// runtime and the initialization of a Go instance, and its plugin
	// server's set-up.
	Boot time.Duration
	// Dial is the connection to the instance, until its service is
	// dispensed.
	Dial time.Duration
	// Watch is the opening of the status stream, until its first report.
	Watch time.Duration
	// Ready is Start's, for a process Begin started: until its game was
	// ready on its port.
	Ready time.Duration
}

// Process is a running instance seen from the host: one it launched, or
// one it attached to. Its methods are safe for concurrent use.
type Process struct {
	life   life
	phases Phases // of its Launch; set before Launch returns
	log    zerolog.Logger
	rpc    instancepb.InstanceClient
	status chan Status
	free   func() // releases the connection once the process is gone
	// ready, for a process Begin started, is closed once its start is
	// over, err saying how; nil for one that was ready when its Process
	// was returned.
	ready chan struct{}
	err   error

	mu        sync.Mutex
	reading   sync.WaitGroup     // readers of Watch streams
	unwatch   context.CancelFunc // ends the open Watch stream; nil if none
	streams   uint64             // Watch streams opened so far
	closing   bool               // the process has exited: no new stream
	exit      *Exit              // how the instance said it ends
	startedAt time.Time          // when Start succeeded, as the instance says
	stopOnce  sync.Once
}

// life is the OS process under a Process: a child the host started, or a
// process another host started, known by a pidfd.
type life interface {
	pid() int
	exited() <-chan struct{}
	// exitStatus is what the OS says of the exit: the code (or -1) and
	// the signal; -1 and "" when it cannot tell (not a child).
	exitStatus() (int, string)
	signalGroup(sig unix.Signal)
}

// Launch starts the process and completes the plugin handshake. The
// process runs in its own process group with SIGTERM as its parent-death
// signal (unless cfg.Grace lets it outlive the host), and gets cmd.Env
// (the host's environment if nil) plus the handshake's variables. On
// success the status stream is already open; on failure the process group
// has been killed.
func Launch(ctx context.Context, cfg LaunchConfig) (*Process, error) {
	l, err := newLaunch(cfg)
	if err != nil {
		return nil, err
	}
	if err := l.p.connect(ctx, l.client, l.r); err != nil {
		return nil, l.failed(err)
	}
	go l.p.release()
	cfg.Log.Debug().Int("pid", l.p.PID()).Msg("instance launched")
	return l.p, nil
}

// Begin starts the process as Launch does and hands it a as Start does,
// but returns as soon as the process is forked, with the rest of its
// start under way: cfg.Socket, bound on a's port, keeps what clients send
// there until the game reads it. Err waits until the start is over and
// says how it went; a process whose start failed has been killed.
// Keep, Describe and Stop wait for the start; Kill, Exited, PID and Status
// work at once. ctx bounds the whole start, not only Begin.
func Begin(ctx context.Context, cfg LaunchConfig, a instance.Assignment) (*Process, error) {
	l, err := newLaunch(cfg)
	if err != nil {
		return nil, err
	}
	p, forked := l.p, make(chan struct{})
	l.r.forkDone = forked
	p.ready = make(chan struct{})
	go func() {
		defer close(p.ready)
		if err := p.connect(ctx, l.client, l.r); err != nil {
			p.err = l.failed(err)
			p.closeStatus() // a stream opened as ctx ended delivers until the process is gone
			return
		}
		go p.release()
		t := time.Now()
		if err := p.Start(ctx, a); err != nil {
			p.Kill()
			p.err = err
		}
		p.phases.Ready = time.Since(t)
	}()
	select {
	case <-forked:
	case <-p.ready: // go-plugin failed before it started the process
	}
	if !l.r.started() {
		<-p.ready
		return nil, p.err
	}
	cfg.Log.Debug().Int("pid", p.PID()).Msg("instance forked")
	return p, nil
}

// started is closed once the process's start is over (see Begin); it is
// closed already for a process Launch or Attach returned.
func (p *Process) started() <-chan struct{} {
	if p.ready == nil {
		return closed
	}
	return p.ready
}

// closed is a channel closed from the start.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Err waits until the process's start is over (see Begin) and says how
// it went: nil if its game is ready.
func (p *Process) Err() error {
	<-p.started()
	return p.err
}

// await waits until the process's start is over, or ctx ends, and says
// whether it can be talked to.
func (p *Process) await(ctx context.Context) error {
	select {
	case <-p.started():
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// launch is one process's launch in progress.
type launch struct {
	p      *Process
	client *plugin.Client
	r      *procRunner
	cfg    LaunchConfig
}

// newLaunch prepares the launch cfg describes: the command, its
// environment, and go-plugin's client, which starts it when connected.
func newLaunch(cfg LaunchConfig) (*launch, error) {
	if cfg.Cmd == nil {
		return nil, errors.New("instance: launch: no command")
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	start := cfg.StartProcess
	if start == nil {
		start = (*exec.Cmd).Start
	}
	cmd := cfg.Cmd
	var env []string
	if cfg.Grace > 0 {
		cmd.SysProcAttr = proc.GroupAttr(cmd.SysProcAttr)
		env = append(env, instancepb.EnvReattachGrace+"="+cfg.Grace.String())
	} else {
		cmd.SysProcAttr = proc.Attr(cmd.SysProcAttr)
		cmd.SysProcAttr.Pdeathsig = unix.SIGTERM
	}
	if cfg.Dir != "" {
		env = append(env, instancepb.EnvRoomDir+"="+cfg.Dir)
	}
	if cfg.Cgroup != "" {
		env = append(env, instancepb.EnvRoomCgroup+"="+cfg.Cgroup)
	}
	if cfg.Socket != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, cfg.Socket)
		env = append(env, instancepb.EnvRoomSocket+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	}

	r := &procRunner{cmd: cmd, start: start, log: cfg.Log, done: make(chan struct{}), head: newHead(), begun: time.Now()}
	var sockets *plugin.UnixSocketConfig
	if cfg.Dir != "" {
		// go-plugin makes a directory for the socket before the runner
		// says where it goes: in the room's, the temporary directory has
		// no say (it need not even exist).
		sockets = &plugin.UnixSocketConfig{TempDir: cfg.Dir}
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		UnixSocketConfig: sockets,
		HandshakeConfig:  instancepb.Handshake,
		Plugins:          plugin.PluginSet{instancepb.PluginName: &instancepb.Plugin{}},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// go-plugin builds a stand-in command carrying the handshake's
		// variables after the environment; they go after cmd.Env, so an
		// explicit environment is kept as given rather than overridden
		// by the host's.
		SkipHostEnv: cmd.Env != nil,
		RunnerFunc: func(_ hclog.Logger, standIn *exec.Cmd, socketDir string) (runner.Runner, error) {
			r.socketDir, r.ownDir = socketDir, true
			if cfg.Dir != "" {
				// The socket goes in the room's directory, where a host
				// that restarts finds it; go-plugin's own stays empty.
				r.socketDir, r.ownDir = cfg.Dir, false
				env = append(env, plugin.EnvUnixSocketDir+"="+cfg.Dir)
				_ = os.Remove(socketDir)
			}
			cmd.Env = append(append(slices.Clip(cmd.Env), standIn.Env...), env...)
			return r, nil
		},
		StartTimeout:    timeout,
		Logger:          hclog.NewNullLogger(),
		GRPCDialOptions: dialOptions(),
	})
	p := &Process{life: r, log: cfg.Log, status: make(chan Status, statusBuffer)}
	p.free = func() {
		<-r.done
		client.Kill()
	}
	return &launch{p: p, client: client, r: r, cfg: cfg}, nil
}

// failed ends a launch that failed with err: it kills what it started
// and says why it failed.
func (l *launch) failed(err error) error {
	if !l.p.abandon(l.client, l.r) {
		l.cfg.Log.Error().Int("pid", l.p.PID()).Dur("waited", abandonWait).Msg("instance still running after SIGKILL")
		err = fmt.Errorf("%w (process %d still running %v after SIGKILL)", err, l.p.PID(), abandonWait)
	}
	err = l.r.explain(err)
	l.cfg.Log.Debug().Err(err).Str("cmd", programOf(l.cfg.Cmd)).Msg("instance launch failed")
	return fmt.Errorf("instance: launch %s: %w", programOf(l.cfg.Cmd), err)
}

// programOf is the program cmd runs, as its caller named it: its first
// argument, where it has one (its Path may be a descriptor's, as for a
// room run as its user).
func programOf(cmd *exec.Cmd) string {
	if len(cmd.Args) > 0 {
		return cmd.Args[0]
	}
	return cmd.Path
}

// dialOptions are the host's side of every instance connection. go-plugin
// lets a message be 2 GiB; nothing an instance sends is a fraction of
// this.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(instancepb.MaxMessage)),
		// A fixed window turns off the bandwidth probe, whose pings
		// would wake the host for every heartbeat of every room.
		grpc.WithInitialWindowSize(instancepb.MaxMessage),
		grpc.WithInitialConnWindowSize(instancepb.MaxMessage),
		grpc.WithReadBufferSize(instancepb.ConnBuffer),
		grpc.WithWriteBufferSize(instancepb.ConnBuffer),
	}
}

// connect runs the handshake and opens the status stream, giving up when
// ctx ends.
func (p *Process) connect(ctx context.Context, client *plugin.Client, r *procRunner) error {
	done := make(chan error, 1)
	go func() { done <- p.dial(client, r) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		r.cancel()
		<-done
		return ctx.Err()
	}
}

func (p *Process) dial(client *plugin.Client, r *procRunner) error {
	cp, err := client.Client()
	if err != nil {
		return err
	}
	raw, err := cp.Dispense(instancepb.PluginName)
	if err != nil {
		return err
	}
	dialed := time.Now()
	p.rpc = raw.(instancepb.InstanceClient)
	if err := p.watch(false); err != nil {
		return err
	}
	// The socket was for making the connection, which the host now
	// holds: a directory of go-plugin's goes at once, so that a host that
	// dies without cleaning up (SIGKILL) leaves nothing behind.
	r.dropOwnDir()
	p.phases = Phases{
		Fork: r.forked.Sub(r.begun), Boot: r.handshook.Sub(r.forked),
		Dial: dialed.Sub(r.handshook), Watch: time.Since(dialed),
	}
	return nil
}

// Phases says where the time of the Launch that started the process
// went (of a Begin, once Err has returned); zero for a process attached
// to.
func (p *Process) Phases() Phases { return p.phases }

// Forked is the Fork of Phases, known as soon as Launch or Begin
// returned; zero for a process attached to.
func (p *Process) Forked() time.Duration {
	if r, ok := p.life.(*procRunner); ok {
		return r.forked.Sub(r.begun)
	}
	return 0
}

// abandon kills what a failed launch started and waits, up to
// abandonWait, until the process has been reaped, so that a failed Launch
// leaves nothing running behind it; go-plugin cleans up after it in the
// background. It reports false if the process outlived the wait.
func (p *Process) abandon(client *plugin.Client, r *procRunner) bool {
	r.cancel()
	if !r.started() {
		client.Kill()
		return true
	}
	go p.free()
	t := time.NewTimer(abandonWait)
	defer t.Stop()
	select {
	case <-r.done:
		return true
	case <-t.C:
		return false
	}
}

// release frees the connection once the process is gone, and closes
// Status once no stream delivers any more.
func (p *Process) release() {
	p.free()
	p.closeStatus()
}

// closeStatus closes Status once no stream delivers any more; none opens
// from here.
func (p *Process) closeStatus() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.reading.Wait()
	close(p.status)
}

// watch opens a Watch stream and starts reading it, unless one is open;
// with again, it replaces the open one.
func (p *Process) watch(again bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing || p.unwatch != nil && !again {
		return nil
	}
	if p.unwatch != nil {
		p.unwatch()
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := p.rpc.Watch(ctx, &instancepb.WatchRequest{})
	if err != nil {
		cancel()
		p.unwatch = nil
		return err
	}
	p.streams++
	p.unwatch = cancel
	p.reading.Add(1)
	// The stream opens with the instance's present; waiting for it means
	// every report delivered afterwards follows what was true when watch
	// returned (a launch sees Waiting first, whatever its game does next).
	first := make(chan struct{})
	go p.readStatus(stream, cancel, p.streams, first)
	p.mu.Unlock()
	<-first
	p.mu.Lock()
	return nil
}

// Rewatch opens the status stream again, in place of whatever is left of
// it: another host took the instance over (its Watch ended this one's)
// and let it go again, while the process runs.
func (p *Process) Rewatch() error { return p.watch(true) }

// readStatus turns the Watch stream into Status values. A report that
// makes no sense is skipped; the stream ends after Finished, which it
// acknowledges by cancelling the call.
func (p *Process) readStatus(stream interface {
	Recv() (*instancepb.Status, error)
}, cancel context.CancelFunc, n uint64, first chan<- struct{}) {
	defer p.reading.Done()
	firstOnce := sync.OnceFunc(func() { close(first) })
	defer firstOnce() // a stream that ends before its first report
	defer func() {
		p.mu.Lock()
		if p.streams == n {
			p.unwatch = nil
		}
		p.mu.Unlock()
	}()
	defer cancel()
	for {
		m, err := stream.Recv()
		if err != nil {
			return
		}
		s, ok := statusFrom(m)
		if !ok {
			p.log.Debug().Int("pid", p.PID()).Stringer("status", m).Msg("instance sent an invalid status")
			continue
		}
		if s.Exit != nil {
			p.mu.Lock()
			p.exit = s.Exit
			p.mu.Unlock()
		}
		delivered := p.deliver(s)
		firstOnce()
		if !delivered || s.State == packet.Finished {
			return
		}
	}
}

func statusFrom(m *instancepb.Status) (Status, bool) {
	st := m.GetState()
	if st < instancepb.State_STATE_WAITING || st > instancepb.State_STATE_FINISHED {
		return Status{}, false
	}
	s := Status{State: packet.RoomState(st), Players: int(min(m.GetPlayers(), 1<<16-1)), DoorRefused: m.GetDoorRefused(),
		Seat: m.GetSeat()}
	if m.GetMeta() != nil {
		meta := metaFrom(m.GetMeta())
		s.Meta = &meta
	}
	if a, err := netip.ParseAddrPort(m.GetAddr()); err == nil {
		s.Addr = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	}
	if d := m.GetDetails(); d != nil {
		s.Details = &Details{
			MaxPlayers: int(min(d.GetMaxPlayers(), 1<<16-1)),
			Name:       d.GetName(), Game: d.GetGame(), Map: d.GetMap(), Password: d.GetPassword(),
		}
	}
	if e := m.GetExit(); e != nil {
		s.Exit = &Exit{Code: int(max(e.GetCode(), -1)), Signal: e.GetSignal()}
	}
	switch m.GetEvent() {
	case instancepb.PlayerEvent_PLAYER_EVENT_NONE:
		return s, true
	case instancepb.PlayerEvent_PLAYER_EVENT_CONNECTED:
		s.Event = PlayerConnected
	case instancepb.PlayerEvent_PLAYER_EVENT_DISCONNECTED:
		s.Event = PlayerDisconnected
	default:
		return Status{}, false
	}
	if ip, err := netip.ParseAddr(m.GetIp()); err == nil {
		s.IP = ip.Unmap()
	}
	return s, true
}

// deliver hands s to the reader of Status. It waits for a reader while the
// process lives, and for statusLinger after it exited; it reports false if
// s had to be dropped.
func (p *Process) deliver(s Status) bool {
	select {
	case p.status <- s:
		return true
	case <-p.life.exited():
	}
	t := time.NewTimer(statusLinger)
	defer t.Stop()
	select {
	case p.status <- s:
		return true
	case <-t.C:
		return false
	}
}

// Start hands the instance its assignment; it returns once the game is
// ready. An error matching instance.ErrPortInUse means the game could not
// bind a.Port because another socket holds it, one matching ErrTryAgain
// that the program the instance runs ended before it was ready; in both
// cases the instance is still fresh and Start may be called again with
// another port. Any other error is final: stop or kill the process.
func (p *Process) Start(ctx context.Context, a instance.Assignment) error {
	resp, err := p.rpc.Start(ctx, startRequest(a))
	if err == nil {
		at := time.Now()
		if ms := resp.GetStartedUnixMs(); ms != 0 {
			at = time.UnixMilli(ms)
		}
		p.mu.Lock()
		p.startedAt = at
		p.mu.Unlock()
		return nil
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.AlreadyExists:
		return fmt.Errorf("%w: room %d: %s", instance.ErrPortInUse, a.RoomID, st.Message())
	case codes.Aborted:
		return fmt.Errorf("%w: room %d: %s", ErrTryAgain, a.RoomID, strings.TrimPrefix(st.Message(), ErrTryAgain.Error()+": "))
	}
	return fmt.Errorf("instance: start room %d: %s: %s", a.RoomID, st.Code(), st.Message())
}

func startRequest(a instance.Assignment) *instancepb.StartRequest {
	req := &instancepb.StartRequest{
		RoomId:     a.RoomID,
		Port:       uint32(a.Port),
		MaxPlayers: uint32(max(a.MaxPlayers, 0)),
		Settings:   a.Settings,
	}
	if a.Bind.IsValid() {
		req.Bind = a.Bind.String()
	}
	req.SeatKeys = seatKeys(a.SeatKeys)
	req.ReconnectGraceMs = uint32(min(max(a.ReconnectGrace.Milliseconds(), 0), 1<<32-1))
	return req
}

func seatKeys(keys []instance.SeatKey) []*instancepb.SeatKey {
	out := make([]*instancepb.SeatKey, len(keys))
	for i, k := range keys {
		out[i] = &instancepb.SeatKey{Epoch: k.Epoch, Key: k.Key}
	}
	return out
}

// StartedAt is when the room started, as the instance says (the start
// time a host that adopts it later learns too); zero before Start
// succeeded.
func (p *Process) StartedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startedAt
}

// Status delivers the instance's reports. It is closed once the process
// has exited and its last reports are delivered (or, after a while
// without a reader, dropped). A stream that breaks while the process runs
// (another host took it over) leaves it open: see Rewatch. Read it until
// it is closed.
func (p *Process) Status() <-chan Status { return p.status }

// Keep stores k in the instance, for a host that adopts it later.
func (p *Process) Keep(ctx context.Context, k Kept) error {
	if err := p.await(ctx); err != nil {
		return err
	}
	_, err := p.rpc.Keep(ctx, hostState(k))
	return err
}

// Describe asks the instance who it is.
func (p *Process) Describe(ctx context.Context) (Description, error) {
	if err := p.await(ctx); err != nil {
		return Description{}, err
	}
	m, err := p.rpc.Describe(ctx, &instancepb.DescribeRequest{})
	if err != nil {
		return Description{}, err
	}
	return descriptionFrom(m)
}

// Stop asks the game to stop, then kills the process group after grace.
// It returns at once; wait on Exited. Safe to call more than once (only
// the first call counts) and after the process has exited.
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		if grace <= 0 {
			p.Kill()
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if p.await(ctx) == nil {
				_, _ = p.rpc.Stop(ctx, &instancepb.StopRequest{GraceMs: uint32(min(grace.Milliseconds(), 1<<32-1))})
			}
			select {
			case <-p.life.exited():
			case <-ctx.Done():
				p.Kill()
			}
		}()
	})
}

// Kill sends SIGKILL to the process group at once. Idempotent.
func (p *Process) Kill() { p.life.signalGroup(unix.SIGKILL) }

// Exited is closed once the process has exited (and, if it is the host's
// child, been waited for).
func (p *Process) Exited() <-chan struct{} { return p.life.exited() }

// ExitStatus is the exit code (or -1) and the signal name, if any; valid
// once Exited is closed. What the instance reported of its end comes
// first (a kept server's status, or an adopted instance's, which the host
// cannot wait for); then what the OS says, which for a process the host
// did not start is -1 and "": unknown.
func (p *Process) ExitStatus() (code int, signal string) {
	p.mu.Lock()
	e := p.exit
	p.mu.Unlock()
	if e != nil {
		return e.Code, e.Signal
	}
	return p.life.exitStatus()
}

// PID is the process id.
func (p *Process) PID() int { return p.life.pid() }

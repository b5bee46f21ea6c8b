package host

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
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
	instancepb "github.com/foyerlobby/foyer/instance/proto"
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

// LaunchConfig says how to start one instance process.
type LaunchConfig struct {
	Cmd          *exec.Cmd     // Setpgid and Pdeathsig are set by Launch
	StartTimeout time.Duration // handshake deadline
	Log          zerolog.Logger
	// StartProcess starts cmd; the supervisor runs it on its one locked OS
	// thread so Pdeathsig outlives nothing. Nil means cmd.Start.
	StartProcess func(cmd *exec.Cmd) error
}

// Process is a running instance seen from the host. Its methods are safe
// for concurrent use.
type Process struct {
	run      *procRunner
	client   *plugin.Client
	rpc      instancepb.InstanceClient
	status   chan Status
	stopOnce sync.Once
}

// Launch starts the process and completes the plugin handshake. The
// process runs in its own process group with SIGKILL as its parent-death
// signal, and gets cmd.Env (the host's environment if nil) plus the
// handshake's variables. On success the status stream is already open;
// on failure the process group has been killed.
func Launch(ctx context.Context, cfg LaunchConfig) (*Process, error) {
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
	cmd.SysProcAttr = proc.Attr(cmd.SysProcAttr)

	r := &procRunner{cmd: cmd, start: start, log: cfg.Log, exited: make(chan struct{})}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  instancepb.Handshake,
		Plugins:          plugin.PluginSet{instancepb.PluginName: &instancepb.Plugin{}},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// go-plugin builds a stand-in command carrying the handshake's
		// variables after the environment; they go after cmd.Env, so an
		// explicit environment is kept as given rather than overridden
		// by the host's.
		SkipHostEnv: cmd.Env != nil,
		RunnerFunc: func(_ hclog.Logger, standIn *exec.Cmd, socketDir string) (runner.Runner, error) {
			cmd.Env = append(slices.Clip(cmd.Env), standIn.Env...)
			r.socketDir = socketDir
			return r, nil
		},
		StartTimeout: timeout,
		Logger:       hclog.NewNullLogger(),
		// go-plugin lets a message be 2 GiB; nothing an instance sends is
		// a fraction of this.
		GRPCDialOptions: []grpc.DialOption{
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(instancepb.MaxMessage)),
			// A fixed window turns off the bandwidth probe, whose pings
			// would wake the host for every heartbeat of every room.
			grpc.WithInitialWindowSize(instancepb.MaxMessage),
			grpc.WithInitialConnWindowSize(instancepb.MaxMessage),
			grpc.WithReadBufferSize(instancepb.ConnBuffer),
			grpc.WithWriteBufferSize(instancepb.ConnBuffer),
		},
	})
	p := &Process{run: r, client: client, status: make(chan Status, statusBuffer)}
	if err := p.connect(ctx); err != nil {
		if !p.abandon() {
			cfg.Log.Error().Int("pid", p.PID()).Dur("waited", abandonWait).Msg("instance still running after SIGKILL")
			err = fmt.Errorf("%w (process %d still running %v after SIGKILL)", err, p.PID(), abandonWait)
		}
		cfg.Log.Debug().Err(err).Str("cmd", cmd.Path).Msg("instance launch failed")
		return nil, fmt.Errorf("instance: launch %s: %w", cmd.Path, err)
	}
	go p.release()
	cfg.Log.Debug().Int("pid", p.PID()).Msg("instance launched")
	return p, nil
}

// connect runs the handshake and opens the status stream, giving up when
// ctx ends.
func (p *Process) connect(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- p.dial() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		p.run.cancel()
		<-done
		return ctx.Err()
	}
}

func (p *Process) dial() error {
	cp, err := p.client.Client()
	if err != nil {
		return err
	}
	raw, err := cp.Dispense(instancepb.PluginName)
	if err != nil {
		return err
	}
	p.rpc = raw.(instancepb.InstanceClient)
	watch, cancel := context.WithCancel(context.Background())
	stream, err := p.rpc.Watch(watch, &instancepb.WatchRequest{})
	if err != nil {
		cancel()
		return err
	}
	go p.readStatus(stream, cancel)
	return nil
}

// abandon kills what a failed launch started and waits, up to
// abandonWait, until the process has been reaped, so that a failed Launch
// leaves nothing running behind it; go-plugin cleans up after it in the
// background. It reports false if the process outlived the wait.
func (p *Process) abandon() bool {
	p.run.cancel()
	go p.release()
	if !p.run.started() {
		return true
	}
	t := time.NewTimer(abandonWait)
	defer t.Stop()
	select {
	case <-p.run.exited:
		return true
	case <-t.C:
		return false
	}
}

// release frees go-plugin's side (connection, socket directory) once the
// process is gone.
func (p *Process) release() {
	if !p.run.started() {
		return
	}
	<-p.run.exited
	p.client.Kill()
}

// readStatus turns the Watch stream into Status values. A report that
// makes no sense is skipped; the stream ends after Finished, which it
// acknowledges by cancelling the call.
func (p *Process) readStatus(stream interface {
	Recv() (*instancepb.Status, error)
}, cancel context.CancelFunc) {
	defer close(p.status)
	defer cancel()
	for {
		m, err := stream.Recv()
		if err != nil {
			return
		}
		s, ok := statusFrom(m)
		if !ok {
			p.run.log.Debug().Int("pid", p.PID()).Stringer("status", m).Msg("instance sent an invalid status")
			continue
		}
		if !p.deliver(s) || s.State == packet.Finished {
			return
		}
	}
}

func statusFrom(m *instancepb.Status) (Status, bool) {
	st := m.GetState()
	if st < instancepb.State_STATE_WAITING || st > instancepb.State_STATE_FINISHED {
		return Status{}, false
	}
	s := Status{State: packet.RoomState(st), Players: int(m.GetPlayers())}
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
	case <-p.run.exited:
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
// ready. An error matching instance.ErrPortInUse means the game could not bind
// a.Port because another socket holds it; the instance is then still
// fresh and Start may be called again with another port. Any other error
// is final: stop or kill the process.
func (p *Process) Start(ctx context.Context, a instance.Assignment) error {
	req := &instancepb.StartRequest{
		RoomId:     a.RoomID,
		Port:       uint32(a.Port),
		MaxPlayers: uint32(max(a.MaxPlayers, 0)),
		Settings:   a.Settings,
	}
	if a.Bind.IsValid() {
		req.Bind = a.Bind.String()
	}
	_, err := p.rpc.Start(ctx, req)
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	if st.Code() == codes.AlreadyExists {
		return fmt.Errorf("%w: room %d: %s", instance.ErrPortInUse, a.RoomID, st.Message())
	}
	return fmt.Errorf("instance: start room %d: %s: %s", a.RoomID, st.Code(), st.Message())
}

// Status delivers the instance's reports; it is closed when the stream
// ends: after Finished, or when the process exits. Read it until it is
// closed: the stream waits for the reader (a while at most once the
// process has exited).
func (p *Process) Status() <-chan Status { return p.status }

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
			_, _ = p.rpc.Stop(ctx, &instancepb.StopRequest{GraceMs: uint32(min(grace.Milliseconds(), 1<<32-1))})
			select {
			case <-p.run.exited:
			case <-ctx.Done():
				p.Kill()
			}
		}()
	})
}

// Kill sends SIGKILL to the process group at once. Idempotent.
func (p *Process) Kill() { p.run.signalGroup(unix.SIGKILL) }

// Exited is closed once the process has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.run.exited }

// ExitStatus is the exit code (or -1) and the signal name, if any; valid
// once Exited is closed.
func (p *Process) ExitStatus() (code int, signal string) { return p.run.exitStatus() }

// PID is the process id.
func (p *Process) PID() int {
	p.run.mu.Lock()
	defer p.run.mu.Unlock()
	return p.run.pid
}

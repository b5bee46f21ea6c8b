// Package keeper runs a game server that is not built on Foyer's Go SDK
// as a Foyer room. The keeper is the room's instance (it speaks the
// instance protocol to the supervisor, see package instance) and the
// server is its child: it starts the server on the room's port in a
// private, fresh HOME and working directory, learns its status by asking
// for its Teeworlds/DDNet server info every second (probe "teeworlds"),
// by serving it a local HTTP endpoint the server reports to, in any
// language (probe "endpoint", see EnvEndpoint), or not at all (probe
// "none"), and reports how it ended.
//
// So every room is one kind of process to the supervisor: a host can
// adopt a foreign server's room after a restart as it adopts any other,
// since it adopts the keeper, which it started, and never the server.
// The server dies with its keeper (a parent-death signal), and an
// orphaned keeper ends the server when its reattach grace runs out.
//
// The keeper is the child subreaper of what its server starts: a process
// the server leaves behind, in a session of its own or not, comes back to
// the keeper when its parent exits, and is reaped here. When the server
// exits, whatever it left is killed: the room ends with its server, with
// or without cgroups.
package keeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/packet/teeinfo"
)

// Probes a keeper knows.
const (
	ProbeTeeworlds = "teeworlds"
	ProbeEndpoint  = "endpoint"
	ProbeNone      = "none"
)

// Timings of a kept server.
const (
	// probeInterval is how often a running server is asked for its info.
	probeInterval = time.Second
	// probeReadyPoll is how often a server still starting is asked, so a
	// create does not wait a whole probeInterval for it.
	probeReadyPoll = 50 * time.Millisecond
	// noProbeSettle is how long a server with probe "none" must keep
	// running after its start to count as ready: long enough for one that
	// cannot bind its port or read its configuration to have exited.
	noProbeSettle = 200 * time.Millisecond
)

// Config says which server a keeper runs and how it learns its status.
type Config struct {
	// Command is the server's argument vector; every argument has
	// {port}, {room_id}, {max_players} and {bind} (the room's bind
	// address, empty for every address) replaced.
	Command []string
	// Probe is ProbeTeeworlds, ProbeEndpoint or ProbeNone.
	Probe string
	// Data, an absolute path when set, is the server's HOME, kept from
	// one room to the next (its working directory stays the room's own,
	// fresh); empty, HOME is that fresh directory too.
	Data string
}

// Args is the command line of the instance subcommand that keeps a server
// (after the program and subcommand): Parse reads it back.
func Args(c Config) []string {
	args := []string{"--probe", c.Probe}
	if c.Data != "" {
		args = append(args, "--data", c.Data)
	}
	return append(append(args, "--"), c.Command...)
}

// Parse reads the arguments Args wrote.
func Parse(args []string) (Config, error) {
	bad := errors.New(`keeper: want "--probe PROBE [--data DIR] -- COMMAND [ARGS...]"`)
	if len(args) < 4 || args[0] != "--probe" {
		return Config{}, bad
	}
	c := Config{Probe: args[1]}
	rest := args[2:]
	if len(rest) >= 2 && rest[0] == "--data" {
		c.Data, rest = rest[1], rest[2:]
	}
	if len(rest) < 2 || rest[0] != "--" {
		return Config{}, bad
	}
	c.Command = rest[1:]
	return c, c.check()
}

func (c Config) check() error {
	switch {
	case c.Probe != ProbeTeeworlds && c.Probe != ProbeEndpoint && c.Probe != ProbeNone:
		return fmt.Errorf("keeper: probe %q is not %q, %q or %q", c.Probe, ProbeTeeworlds, ProbeEndpoint, ProbeNone)
	case len(c.Command) == 0 || c.Command[0] == "":
		return errors.New("keeper: no command")
	case c.Data != "" && !filepath.IsAbs(c.Data):
		return fmt.Errorf("keeper: data directory %q is not an absolute path", c.Data)
	}
	return nil
}

// Keeper is an instance.Game that runs a foreign server (it is an
// instance.Runner). Run it with instance.Serve.
type Keeper struct {
	cfg Config
	log zerolog.Logger
	out io.Writer // where the server's output goes, line by line

	mu  sync.Mutex
	srv *server // the running server; nil before Run succeeds

	reaping sync.Once
	// children holds the server's pid from its start until its Wait
	// returns, and the reaper of orphans (reapOrphans) while it runs: an
	// orphan reaped here must never be the server, which its Wait reaps.
	children sync.Mutex
	server   int // the pid of the server being waited for; 0: none
}

var (
	_ instance.Game   = (*Keeper)(nil)
	_ instance.Runner = (*Keeper)(nil)
)

// New returns a keeper of cfg's server that logs to log, and writes each
// line the server prints to out as it was printed: the room's log, once
// the instance SDK has put it in place of stderr (see instance.Serve).
func New(cfg Config, log zerolog.Logger, out io.Writer) (*Keeper, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Keeper{cfg: cfg, log: log, out: out}, nil
}

// Start is never called: Serve calls Run for a Runner.
func (k *Keeper) Start(context.Context, instance.Assignment, net.PacketConn, instance.Reporter) error {
	return errors.New("keeper: a keeper is run, not started")
}

// Run starts the server for a and returns once it is ready: its first
// complete info reply (probe "teeworlds"), its POST /v1/ready (probe
// "endpoint"), or still running a moment after its start (probe "none"). A server that exits first fails with
// instance.ErrTryAgain and the last lines it printed; the keeper can then
// run it again, on another port.
func (k *Keeper) Run(ctx context.Context, a instance.Assignment, r instance.Reporter) error {
	kr, ok := r.(instance.KeptReporter)
	if !ok {
		return errors.New("keeper: the reporter cannot report a kept server")
	}
	s, err := k.start(a)
	if err != nil {
		return err
	}
	if s.ep != nil {
		s.ep.serve(kr)
	}
	first, err := s.ready(ctx, k.cfg.Probe)
	if err != nil {
		s.kill()
		<-s.exited
		s.close()
		return err
	}
	if first != nil {
		kr.SetDetails(details(*first))
	}
	k.mu.Lock()
	k.srv = s
	k.mu.Unlock()
	k.log.Info().Int("server_pid", s.pid).Uint16("port", a.Port).Str("probe", k.cfg.Probe).Msg("server ready")
	go s.follow(kr)
	return nil
}

// Stop sends the server SIGTERM and, if it is still running when ctx
// ends, SIGKILL; it returns once the server has exited.
func (k *Keeper) Stop(ctx context.Context) error {
	k.mu.Lock()
	s := k.srv
	k.mu.Unlock()
	if s == nil {
		return nil
	}
	s.signal(unix.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-ctx.Done():
	}
	s.kill()
	<-s.exited
	return nil
}

// server is one run of the kept server.
type server struct {
	cmd   *exec.Cmd
	pid   int
	argv0 string
	log   zerolog.Logger
	out   *output
	probe *prober   // probe "teeworlds" only
	ep    *endpoint // probe "endpoint" only
	// tmpHome is the private directory made for this run when the host
	// gave the room none, removed once the server and what it left are
	// gone; "" otherwise.
	tmpHome string

	mu     sync.Mutex
	reaped bool // after this, the pid may belong to someone else
	code   int
	sig    string
	exited chan struct{}
}

// start starts the server on a's port, in a fresh private directory.
func (k *Keeper) start(a instance.Assignment) (_ *server, err error) {
	home, temp, err := freshHome()
	if err != nil {
		return nil, fmt.Errorf("keeper: private HOME: %w", err)
	}
	if temp {
		defer func() {
			if err != nil {
				os.RemoveAll(home)
			}
		}()
	}
	var bind string
	if a.Bind.IsValid() && !a.Bind.IsUnspecified() {
		bind = a.Bind.String()
	}
	argv := expandArgs(k.cfg.Command, a.RoomID, a.Port, a.MaxPlayers, bind)
	cmd := exec.Command(argv[0], argv[1:]...)
	// The private directory is its HOME and its working directory: a
	// server writing its files (DDNet writes a log and a database) must
	// neither litter the lobby's directory nor share them with other
	// rooms. With a data directory, that is HOME instead: what the
	// server keeps there (DDNet's ranks and records) outlives the room,
	// for the next rooms of the same command. HOME comes last so it wins
	// over the keeper's own; a command that wants another HOME or
	// directory wraps itself in env(1) or sh -c "cd ...".
	cmd.Env = append(serverEnv(os.Environ()), "HOME="+cmp.Or(k.cfg.Data, home))
	cmd.Dir = home
	var ep *endpoint
	if k.cfg.Probe == ProbeEndpoint {
		// In the room's directory, which only the room's user reaches,
		// beside the instance's own socket; in HOME without one.
		dir := os.Getenv(instancepb.EnvRoomDir)
		if dir == "" {
			dir = home
		}
		if ep, err = newEndpoint(dir, a); err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, EnvEndpoint+"="+ep.path)
	}
	// In the keeper's process group, which the supervisor ends as a
	// whole, and dead with the keeper whatever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	outR, outW, err := os.Pipe()
	if err != nil {
		if ep != nil {
			ep.close()
		}
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	var p *prober
	if k.cfg.Probe == ProbeTeeworlds {
		if p, err = newProber(a.Port, probeAddrs(a.Bind, k.cfg.Command)); err != nil {
			outR.Close()
			outW.Close()
			return nil, err
		}
	}
	s := &server{argv0: argv[0], out: newOutput(), probe: p, ep: ep, exited: make(chan struct{})}
	if temp {
		s.tmpHome = home
	}
	k.reaping.Do(k.reapOrphans)
	k.children.Lock()
	err = proc.StartOnForkThread(cmd)
	if err == nil {
		k.server = cmd.Process.Pid
	}
	k.children.Unlock()
	outW.Close()
	if err != nil {
		outR.Close()
		s.close()
		return nil, fmt.Errorf("keeper: %v", err) // the command was checked when the lobby started
	}
	s.cmd, s.pid = cmd, cmd.Process.Pid
	s.log = k.log.With().Int("server_pid", s.pid).Logger()
	go s.forward(outR, k.out)
	go k.wait(s)
	return s, nil
}

// serverEnv is the keeper's environment env as its server gets it: the
// room's (which the supervisor built: PATH, HOME, the variables it was
// told to pass), without what speaks to the supervisor (the plugin
// handshake, the reattach grace, the room's cgroups), which the server
// has no use for. The room's directory stays: it is how the room's
// processes are found where there are no cgroups.
func serverEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PLUGIN_"), name == instancepb.Handshake.MagicCookieKey,
			name == instancepb.EnvReattachGrace, name == instancepb.EnvRoomCgroup:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// leftoverTimeout bounds the killing of what a server left behind.
const leftoverTimeout = 5 * time.Second

// reapOrphans makes the keeper the subreaper of the server's descendants
// and reaps, from then on, each orphan that comes back to it and exits.
func (k *Keeper) reapOrphans() {
	if err := cgroup.SetSubreaper(); err != nil {
		k.log.Warn().Err(err).Msg("the server's orphans go to init")
		return
	}
	exits := make(chan os.Signal, 1)
	signal.Notify(exits, syscall.SIGCHLD)
	go func() {
		for range exits {
			k.reapAdopted()
		}
	}()
}

// reapAdopted reaps the exited orphans, never the server.
func (k *Keeper) reapAdopted() {
	k.children.Lock()
	defer k.children.Unlock()
	cgroup.ReapAdopted(func(pid int) bool { return pid == k.server })
}

// wait reaps the server, kills whatever it left behind (its orphans came
// back here) and records how it ended.
func (k *Keeper) wait(s *server) {
	_ = s.cmd.Wait()
	k.children.Lock()
	k.server = 0
	k.children.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), leftoverTimeout)
	err := cgroup.KillDescendants(ctx, os.Getpid())
	cancel()
	if err != nil {
		s.log.Warn().Err(err).Msg("what the server left behind is not all dead")
	}
	k.reapAdopted()
	if s.tmpHome != "" {
		os.RemoveAll(s.tmpHome)
	}
	s.exit()
}

// freshHome empties the room's home directory, or makes a temporary one
// (temp), which the keeper removes once its server is gone, when the host
// gave the room no directory.
func freshHome() (home string, temp bool, err error) {
	dir := os.Getenv(instancepb.EnvRoomDir)
	if dir == "" {
		home, err = os.MkdirTemp("", "foyer-room-")
		return home, true, err
	}
	home = filepath.Join(dir, "home")
	if err := os.RemoveAll(home); err != nil {
		return "", false, err
	}
	return home, false, os.Mkdir(home, 0o700)
}

// exit records how the reaped server ended.
func (s *server) exit() {
	code, sig := -1, ""
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			sig = unix.SignalName(ws.Signal())
		} else {
			code = ws.ExitStatus()
		}
	}
	s.mu.Lock()
	s.reaped, s.code, s.sig = true, code, sig
	s.mu.Unlock()
	close(s.exited)
}

// signal sends sig to the server while it is unreaped.
func (s *server) signal(sig unix.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.reaped {
		_ = unix.Kill(s.pid, sig)
	}
}

func (s *server) kill() { s.signal(unix.SIGKILL) }

// close releases the probe sockets and the endpoint.
func (s *server) close() {
	if s.probe != nil {
		s.probe.close()
	}
	if s.ep != nil {
		s.ep.close()
	}
}

// status is how the server ended; valid once exited is closed.
func (s *server) status() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, s.sig
}

// ready waits until the server is ready, as Run says, and returns its
// first info when it is probed.
func (s *server) ready(ctx context.Context, probe string) (*teeinfo.Info, error) {
	var poll, settled <-chan time.Time
	var info <-chan teeinfo.Info
	var said <-chan struct{}
	switch probe {
	case ProbeTeeworlds:
		t := time.NewTicker(probeReadyPoll)
		defer t.Stop()
		poll, info = t.C, s.probe.info
		s.probe.round()
	case ProbeEndpoint:
		said = s.ep.ready
	default:
		t := time.NewTimer(noProbeSettle)
		defer t.Stop()
		settled = t.C
	}
	for {
		select {
		case in := <-info:
			return &in, nil
		case <-settled:
			return nil, nil
		case <-said:
			return nil, nil
		case <-poll:
			s.probe.poke()
		case <-s.exited:
			return nil, s.exitError()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// exitError says that the server exited before it was ready, how, and
// what it printed last.
func (s *server) exitError() error {
	code, sig := s.status()
	how := "with status " + strconv.Itoa(code)
	if sig != "" {
		how = "killed by " + sig
	}
	// The output is read to its end, or for a moment: whatever escaped
	// with the pipe may hold it open.
	select {
	case <-s.out.done:
	case <-time.After(100 * time.Millisecond):
	}
	return fmt.Errorf("%w: %s exited %s before it was ready%s", instance.ErrTryAgain, s.argv0, how, s.out.last())
}

// follow asks the server for its info every probeInterval and reports
// each answer, until it exits; then it reports how.
func (s *server) follow(r instance.KeptReporter) {
	defer s.close()
	var tick <-chan time.Time
	var info <-chan teeinfo.Info
	if s.probe != nil {
		t := time.NewTicker(probeInterval)
		defer t.Stop()
		tick, info = t.C, s.probe.info
	}
	for {
		select {
		case <-tick:
			s.probe.round()
		case in := <-info:
			r.SetDetails(details(in))
		case <-s.exited:
			code, sig := s.status()
			s.log.Info().Int("exit_code", code).Str("signal", sig).Msg("server exited")
			r.Exited(code, sig)
			return
		}
	}
}

// details is what a server's info says of it. The counts are whatever the
// server wrote; the reporter bounds them. Players and the maximum count
// clients, spectators included: a spectator takes a slot as a player does.
func details(in teeinfo.Info) instance.Details {
	return instance.Details{
		Players: in.NumClients, MaxPlayers: in.MaxClients,
		Name: in.Name, Game: in.GameType, Map: in.Map,
		Password: in.Flags&teeinfo.FlagPassword != 0,
	}
}

// expandArgs substitutes a room's assignment into every argument of the
// command: {port}, {room_id}, {max_players} and {bind} (the bind address;
// empty when it is every address).
func expandArgs(argv []string, id uint32, port uint16, maxPlayers int, bind string) []string {
	r := strings.NewReplacer(
		"{port}", strconv.Itoa(int(port)),
		"{room_id}", strconv.FormatUint(uint64(id), 10),
		"{max_players}", strconv.Itoa(maxPlayers),
		"{bind}", bind,
	)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}

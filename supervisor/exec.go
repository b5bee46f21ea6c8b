package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
)

// Bounds on what an exec'd server can make the supervisor read.
const (
	// maxOutputLine is the longest output line logged whole; the rest of
	// a longer line is dropped.
	maxOutputLine = 1024
	// outputLinger is how long after the process exits its output is
	// still read: something that escaped the process group may hold the
	// pipe open forever.
	outputLinger = time.Second
)

// process is a room's OS process as the supervisor drives it: a go-plugin
// instance (*host.Process) or a foreign server run by the exec driver
// (*execProcess).
type process interface {
	// Stop ends the process gracefully, then kills its group after grace;
	// it returns at once and only the first call counts.
	Stop(grace time.Duration)
	// Kill sends SIGKILL to the process group. Idempotent.
	Kill()
	// Exited is closed once the process has exited and been reaped.
	Exited() <-chan struct{}
	// ExitStatus is the exit code (or -1) and the signal name, if any;
	// valid once Exited is closed.
	ExitStatus() (code int, signal string)
	PID() int
}

// execProcess is a game server that knows nothing of Foyer. It runs in its
// own process group with SIGKILL as its parent-death signal, in a private
// directory that is also its HOME (servers like DDNet write there),
// removed once it is gone; its output goes to the log at debug level, one
// line per event.
type execProcess struct {
	cmd      *exec.Cmd
	home     string
	log      zerolog.Logger
	stopOnce sync.Once

	mu     sync.Mutex
	pid    int
	reaped bool // after this, the pid may belong to someone else
	code   int
	signal string

	exited chan struct{}
}

// startExec starts argv on the supervisor's fork thread.
func startExec(argv []string, log zerolog.Logger) (*execProcess, error) {
	home, err := os.MkdirTemp("", "foyer-room-")
	if err != nil {
		return nil, fmt.Errorf("private HOME: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// The private directory is its HOME and its working directory: a
	// server writing its files (DDNet writes a log and a database) must
	// neither litter the lobby's directory nor share them with other
	// rooms. HOME comes last so it wins over the supervisor's own; a
	// command that wants another HOME or directory wraps itself in
	// env(1) or sh -c "cd ...".
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir = home
	cmd.SysProcAttr = proc.Attr(nil)
	out, w, err := os.Pipe()
	if err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = startOnForkThread(cmd)
	w.Close()
	if err != nil {
		out.Close()
		os.RemoveAll(home)
		return nil, err
	}
	p := &execProcess{cmd: cmd, home: home, pid: cmd.Process.Pid, exited: make(chan struct{})}
	p.log = log.With().Int("pid", p.pid).Logger()
	go p.forwardOutput(out)
	go p.wait(out)
	return p, nil
}

// wait reaps the process (see proc.Reap) and then removes its directory.
func (p *execProcess) wait(out *os.File) {
	code, sig := proc.Reap(p.cmd)
	p.mu.Lock()
	p.reaped, p.code, p.signal = true, code, sig
	p.mu.Unlock()
	os.RemoveAll(p.home)
	close(p.exited)
	time.AfterFunc(outputLinger, func() { out.Close() })
}

// forwardOutput logs each line of stdout and stderr at debug level, cut
// at maxOutputLine.
func (p *execProcess) forwardOutput(out *os.File) {
	proc.Lines(out, maxOutputLine, func(line []byte) {
		if e := p.log.Debug(); e.Enabled() {
			e.Str("line", string(line)).Msg("room output")
		}
	})
}

// signalGroup sends sig to the process group while the leader is unreaped.
func (p *execProcess) signalGroup(sig unix.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		proc.SignalGroup(p.pid, sig)
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *execProcess) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		if grace <= 0 {
			p.Kill()
			return
		}
		p.signalGroup(unix.SIGTERM)
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-p.exited:
			case <-t.C:
				p.Kill()
			}
		}()
	})
}

// Kill sends SIGKILL to the process group. Idempotent.
func (p *execProcess) Kill() { p.signalGroup(unix.SIGKILL) }

// Exited is closed once the process has exited and been reaped.
func (p *execProcess) Exited() <-chan struct{} { return p.exited }

// ExitStatus is the exit code (or -1) and the signal name, if any.
func (p *execProcess) ExitStatus() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code, p.signal
}

// PID is the process id.
func (p *execProcess) PID() int { return p.pid }

// expandArgs substitutes a room's assignment into every argument of the
// command: {port}, {room_id}, {max_players} and {bind} (the configured
// bind address; empty when it is every address).
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

package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/proc"
)

// Bounds on what an instance can make the host read.
const (
	// maxLogLine is the longest stderr line forwarded whole; the rest of a
	// longer line is dropped.
	maxLogLine = 4096
	// pipeLinger is how long after the process exits the host keeps
	// reading its stdout and stderr. Something that escaped the process
	// group may hold them open forever; go-plugin would wait for it.
	pipeLinger = time.Second
)

// procRunner is the go-plugin runner for one instance process. It owns the
// process: it starts it (on the caller's thread, for the parent-death
// signal), reaps it, kills its group, and decides what go-plugin may read.
// go-plugin reads the handshake from stdout and gets an empty stderr,
// because it parses stderr as hclog JSON and a hostile line can panic it;
// the real stderr is forwarded to the host's log as opaque lines.
type procRunner struct {
	cmd       *exec.Cmd
	start     func(*exec.Cmd) error
	log       zerolog.Logger
	socketDir string // where the instance's socket is made
	ownDir    bool   // socketDir is go-plugin's: removed here once connected, or the process is gone
	head      *head  // the first lines it printed

	stdout, stderr *os.File // read ends
	stdoutHead     io.Reader

	// When the launch began, the process was started, and its handshake
	// line read (see Phases); written before go-plugin reads them.
	begun, forked, handshook time.Time
	// forkDone, if not nil, is closed once Start has tried to start the
	// process (see Begin).
	forkDone chan struct{}

	mu        sync.Mutex
	id        int  // the pid; 0 until started
	cancelled bool // killed at once if it starts after all
	reaped    bool // after this, the pid may belong to someone else
	code      int
	signal    string

	done chan struct{} // closed once the process is reaped
}

var _ life = (*procRunner)(nil)

func (r *procRunner) Start(context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	err = r.start(r.cmd)
	r.forked = time.Now()
	if r.forkDone != nil {
		defer close(r.forkDone)
	}
	outW.Close()
	errW.Close()
	if err != nil {
		if r.cmd.Process != nil {
			// Started, and then failed (the thread that forked it could
			// not leave the room's cgroups): it goes.
			proc.KillGroup(r.cmd.Process.Pid)
			_ = r.cmd.Wait()
		}
		outR.Close()
		errR.Close()
		r.dropOwnDir()
		return err
	}
	r.stdout, r.stderr = outR, errR
	r.stdoutHead = r.head.reader(outR)
	r.mu.Lock()
	r.id = r.cmd.Process.Pid
	if r.cancelled {
		proc.KillGroup(r.id)
	}
	r.mu.Unlock()
	go r.forwardStderr()
	go r.wait()
	return nil
}

// dropOwnDir removes the socket's directory if it is go-plugin's, made
// for this instance alone. A directory the caller gave stays: a host
// that restarts finds the socket there.
func (r *procRunner) dropOwnDir() {
	if r.ownDir {
		os.RemoveAll(r.socketDir)
	}
}

// started reports whether the process was started.
func (r *procRunner) started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id != 0
}

// wait reaps the process (see proc.Reap) and then releases what the
// instance held.
func (r *procRunner) wait() {
	code, sig := proc.Reap(r.cmd)
	r.mu.Lock()
	r.reaped, r.code, r.signal = true, code, sig
	r.mu.Unlock()
	// The socket is dead with its server; go-plugin would remove its
	// directory too, but only once every pipe is drained.
	r.dropOwnDir()
	close(r.done)
	time.AfterFunc(pipeLinger, func() {
		r.stdout.Close()
		r.stderr.Close()
	})
}

// cancel kills the process group, now or as soon as it exists.
func (r *procRunner) cancel() {
	r.mu.Lock()
	r.cancelled = true
	r.mu.Unlock()
	r.signalGroup(unix.SIGKILL)
}

// signalGroup sends sig to the process group while the leader is unreaped.
func (r *procRunner) signalGroup(sig unix.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id != 0 && !r.reaped {
		proc.SignalGroup(r.id, sig)
	}
}

func (r *procRunner) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

func (r *procRunner) exited() <-chan struct{} { return r.done }

func (r *procRunner) exitStatus() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code, r.signal
}

// forwardStderr logs each stderr line at debug level: as embedded JSON if
// it is valid JSON, as a string otherwise, cut at maxLogLine.
func (r *procRunner) forwardStderr() {
	proc.Lines(r.stderr, maxLogLine, r.logLine)
}

func (r *procRunner) logLine(line []byte) {
	r.head.add(line)
	e := r.log.Debug()
	if !e.Enabled() {
		return
	}
	if json.Valid(line) {
		e.RawJSON("line", line)
	} else {
		e.Str("line", string(line))
	}
	e.Int("pid", r.id).Msg("instance stderr")
}

// The rest of runner.Runner.

func (r *procRunner) Diagnose(context.Context) string { return "" }
func (r *procRunner) Stdout() io.ReadCloser           { return readCloser{r.stdoutHead, r.stdout} }
func (r *procRunner) Stderr() io.ReadCloser           { return io.NopCloser(strings.NewReader("")) }
func (r *procRunner) Name() string                    { return programOf(r.cmd) }

func (r *procRunner) Wait(ctx context.Context) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if code, sig := r.exitStatus(); code != 0 {
		return &exitError{code: code, signal: sig}
	}
	return nil
}

func (r *procRunner) Kill(context.Context) error {
	r.signalGroup(unix.SIGKILL)
	return nil
}

func (r *procRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id == 0 {
		return ""
	}
	return strconv.Itoa(r.id)
}

// PluginToHost accepts only a unix socket in the directory go-plugin made
// for this instance: the host dials what the instance names, and an
// instance must not point it anywhere else.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	r.handshook = time.Now()
	if network != "unix" || filepath.Dir(addr) != filepath.Clean(r.socketDir) {
		return "", "", fmt.Errorf("instance: handshake names %s %q, not a socket in %s", network, addr, r.socketDir)
	}
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// exitError says how an instance ended when that was not exit status 0.
type exitError struct {
	code   int
	signal string
}

func (e *exitError) Error() string {
	if e.signal != "" {
		return "instance: killed by " + e.signal
	}
	return "instance: exit status " + strconv.Itoa(e.code)
}

//go:build linux

package proc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Attr sets a, or a new value when a is nil, so that the child leads a new
// process group, which KillGroup ends as a whole, and is killed with
// SIGKILL when the thread that forked it dies. Its other fields are kept.
// It returns the value set, for cmd.SysProcAttr.
func Attr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	a.Setpgid, a.Pgid = true, 0
	a.Pdeathsig = syscall.SIGKILL
	return a
}

// GroupAttr is Attr without the parent-death signal: the child leads a new
// process group and outlives its parent, for rooms that wait for a new
// lobby when theirs dies.
func GroupAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a = Attr(a)
	a.Pdeathsig = 0
	return a
}

// SignalGroup sends sig to the process group that pid leads. Call it only
// while the leader is unreaped: after that the id may be someone else's.
func SignalGroup(pid int, sig unix.Signal) {
	_ = unix.Kill(-pid, sig)
}

// KillGroup sends SIGKILL to the process group that pid leads, under the
// same condition as SignalGroup.
func KillGroup(pid int) { SignalGroup(pid, unix.SIGKILL) }

// Reap waits for the started cmd, a group leader (see Attr), to exit, kills
// whatever is left in its group, and reaps it. It first waits without
// reaping, so that the leader, a zombie until reaped, keeps its pid and
// group id from being reused while its group is killed. The code is the
// exit status, or -1 when a signal ended the process; the signal is its
// name ("SIGKILL"), or "" when it exited. cmd's Stdout and Stderr should be
// files (or nil): a pipe that os/exec copies from would make Reap wait for
// everyone holding its write end.
func Reap(cmd *exec.Cmd) (code int, signal string) {
	pid := cmd.Process.Pid
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	KillGroup(pid)
	_ = cmd.Wait()
	code = -1
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			signal = unix.SignalName(ws.Signal())
		} else {
			code = ws.ExitStatus()
		}
	}
	return code, signal
}

// Lines calls line for each line read from r, without its line ending,
// until r ends or fails. A line longer than max bytes is passed cut at
// max and the rest of it is dropped, so that a child cannot make its
// parent buffer without bound. line must not keep the slice it is given:
// the next read reuses it.
func Lines(r io.Reader, max int, line func([]byte)) {
	br := bufio.NewReaderSize(r, max)
	skip := false // inside the dropped tail of a long line
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 && !skip {
			line(bytes.TrimRight(b, "\r\n"))
		}
		skip = errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !skip {
			return
		}
	}
}

package foyertest

import (
	"bytes"
	"os/exec"
	"syscall"

	"github.com/foyerlobby/foyer/internal/proc"
)

// processesOf returns the live (not zombie) processes whose argv[0] is
// argv0.
func processesOf(argv0 string) []int {
	want := append([]byte(argv0), 0)
	pids, _ := proc.Matching(func(_ int, cmdline []byte) bool { return bytes.HasPrefix(cmdline, want) })
	return pids
}

func killAll(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processExists reports whether pid is a process, of anyone.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// startTied starts cmd so that the kernel stops it when the test process
// dies, and an interrupted test run leaves no lobby behind. The signal
// follows the thread that forks, and Go ends a thread whose goroutine
// locked it and returned (a test that moves a thread into a network
// namespace does): cmd is forked from the process's one fork thread,
// which lives as long as the process.
func startTied(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	return proc.StartOnForkThread(cmd)
}

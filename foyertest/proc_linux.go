package foyertest

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/foyerlobby/foyer/internal/proc"
)

// processesOf returns the live (not zombie) processes whose argv[0] is
// argv0.
func processesOf(argv0 string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := append([]byte(argv0), 0)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.HasPrefix(cmdline, want) {
			continue
		}
		if !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // gone
	}
	// The state letter follows the parenthesised command name, which may
	// hold anything.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
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

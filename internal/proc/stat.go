package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// Stat is what /proc/<pid>/stat says of a process that matters here.
type Stat struct {
	State byte // 'R', 'S', 'Z' (exited, not yet reaped), ...
	PPID  int  // the parent
	PGID  int  // the process group
	// StartTicks is when the process started, in clock ticks since boot:
	// with the pid it names one process for good, since a reused pid
	// starts later.
	StartTicks uint64
	// UTime and STime are the CPU time it spent in user and kernel
	// mode, in clock ticks (USER_HZ, 100 a second on Linux).
	UTime, STime uint64
}

// ErrStat is returned for a stat line that cannot be read.
var ErrStat = errors.New("proc: malformed /proc stat line")

// ReadStat reads the stat of process pid. A process that is gone (and
// reaped) is an error satisfying errors.Is(err, os.ErrNotExist).
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parseStat(b)
}

// parseStat parses a stat line. The command name, in parentheses, may
// hold anything, spaces and parentheses included, so the fields are
// counted from the last closing parenthesis.
func parseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, ErrStat
	}
	// After the name: state(3) ppid(4) pgrp(5) session tty_nr tpgid flags
	// minflt cminflt majflt cmajflt utime(14) stime(15) cutime cstime priority nice
	// num_threads itrealvalue starttime(22).
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, ErrStat
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	utime, err3 := strconv.ParseUint(string(f[11]), 10, 64)
	stime, err4 := strconv.ParseUint(string(f[12]), 10, 64)
	start, err5 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return Stat{}, ErrStat
	}
	return Stat{State: f[0][0], PPID: ppid, PGID: pgid, StartTicks: start, UTime: utime, STime: stime}, nil
}

// Alive reports whether pid is a process that has not exited: neither gone
// nor a zombie waiting to be reaped.
func Alive(pid int) bool {
	st, err := ReadStat(pid)
	return err == nil && st.State != 'Z'
}

// Matching returns the processes in /proc whose command line (each
// argument ended by a NUL) match accepts, in /proc's order. A process
// that ends meanwhile is left out. A zombie's command line is empty, so
// a match on any argument leaves out the processes that have exited.
func Matching(match func(pid int, cmdline []byte) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && match(pid, cmdline) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

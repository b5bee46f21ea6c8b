package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// write writes s to the cgroup file p in a single write(2), which is what
// the kernel parses as one value.
func write(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q: %w", s, err)
	}
	return nil
}

// exists reports whether the file p exists.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// words returns the space-separated words of the file p (cgroup.controllers,
// cgroup.subtree_control), or nil when it cannot be read.
func words(p string) []string {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// readProcs returns the process ids listed in cgroup.procs of the cgroup
// dir, but this process's own: on v1 one of its threads is there while it
// forks into a room (Room.Start), and it is never the room's, to count or
// to kill. A cgroup that does not exist is empty.
func readProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(dir + "/cgroup.procs")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	self := os.Getpid()
	for _, f := range bytes.Fields(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, fmt.Errorf("%s/cgroup.procs: %q is not a process id", dir, f)
		}
		if pid != self {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// field returns the value of key in a flat-keyed cgroup file ("key value"
// per line: memory.stat, memory.events, cpu.stat, memory.oom_control).
func field(p, key string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
		if ok && string(k) == key {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", p, key, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s", p, key)
}

// number reads a file holding one integer (cpuacct.usage, pids.max), with
// "max" read as -1.
func number(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return n, nil
}

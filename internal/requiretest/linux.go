//go:build linux

package requiretest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// newNetns runs ip, at path ip, in a network namespace of its own: what
// ip netns add needs of the kernel, without naming one.
func newNetns(ip string) error {
	cmd := exec.Command(ip, "link", "show", "lo")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s link show lo in a new namespace: %v %s", ip, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// rawSocket opens and closes a raw IPv4 socket, as floodtest does.
func rawSocket() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// writableCgroups returns why this process may not write its cgroup in
// some hierarchy it is in, or nil.
func writableCgroups() error {
	dirs, err := CgroupDirs()
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return errors.New("no cgroup hierarchy is mounted")
	}
	for _, d := range dirs {
		if err := unix.Access(d, unix.W_OK); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	return nil
}

// CgroupDirs returns the directory of this process's cgroup in each
// hierarchy that /proc/self/cgroup names and that is mounted here.
func CgroupDirs() ([]string, error) {
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(pc)), "\n") {
		// ID:CONTROLLERS:PATH; the unified hierarchy has none listed.
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var want []string
		if f[1] != "" {
			want = strings.Split(f[1], ",")
		}
		if d, ok := mounted(string(mi), want, f[2]); ok {
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// mounted returns where the cgroup path of the hierarchy of controllers
// want (none: the unified one) is in mountinfo mi, if it is visible.
func mounted(mi string, want []string, path string) (string, bool) {
	for _, line := range strings.Split(mi, "\n") {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		fstype, super := f[sep+1], strings.Split(f[sep+3], ",")
		if len(want) == 0 && fstype != "cgroup2" || len(want) > 0 && fstype != "cgroup" {
			continue
		}
		if !slices.ContainsFunc(want, func(c string) bool { return !slices.Contains(super, c) }) {
			root := strings.TrimSuffix(f[3], "/")
			if path != root && !strings.HasPrefix(path, root+"/") {
				return "", false // outside what this mount shows
			}
			return filepath.Join(f[4], strings.TrimPrefix(path, root)), true
		}
	}
	return "", false
}

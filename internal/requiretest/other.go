//go:build !linux

package requiretest

import "errors"

// errLinux is why the requirements below cannot be had: they are Linux's.
var errLinux = errors.New("Linux")

func newNetns(string) error  { return errLinux }
func rawSocket() error       { return errLinux }
func writableCgroups() error { return errLinux }

// CgroupDirs has no cgroups to name off Linux.
func CgroupDirs() ([]string, error) { return nil, errLinux }

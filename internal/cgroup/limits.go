package cgroup

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrLimit is wrapped by the errors of Check and Create for a limit that
// is out of range or cannot be enforced on this host.
var ErrLimit = errors.New("limit refused")

// Limits bound what one room may use. The zero value of each field means
// unlimited.
type Limits struct {
	// MemoryMax is the most memory, in bytes, the room's processes may
	// use together, page cache included; past it the kernel reclaims, and
	// when it cannot, its OOM killer kills within the room (on v2, the
	// whole room). Swap is not counted against it: rooms get none.
	MemoryMax int64
	// CPUMax is the share of one core the room may use, e.g. 0.5; more
	// than 1 spreads over cores. At least 0.01 (the kernel's smallest
	// quota, 1 ms per 100 ms period).
	CPUMax float64
	// PidsMax is the most processes and threads the room may have at once;
	// a fork past it fails with EAGAIN.
	PidsMax int64
}

const (
	cpuPeriod = 100_000 // µs: the kernel's default CFS period
	minCPU    = 0.01    // 1000 µs of quota per period, the kernel's minimum
	minMemory = 1 << 20 // below this no game server starts: a typo, not a limit
)

// validate returns an error for each limit out of range.
func (l Limits) validate() []error {
	var errs []error
	if l.MemoryMax < 0 || l.MemoryMax > 0 && l.MemoryMax < minMemory {
		errs = append(errs, fmt.Errorf("cgroup: memory_max %d bytes: %w: 0 (unlimited) or at least 1 MiB", l.MemoryMax, ErrLimit))
	}
	if math.IsNaN(l.CPUMax) || math.IsInf(l.CPUMax, 0) || l.CPUMax < 0 || l.CPUMax > 0 && l.CPUMax < minCPU {
		errs = append(errs, fmt.Errorf("cgroup: cpu_max %v: %w: 0 (unlimited) or at least %v of a core", l.CPUMax, ErrLimit, minCPU))
	}
	if l.PidsMax < 0 {
		errs = append(errs, fmt.Errorf("cgroup: pids_max %d: %w: 0 (unlimited) or more", l.PidsMax, ErrLimit))
	}
	return errs
}

// cpuQuota is the quota per cpuPeriod, in µs, of CPUMax.
func (l Limits) cpuQuota() int64 { return int64(math.Round(l.CPUMax * cpuPeriod)) }

// apply writes l to the room's fresh cgroups.
func (r *Room) apply(l Limits) error {
	t := r.t
	if l.MemoryMax > 0 {
		i := t.at[roleMemory]
		d, max := r.dirs[i], strconv.FormatInt(l.MemoryMax, 10)
		var err error
		if t.hs[i].v2 {
			err = errors.Join(write(d+"/memory.max", max),
				writeIfExists(d+"/memory.swap.max", "0"),
				// The OOM killer takes the whole room, not one process of it
				// that may leave the rest of the game unable to go on.
				write(d+"/memory.oom.group", "1"))
		} else {
			// memsw (memory plus swap) is at least the memory limit, and
			// both start unlimited: memory first.
			err = errors.Join(write(d+"/memory.limit_in_bytes", max),
				writeIfExists(d+"/memory.memsw.limit_in_bytes", max))
		}
		if err != nil {
			return err
		}
	}
	if l.CPUMax > 0 {
		i := t.at[roleCPUMax]
		d, q := r.dirs[i], strconv.FormatInt(l.cpuQuota(), 10)
		var err error
		if t.hs[i].v2 {
			err = write(d+"/cpu.max", q+" "+strconv.Itoa(cpuPeriod))
		} else {
			err = errors.Join(write(d+"/cpu.cfs_period_us", strconv.Itoa(cpuPeriod)), write(d+"/cpu.cfs_quota_us", q))
		}
		if err != nil {
			return err
		}
	}
	if l.PidsMax > 0 {
		if err := write(r.dirs[t.at[rolePids]]+"/pids.max", strconv.FormatInt(l.PidsMax, 10)); err != nil {
			return err
		}
	}
	return nil
}

// writeIfExists writes s to p if the kernel has that file (swap
// accounting is optional).
func writeIfExists(p, s string) error {
	if !exists(p) {
		return nil
	}
	return write(p, s)
}

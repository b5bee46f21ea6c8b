package cgroup

import (
	"bytes"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The controllers Foyer uses. cpuacct (v1 only) measures CPU time where
// the cpu controller is mounted apart from it; freezer (v1 only) stops a
// room's processes while they are killed.
const (
	ctrlMemory  = "memory"
	ctrlCPU     = "cpu"
	ctrlCPUAcct = "cpuacct"
	ctrlPids    = "pids"
	ctrlFreezer = "freezer"
	ctrlCpuset  = "cpuset"
)

// mount is one cgroup filesystem in /proc/self/mountinfo.
type mount struct {
	point string   // where it is mounted
	root  string   // the cgroup shown at point: "/" unless a container mounts a part
	v2    bool     // cgroup2, the unified hierarchy
	opts  []string // v1: the super options, among them the controllers and name=...
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a mountinfo
// file (proc(5)): "id parent major:minor root point options [optional...]
// - fstype source superoptions". Lines it cannot read are skipped: the
// file is the kernel's, and a mount Foyer cannot read is one it does not
// use.
func parseMountinfo(b []byte) []mount {
	var ms []mount
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		ms = append(ms, mount{
			point: unescapeMount(f[4]),
			root:  unescapeMount(f[3]),
			v2:    fstype == "cgroup2",
			opts:  strings.Split(f[sep+3], ","),
		})
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134) of a path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// membership is one line of /proc/self/cgroup: the cgroup a process is in
// within one hierarchy.
type membership struct {
	v2          bool     // the line "0::path"
	controllers []string // v1: the hierarchy's controllers (and name=...)
	path        string
}

// parseProcCgroup reads /proc/<pid>/cgroup (cgroups(7)):
// "hierarchy-id:controller-list:path" per hierarchy.
func parseProcCgroup(b []byte) []membership {
	var ms []membership
	for line := range bytes.Lines(b) {
		id, rest, ok1 := strings.Cut(strings.TrimRight(string(line), "\n"), ":")
		ctrls, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") {
			continue
		}
		m := membership{path: p}
		if id == "0" && ctrls == "" {
			m.v2 = true
		} else {
			m.controllers = strings.Split(ctrls, ",")
		}
		ms = append(ms, m)
	}
	return ms
}

// place is where one hierarchy holds the process: the directory of its
// cgroup, and for v1 the controllers of that hierarchy Foyer uses.
type place struct {
	v2          bool
	dir         string
	controllers []string
}

// locate finds the directory of the caller's cgroup in every hierarchy
// that matters: the unified one, and each v1 hierarchy with a controller
// Foyer uses, except one that also has cpuset (a new cpuset cgroup takes
// no process until its cpus and mems are filled in, which Foyer does not
// manage). The unified hierarchy comes first. A hierarchy whose cgroup
// lies outside the part a container mounted is left out.
func locate(mounts []mount, self []membership) []place {
	var out []place
	for _, m := range self {
		mt, ok := mountOf(mounts, m)
		if !ok {
			continue
		}
		rel, ok := within(mt.root, m.path)
		if !ok {
			continue
		}
		p := place{v2: m.v2, dir: path.Join(mt.point, rel)}
		if !m.v2 {
			if slices.Contains(m.controllers, ctrlCpuset) {
				continue
			}
			for _, c := range m.controllers {
				switch c {
				case ctrlMemory, ctrlCPU, ctrlCPUAcct, ctrlPids, ctrlFreezer:
					p.controllers = append(p.controllers, c)
				}
			}
			if len(p.controllers) == 0 {
				continue
			}
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b place) int {
		switch {
		case a.v2 == b.v2:
			return 0
		case a.v2:
			return -1
		default:
			return 1
		}
	})
	return out
}

// mountOf returns the mount of m's hierarchy: the cgroup2 mount for the
// unified line, else the v1 mount whose controllers are m's.
func mountOf(mounts []mount, m membership) (mount, bool) {
	for _, mt := range mounts {
		if mt.v2 != m.v2 {
			continue
		}
		if m.v2 || subset(m.controllers, mt.opts) {
			return mt, true
		}
	}
	return mount{}, false
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// within returns p relative to root, the cgroup a mount shows, or false
// when p is not below root.
func within(root, p string) (string, bool) {
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

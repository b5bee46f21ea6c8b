package cgroup

import (
	"reflect"
	"testing"
)

// Hosts as their /proc/self/mountinfo and /proc/self/cgroup show them.
var hosts = map[string]struct {
	mountinfo, cgroup string
	want              []place
}{
	// A current distribution: the unified hierarchy only, foyer a systemd
	// service.
	"v2 systemd service": {
		mountinfo: `24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
28 24 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`,
		cgroup: "0::/system.slice/foyer.service\n",
		want:   []place{{v2: true, dir: "/sys/fs/cgroup/system.slice/foyer.service"}},
	},
	// The machine these tests were written on: v1 controllers, each on
	// its own hierarchy, an empty unified hierarchy beside them.
	"hybrid": {
		mountinfo: `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`,
		cgroup: `9:name=systemd:/
8:pids:/
6:freezer:/
4:memory:/jobs/8b1d
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
`,
		want: []place{
			{v2: true, dir: "/sys/fs/cgroup/unified"},
			{dir: "/sys/fs/cgroup/pids", controllers: []string{"pids"}},
			{dir: "/sys/fs/cgroup/freezer", controllers: []string{"freezer"}},
			{dir: "/sys/fs/cgroup/memory/jobs/8b1d", controllers: []string{"memory"}},
			{dir: "/sys/fs/cgroup/cpuacct", controllers: []string{"cpuacct"}},
			{dir: "/sys/fs/cgroup/cpu", controllers: []string{"cpu"}},
		},
	},
	// Older Debian and Ubuntu: v1 only, cpu and cpuacct on one hierarchy
	// (two names for one mount), cpuset with nothing else.
	"v1 co-mounted": {
		mountinfo: `25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
26 24 0:23 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
27 24 0:24 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset
`,
		cgroup: `5:cpuset:/
4:memory:/user.slice
2:cpu,cpuacct:/user.slice
1:name=systemd:/user.slice/user-0.slice/session-1.scope
`,
		want: []place{
			{dir: "/sys/fs/cgroup/memory/user.slice", controllers: []string{"memory"}},
			{dir: "/sys/fs/cgroup/cpu,cpuacct/user.slice", controllers: []string{"cpu", "cpuacct"}},
		},
	},
	// A container without a cgroup namespace: its part of the hierarchy
	// is mounted on /sys/fs/cgroup and /proc/self/cgroup shows the host's
	// path; a mount point with a space in it, escaped.
	"container": {
		mountinfo: `700 690 0:30 /docker/abc /sys/fs/cgroup/my\040mem ro,nosuid - cgroup cgroup rw,memory
701 690 0:31 /docker/abc /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
`,
		cgroup: `7:memory:/docker/abc/inner
6:pids:/elsewhere
`,
		want: []place{{dir: "/sys/fs/cgroup/my mem/inner", controllers: []string{"memory"}}},
	},
	"nothing mounted": {
		mountinfo: "22 1 0:21 / /proc rw - proc proc rw\ngarbage\n",
		cgroup:    "0::/\n",
	},
}

func TestLocate(t *testing.T) {
	for name, h := range hosts {
		got := locate(parseMountinfo([]byte(h.mountinfo)), parseProcCgroup([]byte(h.cgroup)))
		if !reflect.DeepEqual(got, h.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, h.want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:    "/a b",
		`/tab\011`:   "/tab\t",
		`/back\134s`: `/back\s`,
		`/short\04`:  `/short\04`,
		`/not\999`:   `/not\999`,
		`/plain`:     "/plain",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

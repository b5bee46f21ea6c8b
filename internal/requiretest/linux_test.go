//go:build linux

package requiretest

import "testing"

// Each hierarchy of /proc/self/cgroup is found where mountinfo mounts it,
// below the mount's own root.
func TestMounted(t *testing.T) {
	mi := `30 23 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
31 23 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct
32 23 0:28 /lobby /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
`
	for _, c := range []struct {
		want []string
		path string
		dir  string
		ok   bool
	}{
		{nil, "/user.slice/a.scope", "/sys/fs/cgroup/unified/user.slice/a.scope", true},
		{[]string{"cpu", "cpuacct"}, "/", "/sys/fs/cgroup/cpu,cpuacct", true},
		{[]string{"memory"}, "/lobby/room", "/sys/fs/cgroup/memory/room", true},
		{[]string{"memory"}, "/elsewhere", "", false},
		{[]string{"pids"}, "/", "", false},
	} {
		if dir, ok := mounted(mi, c.want, c.path); dir != c.dir || ok != c.ok {
			t.Errorf("mounted(%v, %s) = %q, %v; want %q, %v", c.want, c.path, dir, ok, c.dir, c.ok)
		}
	}
}

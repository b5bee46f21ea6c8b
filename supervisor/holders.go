package supervisor

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/foyerlobby/foyer/instance/instancepb"
)

// A room may bind ports of the pool that were not given to it, to keep
// other rooms from starting. Such a port is skipped: before a port is
// handed out, the kernel's table of UDP sockets says whether anything
// holds it on any address (udpBound), and a port an instance or its
// server could not bind is quarantined, not counted against the CREATE.
// The holder is named, in the log and in HeldPorts (which /rooms and
// /metrics show): the process, and the room it belongs to, told by its
// cgroup, or without cgroups by its room directory.

// HeldPort is a port of the pool that something other than the room the
// pool gave it to holds.
type HeldPort struct {
	Port uint16 `json:"port"`
	// Room is the room whose process holds it; 0 when the holder is no
	// room of this lobby's.
	Room uint32 `json:"room,omitempty"`
	PID  int    `json:"pid"`
	UID  int    `json:"uid"`
}

// udpBound reports whether a UDP socket of this network namespace is
// bound to port, on any address, IPv4 or IPv6.
func udpBound(port uint16) bool {
	return len(udpInodes(map[uint16]bool{port: true})) > 0
}

// udpInodes returns the inodes of the UDP sockets bound to the ports of
// want, by inode, from /proc/net/udp and udp6.
func udpInodes(want map[uint16]bool) map[uint64]uint16 {
	out := map[uint64]uint16{}
	for _, table := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 {
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			if !ok || err != nil || !want[uint16(port)] {
				continue
			}
			if inode, err := strconv.ParseUint(f[9], 10, 64); err == nil {
				out[inode] = uint16(port)
			}
		}
	}
	return out
}

// portHolders returns who holds each port of ports: the process whose
// descriptor is the socket, and its room.
func (s *Supervisor) portHolders(ports []uint16) []HeldPort {
	want := map[uint16]bool{}
	for _, p := range ports {
		want[p] = true
	}
	inodes := udpInodes(want)
	if len(inodes) == 0 {
		return nil
	}
	found := map[uint16]HeldPort{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir("/proc/" + p.Name() + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
			if err != nil {
				continue
			}
			if port, ok := inodes[inode]; ok {
				if _, seen := found[port]; !seen {
					uid := -1
					if ids := processUIDs(pid); len(ids) > 1 {
						uid = ids[1]
					}
					found[port] = HeldPort{Port: port, Room: s.roomOf(pid), PID: pid, UID: uid}
				}
			}
		}
	}
	out := make([]HeldPort, 0, len(found))
	for _, h := range found {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b HeldPort) int { return cmp.Compare(a.Port, b.Port) })
	return out
}

// roomOf returns the room process pid belongs to, or 0: the room whose
// cgroup it is in (which a room cannot leave), or without cgroups the
// room whose directory its environment names.
func (s *Supervisor) roomOf(pid int) uint32 {
	if s.tree != nil {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(b), "\n") {
			_, dir, _ := strings.Cut(line, ":")
			_, dir, _ = strings.Cut(dir, ":")
			if path.Base(path.Dir(dir)) != s.tree.Name() {
				continue
			}
			if id, err := strconv.ParseUint(strings.TrimPrefix(path.Base(dir), "room-"), 10, 32); err == nil {
				return uint32(id)
			}
		}
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return 0
	}
	prefix := instancepb.EnvRoomDir + "=" + s.dirs.rooms() + "/"
	for _, kv := range strings.Split(string(b), "\x00") {
		if rest, ok := strings.CutPrefix(kv, prefix); ok && filepath.Base(rest) == rest {
			if id, err := strconv.ParseUint(rest, 10, 32); err == nil {
				return uint32(id)
			}
		}
	}
	return 0
}

// HeldPorts returns the ports of the pool in quarantine that a process
// still holds, and who: a room that binds ports not given to it shows
// here, for the operator to end it.
func (s *Supervisor) HeldPorts() []HeldPort {
	s.mu.Lock()
	ports := make([]uint16, 0, len(s.ports.quarantined))
	for _, p := range s.ports.quarantined {
		ports = append(ports, p.port)
	}
	s.mu.Unlock()
	if len(ports) == 0 {
		return nil
	}
	return s.portHolders(ports)
}

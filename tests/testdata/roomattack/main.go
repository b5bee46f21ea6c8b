// Command roomattack is a room's game server that tries what a hostile
// one would, for TestContainRoomHasNoAuthority: run by the exec driver
// (probe "none") as "roomattack PORT", it binds its port, waits for the
// test's orders in $HOME/orders, tries each, writes what happened to
// $HOME/result, and keeps the ports it took until it is killed.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// orders are what the test wants tried.
type orders struct {
	Signal []int    `json:"signal"` // processes to signal (signal 0)
	Write  []string `json:"write"`  // files to create
	Read   []string `json:"read"`   // files and directories to read
	Squat  []int    `json:"squat"`  // UDP ports to bind on every address
}

// result is what happened: "" for done, else the error.
type result struct {
	UID, GID int
	Groups   []int
	Env      []string
	Fds      map[int]string    // descriptors open past the standard streams, with what they are
	Caps     map[string]string // its capability sets, as /proc/self/status gives them
	Root     string            // what setuid(0) did
	Signal   map[int]string
	Write    map[string]string
	Read     map[string]string
	Squat    map[int]string
}

func main() {
	fds := map[int]string{}
	for fd := 3; fd < 64; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			fds[fd], _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		}
	}
	// Its own port first, on every address, as a game server binds it:
	// one it cannot bind, it exits for.
	port, _ := strconv.Atoi(os.Args[1])
	own, err := net.ListenUDP("udp", &net.UDPAddr{Port: port})
	if err != nil {
		fmt.Fprintln(os.Stderr, "roomattack:", err)
		os.Exit(1)
	}
	defer own.Close()
	home := os.Getenv("HOME")
	var o orders
	for {
		if b, err := os.ReadFile(filepath.Join(home, "orders")); err == nil && json.Unmarshal(b, &o) == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	groups, _ := os.Getgroups()
	r := result{UID: os.Getuid(), GID: os.Getgid(), Groups: groups, Env: os.Environ(), Fds: fds, Caps: capabilities(),
		Root: errString(syscall.Setuid(0)), Signal: map[int]string{}, Write: map[string]string{}, Read: map[string]string{}, Squat: map[int]string{}}
	for _, pid := range o.Signal {
		r.Signal[pid] = errString(syscall.Kill(pid, 0))
	}
	for _, p := range o.Write {
		r.Write[p] = errString(os.WriteFile(p, []byte("planted"), 0o644))
	}
	for _, p := range o.Read {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			_, err = os.ReadDir(p)
			r.Read[p] = errString(err)
			continue
		}
		_, err := os.ReadFile(p)
		r.Read[p] = errString(err)
	}
	var held []*net.UDPConn
	for _, port := range o.Squat {
		// On IPv6 loopback alone: a check that binds 127.0.0.1 does
		// not see it, a server that binds every address fails.
		c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback, Port: port})
		r.Squat[port] = errString(err)
		if err == nil {
			held = append(held, c)
		}
	}
	b, _ := json.Marshal(r)
	tmp := filepath.Join(home, "result.tmp")
	os.WriteFile(tmp, b, 0o644)
	os.Rename(tmp, filepath.Join(home, "result"))
	for { // holds the ports until killed
		time.Sleep(time.Hour)
		runtime.KeepAlive(held)
	}
}

// capabilities are the Cap* lines of /proc/self/status, by name.
func capabilities() map[string]string {
	caps := map[string]string{}
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(name, "Cap") {
			caps[name] = strings.TrimSpace(v)
		}
	}
	return caps
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

//go:build linux

package proc

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	line := "4242 (a) b) (c) S 17 4242 4242 0 -1 4194560 107 0 0 0 31 7 0 0 20 0 1 0 987654 2314240 160 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stat{State: 'S', PPID: 17, PGID: 4242, StartTicks: 987654, UTime: 31, STime: 7}); st != want {
		t.Errorf("parseStat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "4242 no parenthesis S 1 2", "1 (x) S 1 2 3", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, err := parseStat([]byte(bad)); !errors.Is(err, ErrStat) {
			t.Errorf("parseStat(%q) = %v, want ErrStat", bad, err)
		}
	}
}

func TestReadStatOfLiveZombieAndGone(t *testing.T) {
	self, err := ReadStat(os.Getpid())
	if err != nil || self.State == 'Z' || self.PPID != os.Getppid() || self.StartTicks == 0 {
		t.Fatalf("own stat %+v, %v", self, err)
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for Alive(pid) { // exits on its own and stays a zombie until Wait
		time.Sleep(time.Millisecond)
	}
	if st, err := ReadStat(pid); err != nil || st.State != 'Z' {
		t.Fatalf("an exited, unreaped child: %+v, %v", st, err)
	}
	cmd.Wait()
	if _, err := ReadStat(pid); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reaped child: %v, want not exist", err)
	}
	if Alive(pid) {
		t.Fatal("a reaped child is alive")
	}
}

// Matching offers each process's whole command line, arguments ended by
// NULs, and keeps the ones accepted; a process that has exited and is not
// yet reaped offers an empty one, so no match on an argument keeps it.
func TestMatching(t *testing.T) {
	zombie := exec.Command("sleep", "0")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	for Alive(zombie.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	seconds := strconv.Itoa(1_000_000 + os.Getpid()) // a sleep of its own
	cmd := exec.Command("sleep", seconds)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	want := "sleep\x00" + seconds + "\x00"
	var offered []int
	pids, err := Matching(func(pid int, cmdline []byte) bool {
		offered = append(offered, pid)
		return string(cmdline) == want
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Errorf("Matching = %v, want [%d]", pids, cmd.Process.Pid)
	}
	if zombies, _ := Matching(func(pid int, cmdline []byte) bool { return pid == zombie.Process.Pid && len(cmdline) > 0 }); len(zombies) != 0 {
		t.Errorf("an exited child offered a command line: %v", zombies)
	}
	if !slices.Contains(offered, os.Getpid()) {
		t.Error("the test's own process was never offered")
	}
}

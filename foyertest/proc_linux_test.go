package foyertest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The leftover check is only as good as its search: it must find a live
// room by the harness's argv[0], and nothing of another lobby.
func TestProcessesOfFindsTheRooms(t *testing.T) {
	a, b := Start(t), Start(t)
	seat, err := a.Client().Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, r := range a.Supervisor().Table().List().Rooms {
		if r.ID == seat.Room {
			pid = r.PID
		}
	}
	// A lobby that runs its rooms as users of their own, in cgroups,
	// starts a warden of the same binary beside each.
	wardens := 0
	if strings.Contains(a.Log(), "rooms run as users of their own") && strings.Contains(a.Log(), "rooms contained in cgroups") {
		wardens = 1
	}
	var rooms, found []int
	for _, p := range processesOf(a.instance) {
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.Contains(string(cmdline), "\x00--room-warden=") {
			found = append(found, p)
		} else {
			rooms = append(rooms, p)
		}
	}
	if !slices.Equal(rooms, []int{pid}) || len(found) != wardens {
		t.Errorf("processes of lobby a: rooms %v and wardens %v, want [%d] and %d warden", rooms, found, pid, wardens)
	}
	if got := processesOf(b.instance); len(got) != 0 {
		t.Errorf("processes of lobby b, which has no rooms: %v", got)
	}
}

// A lobby of StartBinary lives as long as its test, whatever becomes of
// the thread that started it: here a goroutine locked to its thread
// starts it and returns, which ends the thread (unless it is the
// process's first thread, which Go never ends: then it tries again), and
// the lobby must still take a CREATE. Its parent-death signal follows
// the thread that forks.
func TestLobbyOutlivesTheThreadThatStartedIt(t *testing.T) {
	type start struct {
		l          *Lobby
		mainThread bool
	}
	started := make(chan start)
	for {
		go func() {
			var s start
			defer func() { started <- s }() // also when StartBinary fails the test
			runtime.LockOSThread()          // never unlocked: the thread ends with the goroutine
			if unix.Gettid() == os.Getpid() {
				runtime.UnlockOSThread()
				s.mainThread = true
				return
			}
			s.l = StartBinary(t)
		}()
		s := <-started
		switch {
		case s.mainThread:
			continue
		case s.l == nil:
			t.FailNow() // StartBinary said why
		}
		time.Sleep(100 * time.Millisecond) // the thread is gone, and a signal would have come
		if _, err := s.l.Client().Create(context.Background()); err != nil || strings.Contains(s.l.Log(), "shutting down") {
			t.Fatalf("the lobby stopped with the thread that started it: %v\n%s", err, s.l.Log())
		}
		return
	}
}

package foyertest

import (
	"context"
	"slices"
	"testing"
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
	if got := processesOf(a.instance); !slices.Equal(got, []int{pid}) {
		t.Errorf("processes of lobby a: %v, want [%d]", got, pid)
	}
	if got := processesOf(b.instance); len(got) != 0 {
		t.Errorf("processes of lobby b, which has no rooms: %v", got)
	}
}

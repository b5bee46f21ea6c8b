package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRoomIDsFromClock(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ids, err := newRoomIDs(now, "")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ids.take()
	b, _ := ids.take()
	if a != 1_800_000_000 || b != a+1 {
		t.Fatalf("ids %d %d, want the clock then the next", a, b)
	}
	// A restart a second later starts above the clock seed; only a run
	// faster than one room per second could overlap, which IDFile covers.
	again, _ := newRoomIDs(now.Add(time.Minute), "")
	if c, _ := again.take(); c <= b {
		t.Fatalf("restarted ids begin at %d, not above %d", c, b)
	}
}

func TestRoomIDsSkipZero(t *testing.T) {
	ids, err := newRoomIDs(time.Unix(1<<32-1, 0), "")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ids.take()
	b, _ := ids.take()
	if a != 1<<32-1 || b != 1 {
		t.Fatalf("ids %d %d, want 4294967295 then 1", a, b)
	}
}

func TestRoomIDsFileSurvivesFastRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ids")
	now := time.Unix(1_800_000_000, 0)
	seen := make(map[uint32]bool)
	for run := range 3 {
		ids, err := newRoomIDs(now, file) // the clock stands still: only the file helps
		if err != nil {
			t.Fatal(err)
		}
		for range idBlock + 10 { // crosses a block boundary
			id, err := ids.take()
			if err != nil {
				t.Fatal(err)
			}
			if id == 0 || seen[id] {
				t.Fatalf("run %d: id %d repeated or zero", run, id)
			}
			seen[id] = true
		}
	}
	if err := os.WriteFile(file, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newRoomIDs(now, file); err == nil {
		t.Fatal("a corrupt id file was accepted")
	}
}

package roomtable

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/logtest"
)

// newIDs starts room ids seeded at now from file, writing until the test
// ends.
func newIDs(t *testing.T, now time.Time, file string, log zerolog.Logger) *roomIDs {
	t.Helper()
	ids, err := newRoomIDs(now, file, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { ids.writer(done) })
	t.Cleanup(func() { close(done); wg.Wait() }) // before the temporary directory goes
	return ids
}

// takeDurable takes an id and waits until the file covers it, as a spawn
// does before the room is announced.
func takeDurable(t *testing.T, ids *roomIDs) uint32 {
	t.Helper()
	id := ids.take()
	for ch := ids.durable(id); ch != nil; ch = ids.durable(id) {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("id %d never covered by the id file", id)
		}
	}
	return id
}

func TestRoomIDsFromClock(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ids := newIDs(t, now, "", zerolog.Nop())
	a, b := ids.take(), ids.take()
	if a != 1_800_000_000 || b != a+1 {
		t.Fatalf("ids %d %d, want the clock then the next", a, b)
	}
	// A restart a second later starts above the clock seed; only a run
	// faster than one room per second could overlap, which IDFile covers.
	if c := newIDs(t, now.Add(time.Minute), "", zerolog.Nop()).take(); c <= b {
		t.Fatalf("restarted ids begin at %d, not above %d", c, b)
	}
}

func TestRoomIDsSkipZero(t *testing.T) {
	ids := newIDs(t, time.Unix(1<<32-1, 0), "", zerolog.Nop())
	if a, b := ids.take(), ids.take(); a != 1<<32-1 || b != 1 {
		t.Fatalf("ids %d %d, want 4294967295 then 1", a, b)
	}
}

func TestRoomIDsFileSurvivesFastRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ids")
	now := time.Unix(1_800_000_000, 0)
	seen := make(map[uint32]bool)
	for run := range 3 {
		ids := newIDs(t, now, file, zerolog.Nop()) // the clock stands still: only the file helps
		for range 3*idBlock + 10 {                 // crosses several marks
			id := takeDurable(t, ids)
			if id == 0 || seen[id] {
				t.Fatalf("run %d: id %d repeated or zero", run, id)
			}
			seen[id] = true
		}
	}
}

// The ids after a restart start right after the mark read, or at the
// clock where it is ahead of the mark, and the mark written at the start
// covers a block ahead of them.
func TestRoomIDsStartRightAfterTheMark(t *testing.T) {
	const now = 1_800_000_000
	for hwm, want := range map[uint32]uint32{now - 1: now, now: now + 1, now + 1000: now + 1001} {
		file := filepath.Join(t.TempDir(), "ids")
		if err := os.WriteFile(file, []byte(strconv.FormatUint(uint64(hwm), 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ids := newIDs(t, time.Unix(now, 0), file, zerolog.Nop())
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if mark := strings.TrimSpace(string(b)); mark != strconv.FormatUint(uint64(want+idBlock-1), 10) {
			t.Errorf("mark %d read: the mark written at the start is %s, want %d", hwm, mark, want+idBlock-1)
		}
		if id := ids.take(); id != want {
			t.Errorf("mark %d read at the clock's %d: first id %d, want %d", hwm, now, id, want)
		}
	}
}

// A file a crash or a person damaged is reported and ignored, never a
// reason to refuse the start: ids are seeded from the clock again.
func TestRoomIDsDamagedFileRecovered(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for name, content := range map[string]string{"empty": "", "truncated": "18000", "garbage": "garbage\n", "too big": "99999999999\n"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ids")
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			var logs logtest.Buffer
			ids := newIDs(t, now, file, zerolog.New(&logs))
			if id := takeDurable(t, ids); id < 1_800_000_000 {
				t.Fatalf("first id %d, want one from the clock", id)
			}
			if name != "truncated" && !strings.Contains(logs.String(), "room id mark unreadable") {
				t.Errorf("damaged file not reported; log:\n%s", logs.String())
			}
			b, err := os.ReadFile(file)
			if err != nil || strings.TrimSpace(string(b)) == strings.TrimSpace(content) {
				t.Errorf("mark not rewritten: %q, %v", b, err)
			}
		})
	}
}

// Taking an id never waits for the disk: a mark that cannot be written is
// logged once, and ids keep coming, unique.
func TestRoomIDsTakeNeverWaitsForTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ids")
	var logs logtest.Buffer
	ids := newIDs(t, time.Unix(1_800_000_000, 0), file, zerolog.New(&logs))
	if err := os.RemoveAll(dir); err != nil { // every later write fails, even as root
		t.Fatal(err)
	}
	seen := make(map[uint32]bool)
	for range 4 * idBlock {
		id := ids.take()
		if seen[id] {
			t.Fatalf("id %d repeated", id)
		}
		seen[id] = true
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "room id mark not persisted"); {
		if time.Now().After(deadline) {
			t.Fatalf("failed write not logged; log:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "room id mark not persisted"); n != 1 {
		t.Errorf("failed write logged %d times, want once per failure streak", n)
	}
}

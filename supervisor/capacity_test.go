package supervisor

import (
	"context"
	"slices"
	"testing"

	"github.com/foyerlobby/foyer/room/roomtable"
)

// TestIDsInRange: every id, the warm room's first, stays in the range and
// wraps within it. One instance at most: no warm room refills the pool.
func TestIDsInRange(t *testing.T) {
	s, _ := newTest(t, "game", 2, func(c *Config) {
		c.MaxInstances, c.Warm = 1, 1
		c.IDs = roomtable.IDRange{First: 100, Last: 103, Next: 101}
	})
	eventually(t, "a warm room", func() bool { return s.Stats().Warm == 1 })
	r, err := s.Table().Create(context.Background(), ep("127.0.0.1:1000"))
	if err != nil {
		t.Fatal(err)
	}
	ids := []uint32{r.ID}
	for _, key := range []string{"a", "b", "c"} {
		reg, err := s.Table().Register(key, listing("192.0.2.1:4000", 0, 4))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.ID)
	}
	if want := []uint32{101, 102, 103, 100}; !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v: the warm room's first, then on through the range and round", ids, want)
	}
}

// TestCapacityCountsFreeSlots: free instance slots with a ready port;
// registered rooms take none.
func TestCapacityCountsFreeSlots(t *testing.T) {
	s, _ := newTest(t, "game", 3, func(c *Config) { c.MaxInstances = 2 })
	if c := s.Capacity(); c != 2 {
		t.Fatalf("Capacity %d with nothing running, want 2 (max_instances)", c)
	}
	if _, err := s.Table().Create(context.Background(), ep("127.0.0.1:1000")); err != nil {
		t.Fatal(err)
	}
	if c := s.Capacity(); c != 1 {
		t.Fatalf("Capacity %d with one room, want 1", c)
	}
	if _, err := s.Table().Register("k", listing("192.0.2.1:4000", 0, 4)); err != nil {
		t.Fatal(err)
	}
	if c := s.Capacity(); c != 1 {
		t.Fatalf("Capacity %d after a registration, want 1: registered rooms run elsewhere", c)
	}
}

// TestCapacityCountsWarmRooms: a warm room ready counts as one room, and
// as one instance running.
func TestCapacityCountsWarmRooms(t *testing.T) {
	s, _ := newTest(t, "game", 3, func(c *Config) { c.MaxInstances, c.Warm = 2, 1 })
	eventually(t, "a warm room", func() bool { return s.Stats().Warm == 1 })
	if c := s.Capacity(); c != 2 {
		t.Fatalf("Capacity %d with one warm room, want 2 (max_instances)", c)
	}
}

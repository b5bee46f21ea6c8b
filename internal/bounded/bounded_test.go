package bounded

import "testing"

func TestTableSecondChance(t *testing.T) {
	tb := New[int, string](3)
	put := func(k int, v string) (evicted string) {
		p := tb.Insert(k)
		evicted, *p = *p, v
		return evicted
	}
	put(1, "a")
	put(2, "b")
	put(3, "c")
	// All were used: the hand clears them all, evicts 1 and hands its
	// value over for reuse.
	if old := put(4, "d"); old != "a" {
		t.Errorf("insert of 4 handed over %q, want 1's %q", old, "a")
	}
	if _, ok := tb.Get(1); ok {
		t.Error("1 survived")
	}
	tb.Get(2) // 2 gets a second chance, 3 does not
	if old := put(5, "e"); old != "c" {
		t.Errorf("insert of 5 handed over %q, want 3's %q", old, "c")
	}
	if _, ok := tb.Get(3); ok {
		t.Error("3 survived")
	}
	for k, want := range map[int]string{2: "b", 4: "d", 5: "e"} {
		if v, ok := tb.Get(k); !ok {
			t.Errorf("get(%d) found nothing, want %q", k, want)
		} else if *v != want {
			t.Errorf("get(%d) = %q, want %q", k, *v, want)
		}
	}
	if tb.Len() != 3 || len(tb.index) != 3 {
		t.Errorf("len %d, index %d", tb.Len(), len(tb.index))
	}
}

// At finds an entry in the slot Find said, until the entry is evicted:
// then the slot holds another key, and At finds nothing there.
func TestAtFindsAnEntryWhereFindSaid(t *testing.T) {
	tb := New[int, string](2)
	*tb.Insert(1) = "a"
	*tb.Insert(2) = "b"
	_, i, ok := tb.Find(1)
	if !ok {
		t.Fatal("1 not found")
	}
	if v, ok := tb.At(i, 1); !ok || *v != "a" {
		t.Fatalf("At(%d, 1) = %v, %v; want a", i, v, ok)
	}
	if _, ok := tb.At(i, 2); ok {
		t.Errorf("At(%d, 2) found 2 in 1's slot", i)
	}
	for _, j := range []int{-1, 2} {
		if _, ok := tb.At(j, 1); ok {
			t.Errorf("At(%d, 1) found a slot the table does not have", j)
		}
	}
	tb.Insert(3) // the table is full: 3 and 4 take 1's and 2's slots
	tb.Insert(4)
	if _, ok := tb.At(i, 1); ok {
		t.Errorf("At(%d, 1) found 1 after it was evicted", i)
	}
}

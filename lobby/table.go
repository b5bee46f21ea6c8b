package lobby

// table is a map with a fixed number of entries. When it is full, a new
// key takes the place of one not used since the clock hand last passed it
// (second-chance eviction): O(1) amortised, no list to maintain on every
// hit, and a flood of new keys cannot grow it. Not safe for concurrent use.
type table[K comparable, V any] struct {
	index map[K]int
	slots []slot[K, V]
	hand  int
	max   int
}

type slot[K comparable, V any] struct {
	key  K
	val  V
	used bool // set on every hit, cleared when the hand passes
}

func newTable[K comparable, V any](max int) *table[K, V] {
	return &table[K, V]{index: make(map[K]int), max: max}
}

// get returns the value stored for k and marks it used.
func (t *table[K, V]) get(k K) (V, bool) {
	i, ok := t.index[k]
	if !ok {
		var zero V
		return zero, false
	}
	t.slots[i].used = true
	return t.slots[i].val, true
}

// put stores v for k, which must not be present, evicting an entry if the
// table is full.
func (t *table[K, V]) put(k K, v V) {
	if len(t.slots) < t.max {
		t.index[k] = len(t.slots)
		t.slots = append(t.slots, slot[K, V]{key: k, val: v, used: true})
		return
	}
	for t.slots[t.hand].used {
		t.slots[t.hand].used = false
		t.hand = (t.hand + 1) % len(t.slots)
	}
	delete(t.index, t.slots[t.hand].key)
	t.slots[t.hand] = slot[K, V]{key: k, val: v, used: true}
	t.index[k] = t.hand
	t.hand = (t.hand + 1) % len(t.slots)
}

// len is the number of entries.
func (t *table[K, V]) len() int { return len(t.slots) }

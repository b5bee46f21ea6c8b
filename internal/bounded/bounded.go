// Package bounded is a map of fixed size for state kept per remote peer
// (a source, a network, an endpoint): a flood of new keys neither grows
// it nor allocates once it is full.
package bounded

// Table is a map with a fixed number of entries. When it is full, a new
// key takes the place of one not used since the clock hand last passed it
// (second-chance eviction): O(1) amortised, no list to maintain on every
// hit, and a flood of new keys cannot grow it. Not safe for concurrent use.
type Table[K comparable, V any] struct {
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

// New returns an empty table of at most max entries; max must be
// positive.
func New[K comparable, V any](max int) *Table[K, V] {
	return &Table[K, V]{index: make(map[K]int), max: max}
}

// Get returns the value stored for k, in place, and marks it used. The
// pointer is valid until the next Insert.
func (t *Table[K, V]) Get(k K) (*V, bool) {
	v, _, ok := t.Find(k)
	return v, ok
}

// Find is Get, and also returns the slot that holds k's entry, where At
// finds it again without hashing k.
func (t *Table[K, V]) Find(k K) (*V, int, bool) {
	i, ok := t.index[k]
	if !ok {
		return nil, -1, false
	}
	t.slots[i].used = true
	return &t.slots[i].val, i, true
}

// At returns the value stored for k if slot i holds k's entry, as Find
// said it did: an entry keeps its slot until it is evicted. It leaves the
// entry's use as it is. The pointer is valid until the next Insert.
func (t *Table[K, V]) At(i int, k K) (*V, bool) {
	if i < 0 || i >= len(t.slots) || t.slots[i].key != k {
		return nil, false
	}
	return &t.slots[i].val, true
}

// Insert makes an entry for k, which must not be present, evicting one
// if the table is full, and returns a pointer to its value: the zero V in
// a new slot, or the evicted entry's value, for the caller to reuse or
// replace (so that a flood of new keys need not allocate). The pointer is
// valid until the next Insert.
func (t *Table[K, V]) Insert(k K) *V {
	if len(t.slots) < t.max {
		t.index[k] = len(t.slots)
		t.slots = append(t.slots, slot[K, V]{key: k, used: true})
		return &t.slots[len(t.slots)-1].val
	}
	for t.slots[t.hand].used {
		t.slots[t.hand].used = false
		t.hand = (t.hand + 1) % len(t.slots)
	}
	s := &t.slots[t.hand]
	delete(t.index, s.key)
	s.key, s.used = k, true
	t.index[k] = t.hand
	t.hand = (t.hand + 1) % len(t.slots)
	return &s.val
}

// Len is the number of entries.
func (t *Table[K, V]) Len() int { return len(t.slots) }

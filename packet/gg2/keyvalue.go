package gg2

import (
	"bytes"
	"encoding/binary"
	"math"
)

// KeyValue is one entry of a key/value table. Keys of the specification
// ("name", "game", "game_short", "game_ver", "game_url", "map",
// "protocol_id") have fixed meanings; extension keys start with "x-".
// Values are bytes because "protocol_id" is a raw 16-byte UUID.
type KeyValue struct {
	Key   string
	Value []byte
}

// KeyValues is a table in wire order. Foyer keeps the sender's order and
// rejects a table that names one key twice ([ErrDuplicateKey]): which of
// two names a server means is not ours to guess, and a lobby that ignores
// such a registration shows nothing wrong.
type KeyValues []KeyValue

// Get returns the value of key and whether it is present.
func (kv KeyValues) Get(key string) ([]byte, bool) {
	for _, e := range kv {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// Name returns the "name" value as a string ("" when absent).
func (kv KeyValues) Name() string {
	v, _ := kv.Get("name")
	return string(v)
}

// minEntry is the smallest entry on the wire: a one-byte key, an empty value.
const minEntry = 1 + 1 + 2

// check reports the first entry that cannot be encoded, or that a decoder
// would refuse, as an error at offset off (the table's start).
func (kv KeyValues) check(msg string, off int) error {
	var seen keySet
	for _, e := range kv {
		switch {
		case len(e.Key) == 0 || len(e.Key) > math.MaxUint8:
			return fail(msg, off, ErrKey)
		case len(e.Value) > math.MaxUint16:
			return fail(msg, off, ErrValue)
		}
		if seen.add(e.Key) {
			return fail(msg, off, ErrDuplicateKey)
		}
		off += 1 + len(e.Key) + 2 + len(e.Value)
	}
	return nil
}

// appendTable writes the entries; kv must have passed check.
func (kv KeyValues) appendTable(b []byte) []byte {
	for _, e := range kv {
		b = append(b, byte(len(e.Key)))
		b = append(b, e.Key...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(e.Value)))
		b = append(b, e.Value...)
	}
	return b
}

// wireLen is the table's size on the wire.
func (kv KeyValues) wireLen() int {
	n := 0
	for _, e := range kv {
		n += 1 + len(e.Key) + 2 + len(e.Value)
	}
	return n
}

// parseTable reads entries from b[off:end]. With count < 0 it reads until
// end; otherwise exactly count entries, which need not reach end. It
// returns the entries and the offset after the last one. Values alias b.
func parseTable(msg string, b []byte, off, end, count int) (KeyValues, int, error) {
	var kv KeyValues
	var seen keySet
	for i := 0; count < 0 && off < end || i < count; i++ {
		if end-off < minEntry {
			return nil, off, fail(msg, off, ErrTruncated)
		}
		kl := int(b[off])
		if kl == 0 {
			return nil, off, fail(msg, off, ErrKey)
		}
		if end-off < 1+kl+2 {
			return nil, off, fail(msg, off, ErrTruncated)
		}
		key := b[off+1 : off+1+kl]
		vl := int(binary.BigEndian.Uint16(b[off+1+kl:]))
		vs := off + 1 + kl + 2
		if end-vs < vl {
			return nil, vs, fail(msg, vs, ErrTruncated)
		}
		k := string(key)
		if seen.add(k) {
			return nil, off, fail(msg, off, ErrDuplicateKey)
		}
		kv = append(kv, KeyValue{Key: k, Value: b[vs : vs+vl : vs+vl]})
		off = vs + vl
	}
	return kv, off, nil
}

// Equal reports whether both tables hold the same entries in the same order.
func (kv KeyValues) Equal(other KeyValues) bool {
	if len(kv) != len(other) {
		return false
	}
	for i := range kv {
		if kv[i].Key != other[i].Key || !bytes.Equal(kv[i].Value, other[i].Value) {
			return false
		}
	}
	return true
}

// keySet finds repeated keys: a scan of a small array while the table is
// short, a map once it is not, so a hostile table of thousands of keys
// costs linear time and a normal one allocates nothing.
type keySet struct {
	few  [8]string
	n    int
	many map[string]struct{}
}

// add records k and reports whether it was already there.
func (s *keySet) add(k string) bool {
	if s.many == nil {
		for _, f := range s.few[:s.n] {
			if f == k {
				return true
			}
		}
		if s.n < len(s.few) {
			s.few[s.n] = k
			s.n++
			return false
		}
		s.many = make(map[string]struct{}, 2*len(s.few))
		for _, f := range s.few {
			s.many[f] = struct{}{}
		}
	}
	if _, ok := s.many[k]; ok {
		return true
	}
	s.many[k] = struct{}{}
	return false
}

package main

import "testing"

// -size TYPE=LEN sets the echo's length for requests of that type only;
// a malformed one is refused and sets nothing.
func TestReplySizes(t *testing.T) {
	r := replySizes{}
	for _, s := range []string{"40=124", "44=22"} {
		if err := r.Set(s); err != nil {
			t.Fatalf("-size %s: %v", s, err)
		}
	}
	for _, s := range []string{"4x=3", "40", "140=3", "44=-1", "44=ten"} {
		if err := r.Set(s); err == nil {
			t.Errorf("-size %s taken", s)
		}
	}
	for _, c := range []struct {
		req  []byte
		want int
	}{
		{[]byte{1, 0x40, 0, 0}, 124},
		{[]byte{1, 0x44}, 22},
		{[]byte{1, 0x42, 0, 0}, 0},
		{[]byte{0x40}, 0},
	} {
		if got := r.of(c.req); got != c.want {
			t.Errorf("of(%x) = %d, want %d", c.req, got, c.want)
		}
	}
}

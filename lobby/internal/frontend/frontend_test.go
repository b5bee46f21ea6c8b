package frontend

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/foyerlobby/foyer/room"
)

func TestRoomKeys(t *testing.T) {
	kv := RoomKeys(room.Room{ID: 42}, "foyer")
	if kv.Name() != "Foyer room 42" || string(kv[1].Value) != "foyer" || string(kv[2].Value) != "default" {
		t.Errorf("defaults %+v", kv)
	}
	kv = RoomKeys(room.Room{ID: 42, Name: "n", Game: "g", Map: "m"}, "foyer")
	if kv.Name() != "n" || string(kv[1].Value) != "g" || string(kv[2].Value) != "m" {
		t.Errorf("set %+v", kv)
	}
}

func TestInterleave(t *testing.T) {
	a, b, c := netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24")
	type item struct {
		name string
		net  netip.Prefix
	}
	in := []item{{"a1", a}, {"a2", a}, {"a3", a}, {"b1", b}, {"a4", a}, {"c1", c}, {"b2", b}}
	var got []string
	for _, it := range Interleave(in, func(it item) netip.Prefix { return it.net }) {
		got = append(got, it.name)
	}
	if want := []string{"a1", "b1", "c1", "a2", "b2", "a3", "a4"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(Interleave([]item(nil), func(it item) netip.Prefix { return it.net })) != 0 {
		t.Error("nothing interleaved is something")
	}
}

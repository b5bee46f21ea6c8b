package frontend

import (
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

// Package frontend holds what the neighbour-protocol front-ends (lobby/gg2server,
// lobby/gunzserver, lobby/announce) share besides rate limiting (package limit)
// and counting (package tally), which every edge shares: how Foyer's own
// rooms describe themselves to other protocols' browsers (player counts
// in 16-bit fields, GG2-style key/value tables).
package frontend

import (
	"fmt"

	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/room"
)

// Clamp16 converts a count to a u16 wire field, saturating.
func Clamp16(n int) uint16 {
	return uint16(min(max(n, 0), 0xFFFF))
}

// RoomKeys is the key/value table a GG2-style list or registration shows
// for one of Foyer's own rooms: its name, game and map, or defaults for
// those it does not set ("Foyer room N", game, "default").
func RoomKeys(r room.Room, game string) gg2.KeyValues {
	name, mapName := r.Name, r.Map
	if name == "" {
		name = fmt.Sprintf("Foyer room %d", r.ID)
	}
	if r.Game != "" {
		game = r.Game
	}
	if mapName == "" {
		mapName = "default"
	}
	return gg2.KeyValues{
		{Key: "name", Value: []byte(name)},
		{Key: "game", Value: []byte(game)},
		{Key: "map", Value: []byte(mapName)},
	}
}

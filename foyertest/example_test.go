package foyertest_test

import (
	"context"
	"testing"

	"github.com/foyerlobby/foyer/foyertest"
)

// TestExample is the README's example: a real lobby running real rooms,
// a room created and joined through it, in ten lines.
func TestExample(t *testing.T) {
	lobby := foyertest.Start(t, foyertest.MaxPlayers(2))
	room, err := lobby.Client().Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if seat, err := lobby.Client().Join(context.Background(), room.Room); err != nil || seat.Port != room.Port {
		t.Fatalf("join room %d: %v, port %d, want %d", room.Room, err, seat.Port, room.Port)
	}
}

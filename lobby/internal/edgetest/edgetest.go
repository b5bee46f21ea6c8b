// Package edgetest holds the setup the lobby's front-end tests share: a
// server run in the background for the length of a test, in front of the
// real room table with no processes behind it (roomtabletest), and a
// bounded wait for a condition the server reaches asynchronously.
package edgetest

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

// Server is what a front-end offers the tests: serving until its context
// is cancelled.
type Server interface {
	Serve(ctx context.Context) error
}

// Start applies tweak (when not nil) to cfg, builds a front-end from it in
// front of a new empty table, the one production runs (its seat rules, ids
// and registrations), and serves it until the test ends (see Serve). Each
// package keeps its own Config; only the order of setting up is shared.
func Start[C any, S Server](t testing.TB, cfg C, tweak func(*C), build func(C, *roomtabletest.Rooms) (S, error)) (S, *roomtabletest.Rooms) {
	t.Helper()
	if tweak != nil {
		tweak(&cfg)
	}
	table := roomtabletest.New(t, roomtable.Config{})
	srv, err := build(cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, srv.Serve)
	return srv, table
}

// Serve runs serve in its own goroutine until the test ends, then cancels
// its context, waits for it to return and fails the test if it returned an
// error.
func Serve(t testing.TB, serve func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// Limits are the default limits with rate and burst for every source, for
// the guard of an edge under test.
func Limits(rate float64, burst int) limit.Config {
	c := limit.DefaultConfig()
	c.Rate, c.Burst = rate, burst
	return c
}

// Eventually polls cond until it holds; it fails the test after a generous
// bound so that a broken build cannot hang.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// HoldSeats holds n seats in room id for players on their way in, as n
// JOINs would: the real table counts only the seats it holds itself, not
// a row's Seats.
func HoldSeats(t testing.TB, table room.Table, id uint32, n int) {
	t.Helper()
	for i := range n {
		player := netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, 200}), uint16(1+i))
		if _, err := table.Join(context.Background(), id, player, room.Unproven); err != nil {
			t.Fatalf("seat %d of room %d: %v", i+1, id, err)
		}
	}
}

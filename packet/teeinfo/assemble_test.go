package teeinfo

import (
	"errors"
	"testing"
)

func parsed(t *testing.T, wire string) *Reply {
	t.Helper()
	r, err := ParseReply([]byte(wire))
	if err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestAssemblerOrderAndErrors(t *testing.T) {
	main, more := parsed(t, goldenExtended), parsed(t, goldenMore)

	var a Assembler
	if done, err := a.Add(more); done || err != nil {
		t.Fatalf("more first: %v, %v", done, err)
	}
	if done, err := a.Add(more); done || !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate more: %v, %v", done, err)
	}
	other := *main
	other.Info.Token++
	if done, err := a.Add(&other); done || !errors.Is(err, ErrToken) {
		t.Fatalf("other token: %v, %v", done, err)
	}
	if done, err := a.Add(main); !done || err != nil {
		t.Fatalf("main last: %v, %v", done, err)
	}
	got := a.Info()
	if len(got.Players) != 2 || got.Players[0] != goldenPlayers[0] || got.Players[1] != goldenPlayers[1] || got.Name != "Room 1" {
		t.Fatalf("assembled %+v", got)
	}
	if done, err := a.Add(main); !done || !errors.Is(err, ErrDuplicate) {
		t.Fatalf("main again: %v, %v", done, err)
	}
}

func TestAssemblerTooMany(t *testing.T) {
	main, more := parsed(t, goldenExtended), parsed(t, goldenMore)
	var a Assembler
	if _, err := a.Add(main); err != nil {
		t.Fatal(err)
	}
	extra := *more
	extra.PacketNo = 2
	extra.Info.Players = append(extra.Info.Players, goldenPlayers...)
	if done, err := a.Add(&extra); done || !errors.Is(err, ErrTooManyPlayers) {
		t.Fatalf("3 players for 2 announced: %v, %v", done, err)
	}
	// The refusal left the assembler as it was.
	if done, err := a.Add(more); !done || err != nil {
		t.Fatalf("then the right one: %v, %v", done, err)
	}

	// A main packet that announces fewer clients than already arrived.
	a.Reset()
	if _, err := a.Add(more); err != nil {
		t.Fatal(err)
	}
	few := *main
	few.Info.NumClients = 1
	if _, err := a.Add(&few); !errors.Is(err, ErrTooManyPlayers) {
		t.Fatalf("announced 1 after 1 + 1: %v", err)
	}
	neg := *main
	neg.Info.NumClients = -1
	a.Reset()
	if _, err := a.Add(&neg); !errors.Is(err, ErrTooManyPlayers) {
		t.Fatalf("negative count: %v", err)
	}
	if _, err := a.Add(&Reply{}); !errors.Is(err, ErrType) {
		t.Fatalf("no kind: %v", err)
	}
	bad := *more
	bad.PacketNo = MaxPackets
	if _, err := a.Add(&bad); !errors.Is(err, ErrPacketNo) {
		t.Fatalf("packet 64: %v", err)
	}
}

func TestAssemblerVanilla(t *testing.T) {
	var a Assembler
	if _, err := a.Add(parsed(t, goldenMore)); err != nil {
		t.Fatal(err)
	}
	v := parsed(t, ddnetVanilla)
	v.Info.NumClients = 20 // a vanilla list may be shorter than its count
	if done, err := a.Add(v); !done || err != nil {
		t.Fatalf("vanilla: %v, %v", done, err)
	}
	if got := a.Info(); got.Name != "Foyer test [0/64]" || len(got.Players) != 0 || got.NumClients != 20 {
		t.Fatalf("vanilla info %+v", got)
	}
	// An extended reply after it starts over.
	if done, err := a.Add(parsed(t, goldenExtended)); done || err != nil {
		t.Fatalf("extended after vanilla: %v, %v", done, err)
	}
}

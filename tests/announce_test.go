package tests

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// Foyer B announces its rooms to Foyer A's GG2-style port, for UDP, which
// A lets in: A lists them in its GG2 list at B's room ports, and never
// offers them in native LIST, since nothing proved their address; a room B
// reaps leaves A; when B shuts down, its remaining rooms leave A too.
func TestAnnounceToSecondFoyer(t *testing.T) {
	a := gg2Start(t, "udp_transport = true")
	ac := newClient(t, "127.0.0.1", a.lobby)
	var aseq seqs
	onA := func(port uint16) bool {
		return len(gg2At(gg2List(t, a.gg2, gg2.GG2LobbyUUID), port)) == 1
	}

	// Cleanups run last first: this one runs after B is stopped and
	// before A is.
	var kept uint16
	t.Cleanup(func() {
		if t.Failed() || kept == 0 {
			return
		}
		for deadline := time.Now().Add(5 * time.Second); onA(kept); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("B's room at port %d still listed by A after B shut down", kept)
				return
			}
		}
	})
	// B's own [gg2] front-end stays off: announcing works without it.
	b := startServer(t, gg2Limits, gg2Section(fmt.Sprintf("announce = \"%v\"\nannounce_interval = \"200ms\"", a.gg2)))
	bc := newClient(t, "127.0.0.1", b.lobby)
	var bseq seqs
	reapedID, reapedPort := bc.request(compact, createRoom, bseq.next(), nil).roomPort(t)
	keptID, keptPort := bc.request(compact, createRoom, bseq.next(), nil).roomPort(t)
	gg2Eventually(t, "B's rooms listed by A", func() bool { return onA(reapedPort) && onA(keptPort) })
	at := gg2At(gg2List(t, a.gg2, gg2.GG2LobbyUUID), keptPort)[0]
	if at.Slots != 4 || kv(at, "name") != fmt.Sprintf("Foyer room %d", keptID) || kv(at, "game") != "foyer" {
		t.Errorf("B's room %d listed by A as %+v", keptID, at)
	}
	if r := nativeAt(ac.list(aseq.next()), keptPort); len(r) != 0 {
		t.Errorf("B's unchecked room offered natively by A as %+v", r)
	}

	if err := syscall.Kill(b.instancePID(reapedID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gg2Eventually(t, "B's reaped room gone from A", func() bool { return !onA(reapedPort) })
	if !onA(keptPort) {
		t.Error("B's other room left A too")
	}
	kept = keptPort
}

package instance

import (
	"math"
	"strings"
	"testing"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/packet"
)

// A kept program's account is its own word: counts are bounded, texts
// cut; a change is sent at once, the same account again rides on the
// next heartbeat only, and a heartbeat without a fresh account carries
// none.
func TestSetDetails(t *testing.T) {
	r := newReporter(nil)
	r.SetDetails(Details{Players: 1 << 20, MaxPlayers: -3, Name: strings.Repeat("n", 1000), Game: "DM", Map: "dm1", Password: true})
	sent := r.take()
	if len(sent) != 1 {
		t.Fatalf("%d reports for a change", len(sent))
	}
	d := sent[0].GetDetails()
	if sent[0].GetPlayers() != math.MaxUint16 || d.GetMaxPlayers() != 0 || len(d.GetName()) != maxDetailText ||
		d.GetGame() != "DM" || d.GetMap() != "dm1" || !d.GetPassword() {
		t.Fatalf("reported %v", sent[0])
	}
	if hb := r.heartbeat(); hb.GetDetails() != nil {
		t.Fatalf("a heartbeat with no account since: %v", hb)
	}
	r.SetDetails(Details{Players: 1 << 20, MaxPlayers: -3, Name: strings.Repeat("n", 1000), Game: "DM", Map: "dm1", Password: true})
	if sent := r.take(); len(sent) != 0 {
		t.Fatalf("the same account sent at once: %v", sent)
	}
	if hb := r.heartbeat(); hb.GetDetails() == nil || r.heartbeat().GetDetails() != nil {
		t.Fatal("the same account again rides on one heartbeat")
	}
	if st := r.current(); st.GetDetails() == nil {
		t.Fatal("a new watcher does not learn the account")
	}
}

// A kept program's end finishes the room with its status, and makes the
// process exit 1; a game's own Finished carries a clean exit.
func TestExitedFinishes(t *testing.T) {
	r := newReporter(nil)
	r.Exited(-1, "SIGKILL")
	<-r.finished
	last := r.take()
	if len(last) != 1 || last[0].GetState() != instancepb.State_STATE_FINISHED ||
		last[0].GetExit().GetCode() != -1 || last[0].GetExit().GetSignal() != "SIGKILL" || r.exitCode() != 1 {
		t.Fatalf("reported %v, exit code %d", last, r.exitCode())
	}
	r.SetState(packet.Waiting) // nothing after the end
	if len(r.take()) != 0 {
		t.Fatal("a report after the end")
	}

	g := newReporter(nil)
	g.SetState(packet.Finished)
	if last := g.take(); len(last) != 1 || last[0].GetExit() == nil || last[0].GetExit().GetCode() != 0 || g.exitCode() != 0 {
		t.Fatalf("a game's end: %v", last)
	}
}

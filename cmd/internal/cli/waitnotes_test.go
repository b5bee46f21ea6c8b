package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/lobby/client/clienttest"
	"github.com/foyerlobby/foyer/packet"
)

// Requests the lobby drops, as one rate-limiting this host does: after
// quietFor the command says what each waits for, then announces its
// retry; stdout holds the JSON alone. (A create lists first.)
func TestCreateSaysWhatItWaitsFor(t *testing.T) {
	l := clienttest.Start(t)
	l.DropFirst(1)
	// An attempt far longer than quietFor: the first note comes while
	// attempt 1 waits.
	code, out, errOut := run(t, "create", "--json", "--timeout", "3s", l.Addr.String())
	var seat seatJSON
	if code != 0 || json.Unmarshal([]byte(out), &seat) != nil || seat.Room != 1 {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	note := "foyer create: waiting for %s from %s (attempt 1 of 3, up to 3s each); the lobby may be rate-limiting this host\n" +
		"foyer create: no answer in 3s; asking again (attempt 2 of 3)\n"
	want := fmt.Sprintf(note, "ROOM_LIST", l.Addr) + fmt.Sprintf(note, "ROOM_CREATED or JOIN_FAILED", l.Addr)
	if errOut != want {
		t.Fatalf("create's stderr =\n%s\nwant\n%s", errOut, want)
	}
}

// notesAt is a waitNotes whose quietFor has not run out: a test calls
// speak itself.
func notesAt(w *bytes.Buffer) *waitNotes {
	n := newWaitNotes("rooms", w)
	n.timer = time.AfterFunc(time.Hour, func() {})
	return n
}

func TestWaitNotesText(t *testing.T) {
	lobby := netip.MustParseAddrPort("192.0.2.7:7777")
	at := func(n int, refused bool) client.Attempt {
		return client.Attempt{Request: packet.ListRooms, Lobby: lobby, N: n, Of: 3, Timeout: 2 * time.Second,
			Refused: refused, Awaiting: "ROOM_LIST"}
	}

	var b bytes.Buffer
	n := notesAt(&b)
	n.attempt(at(1, false))
	n.attempt(at(2, false)) // before quietFor: nothing to say yet
	if b.Len() != 0 {
		t.Fatalf("a note before quietFor ran out: %q", b.String())
	}
	n.speak(n.gen)
	n.attempt(at(3, true))
	n.stop()
	n.speak(n.gen) // a timer that fired as the request ended
	n.attempt(at(3, false))
	want := "foyer rooms: waiting for ROOM_LIST from 192.0.2.7:7777 (attempt 2 of 3, up to 2s each); the lobby may be rate-limiting this host\n" +
		"foyer rooms: nothing listens on 192.0.2.7:7777; asking again (attempt 3 of 3)\n"
	if b.String() != want {
		t.Fatalf("notes =\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	n = notesAt(&b)
	n.attempt(at(2, true))
	n.speak(n.gen)
	want = "foyer rooms: waiting for ROOM_LIST from 192.0.2.7:7777 (attempt 2 of 3, up to 2s each); nothing listened on that port a moment ago\n"
	if b.String() != want {
		t.Fatalf("note after a refusal = %q, want %q", b.String(), want)
	}

	// A command's next request starts quiet again: its first attempt is
	// no retry, and the note of the request before does not speak for it.
	b.Reset()
	n = notesAt(&b)
	n.attempt(at(2, false))
	n.speak(n.gen)
	old := n.gen
	create := client.Attempt{Request: packet.CreateRoom, Lobby: lobby, N: 1, Of: 3, Timeout: 2 * time.Second,
		Awaiting: "ROOM_CREATED or JOIN_FAILED"}
	n.attempt(create)
	n.speak(old) // the first request's timer, late
	n.stop()
	want = "foyer rooms: waiting for ROOM_LIST from 192.0.2.7:7777 (attempt 2 of 3, up to 2s each); the lobby may be rate-limiting this host\n"
	if b.String() != want {
		t.Fatalf("notes over two requests =\n%s\nwant\n%s", b.String(), want)
	}

	var none *waitNotes
	none.stop() // a command that narrates nothing
}

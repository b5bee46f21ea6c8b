package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
)

// quietFor is how long a lobby request waits in silence before the
// command says what it is waiting for. Without a word a person sees a
// hang: a lobby that rate-limits a host drops its requests unanswered, and
// the client only sends again when an attempt times out (5 s by default).
const quietFor = time.Second

// waitingAbout is what the help of a command that asks a lobby says of
// the notes.
var waitingAbout = fmt.Sprintf(`A request still unanswered after %v is reported on stderr, with every
retry after that: the lobby may be rate-limiting this host. stdout gets
the result alone, so --json output stays one JSON value.`, quietFor)

// waitNotes narrates each lobby request of a command on stderr once it
// has gone quietFor without an answer: what it waits for, then every
// retry. A request's first attempt starts the quiet again. Only stderr:
// stdout keeps the result alone, so --json stays one JSON value. A nil
// *waitNotes says nothing.
type waitNotes struct {
	cmd string
	w   io.Writer

	mu    sync.Mutex
	last  client.Attempt
	timer *time.Timer // started by a request's first attempt
	gen   int         // which request the timer is about
	spoke bool        // the first note is out: every retry gets one
	over  bool
}

func newWaitNotes(cmd string, w io.Writer) *waitNotes {
	return &waitNotes{cmd: cmd, w: w}
}

// attempt is the client's WithAttemptFunc.
func (n *waitNotes) attempt(a client.Attempt) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.over {
		return
	}
	n.last = a
	switch {
	case n.timer == nil || a.N == 1:
		if n.timer != nil {
			n.timer.Stop()
		}
		n.gen++
		n.spoke = false
		gen := n.gen
		n.timer = time.AfterFunc(quietFor, func() { n.speak(gen) })
	case n.spoke:
		why := fmt.Sprintf("no answer in %v", a.Timeout)
		if a.Refused {
			why = fmt.Sprintf("nothing listens on %s", a.Lobby)
		}
		fmt.Fprintf(n.w, "foyer %s: %s; asking again (attempt %d of %d)\n", n.cmd, why, a.N, a.Of)
	}
}

// speak writes the first note about request gen, about its attempt in
// flight; nothing once that request is over.
func (n *waitNotes) speak(gen int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.over || gen != n.gen {
		return
	}
	n.spoke = true
	a := n.last
	hint := "the lobby may be rate-limiting this host"
	if a.Refused {
		hint = "nothing listened on that port a moment ago"
	}
	fmt.Fprintf(n.w, "foyer %s: waiting for %s from %s (attempt %d of %d, up to %v each); %s\n",
		n.cmd, a.Awaiting, a.Lobby, a.N, a.Of, a.Timeout, hint)
}

// stop ends the notes once the request is over: nothing is written after
// it returns.
func (n *waitNotes) stop() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.over = true
	if n.timer != nil {
		n.timer.Stop()
	}
}

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/foyerlobby/foyer/lobby/client"
	"github.com/foyerlobby/foyer/packet"
)

var watchHelp = Help{
	Usage: []string{"foyer watch [flags] [ADDR]"},
	About: `Show the rooms of the lobby at ADDR (default ` + defaultLobby + `), refreshed every
--interval until Ctrl-C. On a terminal the table is redrawn in place; other
output gets one table per refresh, without escape codes.

AGE is how long this watch has seen the room: a room list carries no age.
Rooms already there at the first refresh are older than shown, marked '>'.
A lobby that does not answer is shown as such and asked again next time.`,
	Example: []string{
		"foyer watch 192.168.1.20",
		"foyer watch --interval 5s --count 3 127.0.0.1:7777 > rooms.log",
	},
}

func Watch(args []string, stdout, stderr io.Writer) int {
	c := New("watch", watchHelp, stdout, stderr)
	interval := c.Flags.Duration("interval", time.Second, "time between refreshes")
	count := c.Flags.Int("count", 0, "stop after this many refreshes (0: until Ctrl-C)")
	// Each refresh is itself a retry: one short attempt keeps the table live,
	// and the table says when the lobby is silent.
	c.lobbyFlags(time.Second, 1).notes = nil
	pos, code, ok := c.Parse(args)
	if !ok {
		return code
	}
	if *interval <= 0 {
		return c.UsageError("--interval must be positive, not %v", *interval)
	}
	if *count < 0 {
		return c.UsageError("--count must not be negative, not %d", *count)
	}
	return c.withLobby(pos, func(lc *client.Client) error {
		ctx, stop := interruptContext()
		defer stop()
		w := &watcher{lobby: lc.Addr().String(), interval: *interval, terminal: IsTerminal(stdout), seen: map[uint32]time.Time{}}
		tick := time.NewTicker(*interval)
		defer tick.Stop()
		for n := 1; ; n++ {
			rooms, err := lc.List(ctx)
			if ctx.Err() != nil {
				break // Ctrl-C while asking: the answer no longer matters
			}
			stdout.Write(w.frame(rooms, err, time.Now()))
			if *count > 0 && n >= *count {
				break
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		if w.terminal {
			fmt.Fprintln(stdout)
		}
		return nil // a lobby that does not answer is shown, not failed
	})
}

// watcher renders the refreshes of one watch and remembers when it first
// saw each room.
type watcher struct {
	lobby    string
	interval time.Duration
	terminal bool
	frames   int
	first    time.Time // the first refresh that got rooms; zero before it
	seen     map[uint32]time.Time
}

// clearScreen moves the cursor home and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// frame renders one refresh. A whole frame is written at once, so a
// terminal never shows half a table.
func (w *watcher) frame(rooms []packet.Room, err error, now time.Time) []byte {
	var b bytes.Buffer
	if w.terminal {
		b.WriteString(clearScreen)
	} else if w.frames > 0 {
		b.WriteString("\n")
	}
	w.frames++
	fmt.Fprintf(&b, "%s  %s  every %v", now.UTC().Format("15:04:05"), w.lobby, w.interval)
	if w.terminal {
		b.WriteString("  (Ctrl-C to quit)")
	}
	b.WriteString("\n")
	if err != nil {
		// Keep the ages: a lobby that missed one answer has not lost its rooms.
		fmt.Fprintf(&b, "no answer: %v\n", err)
		return b.Bytes()
	}
	if w.first.IsZero() {
		w.first = now
	}
	w.track(rooms, now)
	if len(rooms) == 0 {
		b.WriteString("no rooms\n")
		return b.Bytes()
	}
	writeRooms(&b, rooms, roomColumn{"AGE", func(r packet.Room) string { return w.age(r.ID, now) }})
	return b.Bytes()
}

// track notes rooms seen for the first time and forgets rooms gone, so a
// reused id starts a new age.
func (w *watcher) track(rooms []packet.Room, now time.Time) {
	present := make(map[uint32]bool, len(rooms))
	for _, r := range rooms {
		present[r.ID] = true
		if _, ok := w.seen[r.ID]; !ok {
			w.seen[r.ID] = now
		}
	}
	for id := range w.seen {
		if !present[id] {
			delete(w.seen, id)
		}
	}
}

// age is how long room id has been seen, marked as a lower bound when it
// was there from the first refresh.
func (w *watcher) age(id uint32, now time.Time) string {
	since := w.seen[id]
	s := shortDuration(now.Sub(since))
	if since.Equal(w.first) {
		return ">" + s
	}
	return s
}

// shortDuration renders d in whole seconds, minutes or hours: 7s, 3m05s,
// 2h04m.
func shortDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// IsTerminal reports whether w is a character device, where redrawing in
// place makes sense.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

package announce

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/internal/edgetest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve runs s until the test ends.
func serve(t *testing.T, s interface{ Serve(context.Context) error }) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	stopped := false
	t.Cleanup(func() {
		cancel()
		if !stopped {
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	return func() {
		cancel()
		stopped = true
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// upstreamTTL is how long the upstream lists a room after its last
// registration: 40 announce intervals of the tests, so that only an
// announcer stalled for 2 s could let a room lapse.
const upstreamTTL = 2 * time.Second

// upstream is a GG2-style front-end on loopback, as a second Foyer runs it.
func upstream(t *testing.T) (*gg2server.Server, *roomtabletest.Rooms) {
	t.Helper()
	cfg := gg2server.DefaultConfig()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.LegacyListen = netip.AddrPort{} // not the well-known port: the host may hold it
	cfg.TTL = upstreamTTL
	cfg.UDPTransport = true // the announcer registers rooms for UDP
	table := roomtabletest.New(t, roomtable.Config{})
	srv, err := gg2server.New(cfg, table, table, limit.NewGuard(edgetest.Limits(1000, 1000)), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, srv)
	return srv, table
}

func key(port uint16) string { return "gg2 127.0.0.1:" + strconv.Itoa(int(port)) + "/udp" }

func TestAnnounceToGG2FrontEnd(t *testing.T) {
	up, upTable := upstream(t)
	local := roomtabletest.New(t, roomtable.Config{})
	a1 := local.Add(room.Room{Port: 30001, State: packet.Waiting, Players: 1, MaxPlayers: 4})
	if _, err := local.Register("k", room.Listing{Addr: netip.MustParseAddrPort("192.0.2.1:8190"), MaxPlayers: 8,
		Name: "someone else's"}); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Upstream = up.Addrs()[0].String()
	cfg.Interval = 50 * time.Millisecond
	a, err := New(cfg, local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	stop := serve(t, a)

	eventually(t, "room 1 upstream", func() bool { _, ok := upTable.Registered(key(30001)); return ok })
	r, _ := upTable.Registered(key(30001))
	if r.Name != fmt.Sprint("Foyer room ", a1.ID) || r.Game != "foyer" || r.Map != "default" || r.Players != 1 || r.MaxPlayers != 4 {
		t.Errorf("upstream room = %+v", r)
	}

	a3 := local.Add(room.Room{Port: 30003, State: packet.Waiting, MaxPlayers: 2, Source: "exec", Name: "DDNet", Map: "dm1"})
	eventually(t, "room 3 upstream", func() bool { r, ok := upTable.Registered(key(30003)); return ok && r.Map == "dm1" })

	a1.Players = 3
	local.Update(a1)
	eventually(t, "players upstream", func() bool { r, _ := upTable.Registered(key(30001)); return r.Players == 3 })

	// Registered again every interval, the rooms outlive the upstream's
	// TTL (100 registrations of two rooms, one each per 50 ms interval,
	// take 2.5 s): the upstream room keeps its id, which it would not
	// after an expiry.
	first, _ := upTable.Registered(key(30001))
	eventually(t, "re-registrations", func() bool { return up.Stats().Requests["register"] >= 100 })
	if keys := upTable.RegisteredKeys(); len(keys) != 2 {
		t.Fatalf("upstream has %v, want the two own rooms", keys)
	}
	if now, _ := upTable.Registered(key(30001)); now.ID != first.ID {
		t.Errorf("upstream room expired in between (id %d, then %d)", first.ID, now.ID)
	}

	local.Reap(a1.ID)
	// Waiting for the unregister itself, not the key's absence, which the
	// upstream's expiry would also bring.
	eventually(t, "reaped room unregistered", func() bool { return up.Stats().Requests["unregister"] == 1 })
	if _, ok := upTable.Registered(key(30001)); ok {
		t.Error("reaped room still upstream")
	}
	if _, ok := upTable.Registered(key(30003)); !ok {
		t.Error("room 3 gone with room 1")
	}

	stop()
	eventually(t, "all unregistered at shutdown", func() bool { return up.Stats().Requests["unregister"] == 2 })
	if _, ok := upTable.Registered(key(a3.Port)); ok {
		t.Error("room 3 still upstream")
	}
	if st := a.Stats(); st.Unregisters != 2 || st.Rooms != 0 || st.SendErrors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// deaf is a room table whose watchers miss every event, as a slow reader
// may: only the periodic sync with List sees changes.
type deaf struct{ *roomtabletest.Rooms }

func (deaf) Watch(ctx context.Context) <-chan room.Event {
	ch := make(chan room.Event)
	context.AfterFunc(ctx, func() { close(ch) })
	return ch
}

// Rooms appearing and reaped while the watcher misses events are caught
// by the next sync with the table.
func TestSyncCatchesMissedEvents(t *testing.T) {
	up, upTable := upstream(t)
	local := roomtabletest.New(t, roomtable.Config{})
	cfg := DefaultConfig()
	cfg.Upstream = up.Addrs()[0].String()
	cfg.Interval = 50 * time.Millisecond
	a, err := New(cfg, deaf{local}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, a)
	r := local.Add(room.Room{Port: 30001, State: packet.Waiting, MaxPlayers: 4})
	eventually(t, "announced", func() bool { _, ok := upTable.Registered(key(30001)); return ok })
	local.Reap(r.ID)
	eventually(t, "withdrawn", func() bool { return up.Stats().Requests["unregister"] == 1 })
	if st := a.Stats(); st.Unregisters != 1 || st.Rooms != 0 {
		t.Errorf("stats %+v", st)
	}
}

// An upstream that is down refuses the registrations (ICMP, seen as an
// error on a later send): they are counted and summed into one log line
// per interval.
func TestSendErrorsReported(t *testing.T) {
	down := udptest.Listen(t, "127.0.0.1")
	addr := down.LocalAddr().String()
	down.Close() // nothing listens on the port now
	local := roomtabletest.New(t, roomtable.Config{})
	local.Add(room.Room{Port: 30001, State: packet.Waiting, MaxPlayers: 4})
	var logs logtest.Buffer
	cfg := DefaultConfig()
	cfg.Upstream = addr
	cfg.Interval = 20 * time.Millisecond
	a, err := New(cfg, local, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	serve(t, a)
	eventually(t, "a reported send error", func() bool {
		return a.Stats().SendErrors > 0 && strings.Contains(logs.String(), `"message":"announce send errors"`)
	})
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l struct {
			Message    string
			SendErrors *uint64 `json:"send_errors"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Message == "announce send errors" && (l.SendErrors == nil || *l.SendErrors == 0) {
			t.Errorf("report line without errors: %s", line)
		}
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/lobby/client/clienttest"
	"github.com/foyerlobby/foyer/packet"
)

// run runs a client command line (its name, then its arguments) and
// returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	c, ok := Find(Clients, args[0])
	if !ok {
		t.Fatalf("no client command %q", args[0])
	}
	var out, errOut bytes.Buffer
	code = c.Run(args[1:], &out, &errOut)
	return code, out.String(), errOut.String()
}

var testRooms = []packet.Room{
	{ID: 1, Players: 1, MaxPlayers: 4, Port: 30000, State: packet.Waiting},
	{ID: 12, Players: 4, MaxPlayers: 4, Port: 30011, State: packet.Playing},
}

func TestClientCommandsHelp(t *testing.T) {
	for _, name := range []string{"rooms", "create", "join", "quick", "watch", "play"} {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := run(t, name, flag)
			if code != 0 || errOut != "" {
				t.Errorf("foyer %s %s: exit %d, stderr %q; want 0 and nothing", name, flag, code, errOut)
			}
			for _, want := range []string{"Usage: foyer " + name, "\nFlags:\n", "\nExample:\n  foyer " + name + " "} {
				if !strings.Contains(out, want) {
					t.Errorf("foyer %s %s lacks %q:\n%s", name, flag, want, out)
				}
			}
		}
	}
}

func TestClientUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the first line of stderr
	}{
		{[]string{"join", "127.0.0.1:7777"}, `foyer join: room "127.0.0.1:7777" is not a room id (a number from 0 to 4294967295)`},
		{[]string{"join", "127.0.0.1:7777", "x"}, `foyer join: room "x" is not a room id (a number from 0 to 4294967295)`},
		{[]string{"join", "127.0.0.1:7777", "4294967296"}, `foyer join: room "4294967296" is not a room id (a number from 0 to 4294967295)`},
		{[]string{"rooms", "a:1", "b:2"}, "foyer rooms: takes at most one ADDR, got 2 arguments"},
		{[]string{"rooms", "--lan", "127.0.0.1"}, `foyer rooms: --lan finds lobbies itself; it takes no ADDR (got "127.0.0.1")`},
		{[]string{"rooms", "--lan", "--port", "70000"}, "foyer rooms: --port 70000 is not a UDP port"},
		{[]string{"rooms", "--lan", "--broadcast", "nope"}, `foyer rooms: --broadcast: ParseAddr("nope"): unable to parse IP`},
		{[]string{"create", "--bogus"}, "foyer create: flag provided but not defined: -bogus"},
		{[]string{"create", "--timeout", "0s"}, "foyer create: --timeout must be positive, not 0s"},
		{[]string{"create", "--attempts", "0"}, "foyer create: --attempts must be at least 1, not 0"},
		{[]string{"watch", "--interval", "0s"}, "foyer watch: --interval must be positive, not 0s"},
		{[]string{"watch", "--count", "-1"}, "foyer watch: --count must not be negative, not -1"},
	} {
		code, out, errOut := run(t, tc.args...)
		first, rest, _ := strings.Cut(errOut, "\n")
		if code != 2 || out != "" || first != tc.want {
			t.Errorf("foyer %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
		if wantRest := fmt.Sprintf("Run 'foyer %s --help' for usage.\n", tc.args[0]); rest != wantRest {
			t.Errorf("foyer %s: stderr ends %q, want %q", strings.Join(tc.args, " "), rest, wantRest)
		}
	}
}

func TestRoomsTable(t *testing.T) {
	l := clienttest.Start(t)
	code, out, errOut := run(t, "rooms", l.Addr.String())
	if want := fmt.Sprintf("no rooms on %s\n", l.Addr); code != 0 || out != want {
		t.Fatalf("rooms of an empty lobby: exit %d, %q %q; want %q", code, out, errOut, want)
	}

	l.SetRooms(testRooms...)
	want := "" +
		"ROOM  STATE    PLAYERS  PORT\n" +
		"1     waiting  1/4      30000\n" +
		"12    playing  4/4      30011\n"
	for _, args := range [][]string{
		{"rooms", l.Addr.String()},
		{"rooms", "--timeout", "2s", l.Addr.String()},
		{"rooms", l.Addr.String(), "--timeout", "2s"},
		{"rooms", "--legacy", "--", l.Addr.String()},
	} {
		code, out, errOut := run(t, args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("foyer %s: exit %d, stderr %q, stdout\n%s\nwant\n%s", strings.Join(args, " "), code, errOut, out, want)
		}
	}
}

func TestRoomsJSON(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(testRooms...)
	for _, args := range [][]string{{"rooms", "--json", l.Addr.String()}, {"rooms", l.Addr.String(), "--json"}} {
		code, out, errOut := run(t, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("foyer %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		var got lobbyJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("rooms --json printed %q: %v", out, err)
		}
		want := lobbyJSON{Lobby: l.Addr.String(), Rooms: []roomJSON{
			{ID: 1, State: "waiting", Players: 1, MaxPlayers: 4, Port: 30000},
			{ID: 12, State: "playing", Players: 4, MaxPlayers: 4, Port: 30011},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("rooms --json = %+v, want %+v", got, want)
		}
	}

	// An empty lobby is an empty array, not null.
	l.SetRooms()
	_, out, _ := run(t, "rooms", "--json", l.Addr.String())
	if !strings.Contains(out, `"rooms": []`) {
		t.Fatalf("rooms --json of an empty lobby = %s, want \"rooms\": []", out)
	}
}

func TestRoomsNoAnswer(t *testing.T) {
	l := clienttest.Start(t)
	l.Silence(true)
	code, out, errOut := run(t, "rooms", "--timeout", "20ms", "--attempts", "2", l.Addr.String())
	want := fmt.Sprintf("foyer: list %s: timeout: no ROOM_LIST after 2 attempts of 20ms\n", l.Addr)
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("rooms of a silent lobby: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
	}
}

func TestCreateAndJoinCommands(t *testing.T) {
	l := clienttest.Start(t)
	code, out, errOut := run(t, "create", l.Addr.String())
	if want := "created room 1, port 30000: game address 127.0.0.1:30000\n"; code != 0 || out != want || errOut != "" {
		t.Fatalf("create: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}

	code, out, errOut = run(t, "join", "--json", l.Addr.String(), "1")
	var got seatJSON
	if code != 0 || errOut != "" || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("join --json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if want := (seatJSON{Lobby: l.Addr.String(), Room: 1, Port: 30000, Addr: "127.0.0.1:30000"}); got != want {
		t.Fatalf("join --json = %+v, want %+v", got, want)
	}

	code, out, errOut = run(t, "join", l.Addr.String(), "42")
	want := fmt.Sprintf("foyer: join %s room 42: lobby answered JOIN_FAILED (no such room (or not one you may join by id))\n", l.Addr)
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("join of an unknown room: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
	}

	l.FailCreate(true)
	code, _, errOut = run(t, "create", "--legacy", l.Addr.String())
	want = fmt.Sprintf("foyer: create %s: lobby answered JOIN_FAILED (the lobby could not start a room: it runs as many as it may, is draining, "+
		"holds your network's share, or its game server failed to start; its log says which)\n", l.Addr)
	if code != 1 || errOut != want {
		t.Fatalf("refused create: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	reqs := l.Requests()
	if last := reqs[len(reqs)-1]; last.Framing != packet.Legacy || last.Type != packet.CreateRoom {
		t.Fatalf("create --legacy sent %+v, want a legacy CREATE", last)
	}
}

func TestRoomsLAN(t *testing.T) {
	a := clienttest.Start(t)
	a.SetRooms(testRooms[0])
	b := clienttest.StartAt(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), a.Addr.Port()))
	port := fmt.Sprint(a.Addr.Port())
	lan := []string{"rooms", "--lan", "--port", port, "--wait", "300ms", "--broadcast", "127.0.0.1,127.0.0.2"}

	code, out, errOut := run(t, lan...)
	want := "" +
		"LOBBY            ROOM  STATE    PLAYERS  PORT\n" +
		"127.0.0.1:" + port + "  1     waiting  1/4      30000\n" +
		"127.0.0.2:" + port + "  (no rooms)\n"
	if code != 0 || out != want || errOut != "" {
		t.Fatalf("rooms --lan: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}

	code, out, _ = run(t, append(lan, "--json")...)
	var got []lobbyJSON
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("rooms --lan --json: exit %d, stdout %q", code, out)
	}
	wantJSON := []lobbyJSON{
		{Lobby: a.Addr.String(), Rooms: []roomJSON{{ID: 1, State: "waiting", Players: 1, MaxPlayers: 4, Port: 30000}}},
		{Lobby: b.Addr.String(), Rooms: []roomJSON{}},
	}
	if !reflect.DeepEqual(got, wantJSON) {
		t.Fatalf("rooms --lan --json = %+v, want %+v", got, wantJSON)
	}

	a.Silence(true)
	b.Silence(true)
	code, out, errOut = run(t, "rooms", "--lan", "--port", port, "--wait", "50ms", "--broadcast", "127.0.0.1")
	wantErr := fmt.Sprintf("foyer: rooms --lan: no lobby answered on UDP port %s within 50ms\n", port)
	if code != 1 || out != "" || errOut != wantErr {
		t.Fatalf("rooms --lan with nobody answering: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, wantErr)
	}
}

func TestWatchPlainOutput(t *testing.T) {
	l := clienttest.Start(t)
	l.SetRooms(testRooms...)
	code, out, errOut := run(t, "watch", "--interval", "10ms", "--count", "2", l.Addr.String())
	if code != 0 || errOut != "" {
		t.Fatalf("watch: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out, "\x1b") {
		t.Fatalf("watch wrote escape codes to a non-terminal:\n%q", out)
	}
	frames := strings.Split(out, "\n\n")
	if len(frames) != 2 {
		t.Fatalf("watch --count 2 printed %d frames:\n%s", len(frames), out)
	}
	for _, f := range frames {
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) != 4 || !strings.Contains(lines[0], l.Addr.String()) ||
			!strings.HasPrefix(lines[1], "ROOM  STATE    PLAYERS  PORT   AGE") ||
			!strings.HasPrefix(lines[2], "1     waiting  1/4      30000  >") {
			t.Fatalf("watch frame:\n%s", f)
		}
	}
}

func TestWatcherFrames(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	w := &watcher{lobby: "127.0.0.1:7777", interval: time.Second, terminal: true, seen: map[uint32]time.Time{}}
	one := testRooms[:1]
	both := testRooms

	f := string(w.frame(nil, fmt.Errorf("list 127.0.0.1:7777: timeout"), t0))
	want := clearScreen + "12:00:00  127.0.0.1:7777  every 1s  (Ctrl-C to quit)\nno answer: list 127.0.0.1:7777: timeout\n"
	if f != want {
		t.Fatalf("frame without an answer = %q, want %q", f, want)
	}
	w.frame(one, nil, t0.Add(time.Second)) // room 1 is there from the start
	w.frame(both, nil, t0.Add(76*time.Second))
	w.frame(one, fmt.Errorf("lost"), t0.Add(100*time.Second)) // a lost answer forgets nothing
	f = string(w.frame(both, nil, t0.Add(201*time.Second)))
	want = clearScreen + "12:03:21  127.0.0.1:7777  every 1s  (Ctrl-C to quit)\n" +
		"ROOM  STATE    PLAYERS  PORT   AGE\n" +
		"1     waiting  1/4      30000  >3m20s\n" +
		"12    playing  4/4      30011  2m05s\n"
	if f != want {
		t.Fatalf("frame =\n%s\nwant\n%s", f, want)
	}

	// Room 12 goes away and comes back: a new room under an old id.
	w.frame(one, nil, t0.Add(202*time.Second))
	f = string(w.frame(both, nil, t0.Add(205*time.Second)))
	if !strings.Contains(f, "12    playing  4/4      30011  0s\n") {
		t.Fatalf("a returning room id kept its age:\n%s", f)
	}
}

func TestLobbyAddr(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "127.0.0.1:7777",
		"192.168.1.20":     "192.168.1.20:7777",
		"lobby.example":    "lobby.example:7777",
		"127.0.0.1:9000":   "127.0.0.1:9000",
		"::1":              "[::1]:7777",
		"[::1]":            "[::1]:7777",
		"[::1]:9000":       "[::1]:9000",
		"lobby.example:80": "lobby.example:80",
	} {
		if got := lobbyAddr(in); got != want {
			t.Errorf("lobbyAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                   "0s",
		999 * time.Millisecond:              "0s",
		59 * time.Second:                    "59s",
		time.Minute + 5*time.Second:         "1m05s",
		2*time.Hour + 4*time.Minute + 3e9:   "2h04m",
		49*time.Hour + 59*time.Minute + 1e9: "49h59m",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

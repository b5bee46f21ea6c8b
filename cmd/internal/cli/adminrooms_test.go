package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/server/admin"
	"github.com/rs/zerolog"
)

// adminWith serves rooms on a real admin listener, with token if set, and
// returns its address.
func adminWith(t *testing.T, token string, rooms ...room.Room) string {
	t.Helper()
	src := admin.Sources{Rooms: func() room.Snapshot { return room.Snapshot{Version: 1, Rooms: rooms} }}
	srv, err := admin.New(admin.Config{Listen: "127.0.0.1:0", Token: token}, src, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.Addr().String()
}

func TestRoomsFromTheAdminListener(t *testing.T) {
	now := time.Now()
	a := room.Room{ID: 7, State: packet.Waiting, Players: 1, Seats: 1, MaxPlayers: 4, Port: 30000, Node: "a", StartedAt: now}
	b := room.Room{ID: 1 << 20, State: packet.Playing, Players: 3, MaxPlayers: 4, Port: 31000, Node: "b", StartedAt: now}

	oneHost := adminWith(t, "", a)
	code, out, errOut := run(t, "rooms", "--admin", oneHost)
	if want := "ROOM  STATE    PLAYERS  PORT\n7     waiting  2/4      30000\n"; code != 0 || out != want || errOut != "" {
		t.Errorf("one host: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}

	twoHosts := adminWith(t, "", a, b)
	want := "" +
		"ROOM     STATE    PLAYERS  PORT   HOST\n" +
		"7        waiting  2/4      30000  a\n" +
		"1048576  playing  3/4      31000  b\n"
	for _, addr := range []string{twoHosts, "http://" + twoHosts + "/"} {
		code, out, errOut = run(t, "rooms", "--admin", addr)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("--admin %s: exit %d, stderr %q, stdout\n%s\nwant\n%s", addr, code, errOut, out, want)
		}
	}
	code, out, _ = run(t, "rooms", "--admin", twoHosts, "--json")
	if code != 0 || !strings.Contains(out, `"host": "b"`) || !strings.Contains(out, `"id": 1048576`) {
		t.Errorf("--json: exit %d\n%s", code, out)
	}

	const secret = "s3cret-s3cret-s3cret-s3cret-s3cret"
	guarded := adminWith(t, secret, a, b)
	code, _, errOut = run(t, "rooms", "--admin", guarded)
	if code != 1 || !strings.Contains(errOut, "--token-file") {
		t.Errorf("without the token: exit %d, stderr %q", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(secret+"\n"), 0o600)
	if code, out, errOut = run(t, "rooms", "--admin", guarded, "--token-file", file); code != 0 || out != want {
		t.Errorf("with the token: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}

	for _, args := range [][]string{
		{"rooms", "--admin", twoHosts, "127.0.0.1:7777"},
		{"rooms", "--admin", twoHosts, "--lan"},
		{"rooms", "--token-file", file, "127.0.0.1:7777"},
	} {
		if code, _, errOut := run(t, args...); code != 2 || errOut == "" {
			t.Errorf("foyer %s: exit %d, stderr %q; want a usage error", strings.Join(args, " "), code, errOut)
		}
	}
}

package host_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// shortDir is a private directory, removed at the end of the test, with
// a name short enough for a unix socket's path under it (t.TempDir's may
// not be): a room's, or a process's temporary one.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// socketIn is the instance's socket in dir.
func socketIn(t *testing.T, dir string) string {
	t.Helper()
	socks, _ := filepath.Glob(filepath.Join(dir, "plugin*"))
	if len(socks) != 1 {
		t.Fatalf("sockets in %s: %v", dir, socks)
	}
	return socks[0]
}

// nextStatus waits for the next report on ch.
func nextStatus(t *testing.T, ch <-chan host.Status) host.Status {
	t.Helper()
	select {
	case st := <-ch:
		return st
	case <-time.After(patience):
		t.Fatal("no report")
		return host.Status{}
	}
}

// An instance launched to outlive its host is found by its socket: it says
// who it is, what its host asked it to keep, and reports to whoever
// attaches, who can stop it and learns how it ended. The host it was taken
// from gets it back with Rewatch.
func TestAttachTakesALaunchedInstanceOver(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	p, err := host.Launch(context.Background(), host.LaunchConfig{Cmd: selfCommand("game", ""), Dir: dir, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	a := instance.Assignment{RoomID: 42, Port: freePort(t), MaxPlayers: 3, Settings: map[string]string{"k": "v"}}
	if err := p.Start(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	// Three seats for the three sockets the test sends from.
	expires := time.UnixMilli(time.Now().Add(time.Minute).UnixMilli())
	kept := host.Kept{Listed: true, Seats: []room.Seat{
		{Player: netip.MustParseAddrPort("127.0.0.1:5000"), Expires: expires},
		{Player: netip.MustParseAddrPort("127.0.0.1:5001"), Expires: expires},
		{Player: netip.MustParseAddrPort("127.0.0.1:5002"), Expires: expires},
		{Player: netip.MustParseAddrPort("[::1]:5001"), Expires: time.UnixMilli(time.Now().Add(2 * time.Minute).UnixMilli()), Proven: true},
	}}
	if err := p.Keep(context.Background(), kept); err != nil {
		t.Fatal(err)
	}
	send(t, a.Port, "join")
	for nextStatus(t, p.Status()).Players != 1 {
	}

	q, d, err := host.Attach(context.Background(), socketIn(t, dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if !d.Started || d.Assignment.RoomID != 42 || d.Assignment.Port != a.Port || d.Assignment.MaxPlayers != 3 ||
		d.Assignment.Settings["k"] != "v" || !d.StartedAt.Equal(p.StartedAt()) || d.PID != p.PID() || q.PID() != p.PID() ||
		d.Status.Players != 1 || d.Runs || d.Kept.Listed != true || !slices.Equal(d.Kept.Seats, kept.Seats) {
		t.Fatalf("described %+v", d)
	}
	// The reports go to the one that attached: its first is the present.
	if st := nextStatus(t, q.Status()); st.Players != 1 {
		t.Fatalf("first report %+v", st)
	}
	send(t, a.Port, "state 1")
	for nextStatus(t, q.Status()).State != packet.Countdown {
	}
	// Given back, they go to the launching host again.
	if err := p.Rewatch(); err != nil {
		t.Fatal(err)
	}
	send(t, a.Port, "state 2")
	for nextStatus(t, p.Status()).State != packet.Playing {
	}

	// Taken over again, it tells its new host how it ended.
	if err := q.Rewatch(); err != nil {
		t.Fatal(err)
	}
	nextStatus(t, q.Status())
	q.Stop(patience)
	select {
	case <-q.Exited():
	case <-time.After(patience):
		t.Fatal("not stopped")
	}
	if code, sig := q.ExitStatus(); code != 0 || sig != "" {
		t.Fatalf("exit status %d %q", code, sig)
	}
	<-p.Exited()
}

// Attach tells a socket nothing listens on, and one that is no instance,
// from an instance.
func TestAttachRefusesWhatIsNoRoom(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	if _, _, err := host.Attach(context.Background(), filepath.Join(dir, "plugin1"), zerolog.Nop()); !errors.Is(err, host.ErrGone) {
		t.Fatalf("no socket: %v", err)
	}
	// An instance never given a room is no room, and is stopped.
	p, err := host.Launch(context.Background(), host.LaunchConfig{Cmd: selfCommand("game", ""), Dir: dir, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := host.Attach(context.Background(), socketIn(t, dir), zerolog.Nop()); !errors.Is(err, host.ErrNotARoom) {
		t.Fatalf("an unstarted instance: %v", err)
	}
	select {
	case <-p.Exited():
	case <-time.After(patience):
		p.Kill()
		t.Fatal("the unstarted instance was not stopped")
	}
}

// An instance whose host dies keeps playing for its grace, logging to its
// directory, and then stops its game and exits; attached in time, it lives
// on.
func TestOrphanEndsAfterItsGrace(t *testing.T) {
	t.Parallel()
	for _, adopt := range []bool{false, true} {
		dir := shortDir(t)
		hostCmd, file := selfCommandReportingChild(t, "grace-host")
		hostCmd.Env = append(hostCmd.Env, "FOYER_TEST_ROOM_DIR="+dir, "FOYER_TEST_PORT="+strconv.Itoa(int(freePort(t))))
		if err := hostCmd.Start(); err != nil {
			t.Fatal(err)
		}
		inst := readPID(t, file)
		hostCmd.Process.Kill()
		hostCmd.Wait()
		if !adopt {
			waitGone(t, inst)
			log, _ := os.ReadFile(filepath.Join(dir, instancepb.RoomLog))
			if !strings.Contains(string(log), "no host for 1s: stopping the game") {
				t.Fatalf("the orphan's log: %q", log)
			}
			continue
		}
		q, _, err := host.Attach(context.Background(), socketIn(t, dir), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // twice the grace, watched
		if !proc.Alive(inst) {
			t.Fatal("an adopted instance ended after the grace")
		}
		q.Kill()
		waitGone(t, inst)
	}
}

// A program that prints something else than the handshake is named for
// what it is, with what it printed.
func TestLaunchOfAGameServerSaysSo(t *testing.T) {
	t.Parallel()
	_, err := host.Launch(context.Background(), host.LaunchConfig{Cmd: selfCommand("garbage-stdout", ""), StartTimeout: patience})
	if !errors.Is(err, host.ErrNotAnInstance) || !strings.Contains(err.Error(), `it printed "hello, I am not a handshake"`) {
		t.Fatalf("launch: %v", err)
	}
}

// An instance launched in a room's directory needs nothing of the
// temporary directory: its socket, and the directory go-plugin makes for
// one, go in the room's. A host whose TMPDIR is gone still launches it.
func TestLaunchInARoomDirectoryNeedsNoTempDir(t *testing.T) {
	dir := shortDir(t)
	t.Setenv("TMPDIR", filepath.Join(dir, "gone"))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	p, err := host.Launch(ctx, host.LaunchConfig{Cmd: selfCommand("game", ""), Dir: dir})
	if err != nil {
		t.Fatalf("Launch with TMPDIR gone: %v", err)
	}
	kill(t, p)
}

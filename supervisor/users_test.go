package supervisor

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/room"
)

// A room's environment is PATH, its directory as HOME and the variables
// passed by name, nothing else of the lobby's; the built-in reference
// room runs on one processor unless a GOMAXPROCS is passed.
func TestRoomEnv(t *testing.T) {
	t.Setenv("PATH", "/bin")
	t.Setenv("FOYER_TEST_SECRET", "lobby's own")
	t.Setenv("TZ", "UTC")
	t.Setenv("GOMAXPROCS", "3")
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"built-in room", Config{PassEnv: []string{"TZ", "UNSET"}}, []string{"PATH=/bin", "HOME=/r", "TZ=UTC", "GOMAXPROCS=1"}},
		{"built-in room, GOMAXPROCS passed", Config{PassEnv: []string{"GOMAXPROCS"}}, []string{"PATH=/bin", "HOME=/r", "GOMAXPROCS=3"}},
		{"a game of its own", Config{Command: []string{"/game"}, PassEnv: []string{"TZ", "HOME"}}, []string{"PATH=/bin", "HOME=/r", "TZ=UTC"}},
	} {
		if got := roomEnv(c.cfg, "/r"); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The ids a process runs as read the same through its pidfd as from
// /proc/pid/status, for every process on the host; and a process that
// runs as a user of the rooms' range puts that user in use.
func TestUsersInUse(t *testing.T) {
	requiretest.Root(t) // to start a process as another user
	// A range of its own: the rooms of lobbies tested meanwhile run as
	// users of the default one.
	r := roomuser.Range{First: 4_000_000_000, Last: 4_000_000_999}
	uid := int(r.First) + 42
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: 65534, NoSetGroups: true}}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	procs, _ := os.ReadDir("/proc")
	compared := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fast, ok := pidfdUIDs(pid)
		if !ok {
			t.Log("the kernel does not say a process's ids through its pidfd (Linux 6.13 does): only /proc is read")
			break
		}
		if slow := statusUIDs(pid); fast != nil && slow != nil {
			if !slices.Equal(fast, slow) {
				t.Errorf("process %s: ids %v through its pidfd, %v in its status", p.Name(), fast, slow)
			}
			compared++
		}
	}
	if compared == 0 && !pidfdCredsMissing.Load() {
		// A kernel without the call sets the flag: this is one that has it.
		t.Fatal("no process compared")
	}
	u := &roomUsers{r: r}
	if in := u.usersInUse(t.TempDir()); !in[uid] || len(in) != 1 {
		t.Errorf("users in use %v, want %d alone", in, uid)
	}
}

// A room run as its user, in cgroups, starts only beside its warden: a
// warden that cannot start fails the create, and no process of the room
// is left (newTest's end checks that).
func TestNoRoomWithoutItsWarden(t *testing.T) {
	requiretest.Root(t) // rooms have users of their own only under root
	requiretest.Cgroups(t)
	s, _ := newTest(t, "game", 1, func(c *Config) {
		c.RoomUsers = roomuser.Range{First: 4_000_001_000, Last: 4_000_001_099}
		c.Warden = []string{filepath.Join(t.TempDir(), "no-warden")}
	})
	r, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999))
	if !errors.Is(err, room.ErrSpawn) || !strings.Contains(err.Error(), "warden") {
		t.Fatalf("create without a warden: room %+v, %v; want a spawn error naming the warden", r, err)
	}
}

// A room handed out while its instance started gets its warden once its
// game is ready; a room whose warden cannot start then is ended, and the
// next create waits for its room and fails.
func TestRoomHandedOutEarlyEndsWithoutItsWarden(t *testing.T) {
	requiretest.Root(t) // rooms have users of their own only under root
	requiretest.Cgroups(t)
	// A warden that starts, and exits at once on the argument it does
	// not know, until it is gone.
	warden := filepath.Join(t.TempDir(), "warden")
	if err := os.Symlink("/bin/true", warden); err != nil {
		t.Fatal(err)
	}
	s, sink := newTest(t, "game", 3, func(c *Config) {
		c.RoomUsers = roomuser.Range{First: 4_000_001_000, Last: 4_000_001_099}
		c.Warden = []string{warden}
	})
	first, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(warden); err != nil {
		t.Fatal(err)
	}
	r, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999))
	if err != nil {
		t.Fatalf("a create while the program last started: %v", err)
	}
	id := `"id":` + strconv.Itoa(int(r.ID))
	sink.await(t, "spawn failed", id, "warden")
	sink.await(t, "room reaped", id, `"cause":"crashed"`)
	if _, ok := listed(s, first.ID); !ok {
		t.Fatal("the room with a warden ended too")
	}
	if _, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999)); !errors.Is(err, room.ErrSpawn) {
		t.Fatalf("a create after a room's warden failed: %v, want %v", err, room.ErrSpawn)
	}
}

// A room run as its user is executed through a descriptor, yet a launch
// that fails names its program as the config does.
func TestRoomUsersLaunchNamesItsProgram(t *testing.T) {
	requiretest.Root(t) // rooms have users of their own only under root
	s, _ := newTest(t, "garbage-handshake", 1, func(c *Config) {
		c.RoomUsers = roomuser.Range{First: 4_000_001_000, Last: 4_000_001_099}
		c.NoCgroups = true // no warden: this is the room's own start
	})
	_, err := s.Table().Create(context.Background(), netip.AddrPortFrom(loopback, 9999))
	if err == nil || !strings.Contains(err.Error(), testroomBin) || strings.Contains(err.Error(), "/proc/self/fd") {
		t.Fatalf("a launch that failed: %v; want it to name %s", err, testroomBin)
	}
}

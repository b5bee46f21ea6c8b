//go:build linux

package nftdoor_test

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/nftdoor"
)

// shut is how long a test waits for an answer that must not come.
const shut = 150 * time.Millisecond

// open opens a door named for the test in n, removed when the test ends.
func open(t *testing.T, n *netns, probes ...netip.Addr) *nftdoor.Door {
	t.Helper()
	var d *nftdoor.Door
	var err error
	n.do(func() { d, err = nftdoor.Open(tableName(t), probes...) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Remove() })
	return d
}

func tableName(t *testing.T) string { return "foyer-test-" + strings.ReplaceAll(t.Name(), "/", "-") }

func seat(ip string, life time.Duration) nftdoor.Seat {
	return nftdoor.Seat{IP: netip.MustParseAddr(ip), Expires: time.Now().Add(life)}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A room's port answers only its seats' addresses, of either family, and
// the probes' loopback sources; other ports are not judged.
func TestOnlySeatsPassARoomsDoor(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	port, other := n.echo(), n.echo()
	must(t, d.Room(7, port))
	stranger, stranger6 := n.player("127.0.0.2"), n.player("fd00::2")
	if stranger.heard(port, shut) || stranger6.heard(port, shut) {
		t.Fatal("a room without seats answered 127.0.0.2 or fd00::2")
	}
	if !stranger.heard(other, time.Second) {
		t.Fatal("a port that is no room's did not answer")
	}
	must(t, d.Seats(7, []nftdoor.Seat{seat("127.0.0.3", time.Minute), seat("fd00::2", time.Minute)}))
	if !n.player("127.0.0.3").heard(port, time.Second) || !n.player("fd00::2").heard(port, time.Second) {
		t.Fatal("a seat's address was not let in")
	}
	if n.player("127.0.0.2").heard(port, shut) {
		t.Fatal("127.0.0.2, which holds no seat, was let in")
	}
	for _, probe := range []string{"127.0.0.1", "::1"} {
		if !n.player(probe).heard(port, time.Second) {
			t.Fatalf("a probe from %s was not let in", probe)
		}
	}
}

// A seat's address passes until the seat expires; then new flows from it
// are dropped, while the flow it began meanwhile goes on.
func TestExpiredSeatsAreForgottenButFlowsGoOn(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	port := n.echo()
	must(t, d.Room(1, port))
	must(t, d.Seats(1, []nftdoor.Seat{seat("127.0.0.3", 400*time.Millisecond), seat("127.0.0.4", -time.Second)}))
	playing := n.player("127.0.0.3")
	if !playing.heard(port, time.Second) {
		t.Fatal("a seat's address was not let in")
	}
	if n.player("127.0.0.4").heard(port, shut) {
		t.Fatal("an expired seat's address was let in")
	}
	time.Sleep(600 * time.Millisecond)
	if n.player("127.0.0.3").heard(port, shut) {
		t.Fatal("a new flow came in on a seat that expired")
	}
	if !playing.heard(port, time.Second) {
		t.Fatal("the flow a seat began was dropped once the seat expired")
	}
}

// Seats replaces a room's seats; another room's are its own.
func TestSeatsReplaceTheRoomsOwn(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	a, b := n.echo(), n.echo()
	must(t, d.Room(1, a))
	must(t, d.Room(2, b))
	must(t, d.Seats(1, []nftdoor.Seat{seat("127.0.0.3", time.Minute)}))
	must(t, d.Seats(1, []nftdoor.Seat{seat("127.0.0.4", time.Minute)}))
	if n.player("127.0.0.3").heard(a, shut) {
		t.Fatal("a seat replaced still lets its address in")
	}
	if !n.player("127.0.0.4").heard(a, time.Second) {
		t.Fatal("the new seat's address was not let in")
	}
	if n.player("127.0.0.4").heard(b, shut) {
		t.Fatal("a seat of room 1 let its address into room 2")
	}
	if err := d.Seats(3, nil); !errors.Is(err, nftdoor.ErrNoRoom) {
		t.Fatalf("seats of a room not in the table: %v", err)
	}
}

// A port taken by a new room is shut anew: the flows of the room that had
// it are forgotten, and its seats no longer count there.
func TestANewRoomForgetsThePortsFlows(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	port, other := n.echo(), n.echo()
	must(t, d.Room(1, port))
	must(t, d.Room(9, other))
	must(t, d.Seats(1, []nftdoor.Seat{seat("127.0.0.3", time.Minute)}))
	must(t, d.Seats(9, []nftdoor.Seat{seat("127.0.0.3", time.Minute)}))
	old, playing := n.player("127.0.0.3"), n.player("127.0.0.3")
	if !old.heard(port, time.Second) || !playing.heard(other, time.Second) {
		t.Fatal("a seat's address was not let in")
	}
	must(t, d.Seats(9, nil))
	must(t, d.Close(1))
	must(t, d.Close(1)) // twice is no error
	must(t, d.Room(2, port))
	if old.heard(port, shut) {
		t.Fatal("a flow of the port's previous room came into the next")
	}
	if !playing.heard(other, time.Second) {
		t.Fatal("a flow to another room's port was forgotten")
	}
	// A port moving from one room to another that still runs.
	must(t, d.Room(3, port))
	if got := d.Rooms(); !maps.Equal(got, map[uint32]uint16{2: 0, 3: port, 9: other}) {
		t.Fatalf("rooms %v", got)
	}
	must(t, d.Seats(2, []nftdoor.Seat{seat("127.0.0.5", time.Minute)}))
	if n.player("127.0.0.5").heard(port, shut) {
		t.Fatal("a seat of the room that lost the port let its address in")
	}
}

// A lobby started again finds the rooms in its table, their seats and
// flows kept; it adopts some, drops the rest (Reconcile), and its Remove
// leaves nothing.
func TestAReopenedDoorKeepsItsRoomsUntilReconciled(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	a, b, c := n.echo(), n.echo(), n.echo()
	must(t, d.Room(1, a))
	must(t, d.Room(2, b))
	must(t, d.Seats(1, []nftdoor.Seat{seat("127.0.0.3", time.Minute)}))
	must(t, d.Seats(2, []nftdoor.Seat{seat("127.0.0.3", time.Minute)}))
	playing := n.player("127.0.0.3")
	if !playing.heard(b, time.Second) {
		t.Fatal("a seat's address was not let in")
	}
	must(t, d.Release())

	var e *nftdoor.Door
	var err error
	n.do(func() { e, err = nftdoor.Open(tableName(t)) })
	must(t, err)
	t.Cleanup(func() { e.Remove() })
	if got := e.Rooms(); !maps.Equal(got, map[uint32]uint16{1: a, 2: b}) {
		t.Fatalf("the table reopened has rooms %v, want 1:%d 2:%d", got, a, b)
	}
	if !n.player("127.0.0.3").heard(a, time.Second) {
		t.Fatal("a seat was lost when the door was reopened")
	}
	must(t, e.Adopt(2, b))
	must(t, e.Room(3, c))
	must(t, e.Reconcile(map[uint32]uint16{2: b, 3: c}))
	if got := e.Rooms(); !maps.Equal(got, map[uint32]uint16{2: b, 3: c}) {
		t.Fatalf("reconciled: rooms %v", got)
	}
	if !playing.heard(b, time.Second) {
		t.Fatal("an adopted room's flow was dropped")
	}
	if !n.player("127.0.0.9").heard(a, time.Second) {
		t.Fatal("the port of a room reconciled away is still judged")
	}
	if n.player("127.0.0.9").heard(c, shut) {
		t.Fatal("a new room let a stranger in")
	}
	must(t, e.Remove())
	var exists bool
	n.do(func() { exists, err = nftdoor.Exists(tableName(t)) })
	if err != nil || exists {
		t.Fatalf("after Remove the table exists: %v %v", exists, err)
	}
	if !n.player("127.0.0.9").heard(c, time.Second) {
		t.Fatal("a port is judged after Remove")
	}
	if err := e.Seats(2, nil); !errors.Is(err, nftdoor.ErrClosed) {
		t.Fatalf("seats after Remove: %v", err)
	}
}

// The rooms' bind address, when it is one of the host's own, is the
// probes' too.
func TestProbesFromTheBindAddressPass(t *testing.T) {
	n := newNetns(t)
	d := open(t, n, netip.MustParseAddr("127.0.0.7"))
	port := n.echo()
	must(t, d.Room(1, port))
	if !n.player("127.0.0.7").heard(port, time.Second) {
		t.Fatal("a probe from the bind address was not let in")
	}
	if n.player("127.0.0.8").heard(port, shut) {
		t.Fatal("a stranger was let in")
	}
}

// Without CAP_NET_ADMIN there is no door, and Open says why.
func TestNoDoorWithoutCapNetAdmin(t *testing.T) {
	n := newNetns(t)
	var err error
	n.do(func() {
		// Capabilities are per thread: only the namespace's loses it.
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err = unix.Capget(&hdr, &data[0]); err != nil {
			return
		}
		data[0].Effective &^= 1 << unix.CAP_NET_ADMIN
		if err = unix.Capset(&hdr, &data[0]); err != nil {
			return
		}
		_, err = nftdoor.Open(tableName(t))
	})
	if !errors.Is(err, nftdoor.ErrUnavailable) || !strings.Contains(err.Error(), "CAP_NET_ADMIN") {
		t.Fatalf("Open without CAP_NET_ADMIN: %v", err)
	}
}

// Many rooms changing their seats at once each get theirs.
func TestConcurrentSeats(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	ports := make([]uint16, 8)
	for i := range ports {
		ports[i] = n.echo()
		must(t, d.Room(uint32(i+1), ports[i]))
	}
	var wg sync.WaitGroup
	for i := range ports {
		wg.Go(func() {
			for j := range 50 {
				ip := fmt.Sprintf("127.0.%d.%d", i+1, j%4+1)
				if err := d.Seats(uint32(i+1), []nftdoor.Seat{seat(ip, time.Minute)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, port := range ports {
		if !n.player(fmt.Sprintf("127.0.%d.2", i+1)).heard(port, time.Second) {
			t.Fatalf("room %d's last seat was not let in", i+1)
		}
		if n.player(fmt.Sprintf("127.0.%d.1", i+1)).heard(port, shut) {
			t.Fatalf("room %d kept a replaced seat", i+1)
		}
	}
}

// BenchmarkSeats is one Seats of a room with 8 seats (one netlink
// batch), in a table of 1 and of 64 rooms.
func BenchmarkSeats(b *testing.B) {
	for _, rooms := range []int{1, 64} {
		b.Run(fmt.Sprintf("rooms=%d", rooms), func(b *testing.B) {
			n := newNetns(b)
			var d *nftdoor.Door
			var err error
			n.do(func() { d, err = nftdoor.Open("foyer-bench") })
			if err != nil {
				b.Fatal(err)
			}
			defer d.Remove()
			for i := range rooms {
				if err := d.Room(uint32(i+1), uint16(40000+i)); err != nil {
					b.Fatal(err)
				}
			}
			seats := make([]nftdoor.Seat, 8)
			for i := range seats {
				seats[i] = nftdoor.Seat{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), Expires: time.Now().Add(time.Minute)}
			}
			for b.Loop() {
				if err := d.Seats(1, seats); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoomAndClose is a room put in the table and taken out.
func BenchmarkRoomAndClose(b *testing.B) {
	n := newNetns(b)
	var d *nftdoor.Door
	var err error
	n.do(func() { d, err = nftdoor.Open("foyer-bench") })
	if err != nil {
		b.Fatal(err)
	}
	defer d.Remove()
	for b.Loop() {
		if err := d.Room(1, 40000); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(1); err != nil {
			b.Fatal(err)
		}
	}
}

// Where the kernel cannot filter a flush, the flows to a port are found
// and deleted one by one, the others kept.
func TestFlowsForgottenOneByOne(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	a, b := n.echo(), n.echo()
	must(t, d.Room(1, a))
	must(t, d.Room(2, b))
	for _, id := range []uint32{1, 2} {
		must(t, d.Seats(id, []nftdoor.Seat{seat("127.0.0.3", time.Minute), seat("fd00::2", time.Minute)}))
	}
	pa, pb, pa6 := n.player("127.0.0.3"), n.player("127.0.0.3"), n.player("fd00::2")
	if !pa.heard(a, time.Second) || !pb.heard(b, time.Second) || !pa6.heard(a, time.Second) {
		t.Fatal("a seat's address was not let in")
	}
	must(t, d.Seats(1, nil))
	must(t, d.Seats(2, nil))
	must(t, d.Walk(a))
	if pa.heard(a, shut) || pa6.heard(a, shut) {
		t.Fatal("a flow to the port was not forgotten")
	}
	if !pb.heard(b, time.Second) {
		t.Fatal("a flow to another port was forgotten")
	}
}

// Two processes of one lobby share its table during a handover: what one
// changes under the other is read anew by the other, not fatal to it.
func TestATableChangedUnderTheDoor(t *testing.T) {
	n := newNetns(t)
	d := open(t, n)
	a, b := n.echo(), n.echo()
	must(t, d.Room(1, a))
	must(t, d.Room(2, b))
	var e *nftdoor.Door
	var err error
	n.do(func() { e, err = nftdoor.Open(tableName(t)) })
	must(t, err)
	must(t, e.Close(1))
	must(t, e.Room(3, b)) // port b moves to room 3 under d
	must(t, e.Release())

	must(t, d.Close(1)) // gone already: no error
	if err := d.Seats(1, nil); !errors.Is(err, nftdoor.ErrNoRoom) {
		t.Fatalf("seats of a room another process closed: %v", err)
	}
	must(t, d.Room(4, a))
	must(t, d.Seats(3, []nftdoor.Seat{seat("127.0.0.3", time.Minute)}))
	if got := d.Rooms(); !maps.Equal(got, map[uint32]uint16{2: 0, 3: b, 4: a}) {
		t.Fatalf("rooms %v", got)
	}
	if !n.player("127.0.0.3").heard(b, time.Second) || n.player("127.0.0.4").heard(b, shut) {
		t.Fatal("the door of a room another process made is not as set")
	}

	// The whole table removed by someone else: made again.
	n.do(func() { e, err = nftdoor.Open(tableName(t)) })
	must(t, err)
	must(t, e.Remove())
	if err := d.Seats(3, nil); !errors.Is(err, nftdoor.ErrNoRoom) {
		t.Fatalf("seats of a room whose table was removed: %v", err)
	}
	must(t, d.Room(5, a))
	if n.player("127.0.0.4").heard(a, shut) {
		t.Fatal("a room in a table made again let a stranger in")
	}
}

// Sweep removes the tables it is told are stale, and only those.
func TestSweepRemovesStaleTables(t *testing.T) {
	n := newNetns(t)
	for _, name := range []string{"foyer-sweep-a", "foyer-sweep-b"} {
		n.do(func() {
			d, err := nftdoor.Open(name)
			if err == nil {
				err = d.Release()
			}
			must(t, err)
		})
	}
	var gone []string
	var err error
	n.do(func() { gone, err = nftdoor.Sweep(func(name string) bool { return name == "foyer-sweep-a" }) })
	must(t, err)
	if len(gone) != 1 || gone[0] != "foyer-sweep-a" {
		t.Fatalf("swept %v", gone)
	}
	var a, b bool
	n.do(func() {
		a, _ = nftdoor.Exists("foyer-sweep-a")
		b, _ = nftdoor.Exists("foyer-sweep-b")
	})
	if a || !b {
		t.Fatalf("after the sweep: a exists %v, b exists %v", a, b)
	}
}

package cluster

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/room/roomtable"
	"github.com/foyerlobby/foyer/room/roomtable/roomtabletest"
)

var (
	public = netip.MustParseAddr("192.0.2.1")
	other  = netip.MustParseAddr("198.51.100.7")
	player = netip.MustParseAddrPort("203.0.113.5:5000")
)

// TestViewsAndPlacement: rooms of every host in every view, at "" for
// hosts that share the public address and at the address of those that
// do not; CREATEs placed on the freest host, local on ties; JOIN of
// another host's room forwarded to it, and of a host's own room held
// there.
func TestViewsAndPlacement(t *testing.T) {
	_, _, url := natsServer(t)
	a, _ := join(t, testConfig(url, "a", public), 2)
	b, _ := join(t, testConfig(url, "b", public), 3)
	c, lc := join(t, testConfig(url, "c", other), 3)
	eventually(t, "a sees b and c", func() bool { return a.Stats().Hosts == 3 })

	// b and c are freer than a: b first (by name), then c, then a (local
	// on a tie of 2).
	var got []string
	for range 3 {
		r, err := a.Create(context.Background(), player)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Node)
		eventually(t, "the room in b's view", func() bool { return lists(b, r.ID, r.Node) })
	}
	if want := []string{"b", "c", "a"}; !equal(got, want) {
		t.Errorf("three CREATEs at a went to %v; want %v", got, want)
	}
	for _, r := range b.List().Rooms {
		want := netip.Addr{}
		if r.Node == "c" {
			want = other
		}
		if r.Host != want {
			t.Errorf("b lists room %d of %s at %v; want %v", r.ID, r.Node, r.Host, want)
		}
	}
	var onC uint32
	for _, r := range a.List().Rooms {
		if r.Node == "c" {
			onC = r.ID
		}
	}
	// A JOIN at a of c's room holds a seat at c, as c counts it.
	r, err := a.Join(context.Background(), onC, netip.MustParseAddrPort("203.0.113.6:1"), room.SawListing)
	if err != nil || r.Node != "c" || r.Seats != 2 {
		t.Fatalf("JOIN of c's room at a: %+v, %v; want c's room with 2 seats", r, err)
	}
	if n := lc.List().Rooms[0].Seats; n != 2 {
		t.Errorf("c holds %d seats, want 2", n)
	}
	// A JOIN at c of its own room is held there, and says so.
	if r, err := c.Join(context.Background(), onC, netip.MustParseAddrPort("203.0.113.7:1"), room.SawListing); err != nil || r.Node != "c" || r.Seats != 3 {
		t.Fatalf("JOIN of c's room at c: %+v, %v; want c's room with 3 seats", r, err)
	}
	eventually(t, "the seat in every view", func() bool {
		for _, cl := range []*Cluster{a, b} {
			for _, r := range cl.List().Rooms {
				if r.ID == onC && r.Seats != 3 {
					return false
				}
			}
		}
		return true
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestJoinsExact: JOINs of one room through two other hosts at once get
// exactly its free seats; the refusals are the lobby's sentinels.
func TestJoinsExact(t *testing.T) {
	_, _, url := natsServer(t)
	a, _ := join(t, testConfig(url, "a", public), 0)
	b, _ := join(t, testConfig(url, "b", public), 0)
	join(t, testConfig(url, "c", public), 1)
	eventually(t, "a sees c", func() bool { return a.Stats().Hosts == 3 })
	r, err := a.Create(context.Background(), player)
	if err != nil || r.Node != "c" {
		t.Fatalf("CREATE: %+v, %v; want a room on c, the only free host", r, err)
	}
	eventually(t, "c's room at b", func() bool { return lists(b, r.ID, "c") })
	var granted, full atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		via := []*Cluster{a, b}[i%2]
		p := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i)}), 6000)
		wg.Go(func() {
			_, err := via.Join(context.Background(), r.ID, p, room.Unproven)
			switch err {
			case nil:
				granted.Add(1)
			case room.ErrFull:
				full.Add(1)
			default:
				t.Errorf("JOIN: %v", err)
			}
		})
	}
	wg.Wait()
	if granted.Load() != 3 || full.Load() != 47 {
		t.Errorf("50 JOINs of a room of 4 with one seat held: %d granted, %d refused as full; want 3 and 47", granted.Load(), full.Load())
	}
	// Each host counts the JOINs it forwarded, and those refused.
	sa, sb := a.Stats(), b.Stats()
	if fw, ref := sa.JoinsForwarded+sb.JoinsForwarded, sa.JoinsRefused+sb.JoinsRefused; fw != 50 || ref != uint64(full.Load()) {
		t.Errorf("a and b counted %d JOINs forwarded and %d refused; want 50 and %d", fw, ref, full.Load())
	}
	if _, err := a.Join(context.Background(), r.ID+1000, player, room.Unproven); err != room.ErrNoRoom {
		t.Errorf("JOIN of no room: %v, want room.ErrNoRoom", err)
	}
}

// TestHostLeavesAndComesBack: a host that stops heartbeating leaves the
// views within the TTL; one that leaves with no room says goodbye at
// once; a host back after an outage rewrites what changed, and its rooms
// reaped meanwhile leave every view.
func TestHostLeavesAndComesBack(t *testing.T) {
	_, _, url := natsServer(t)
	a, _ := join(t, testConfig(url, "a", public), 0)
	b, lb := join(t, testConfig(url, "b", public), 4)
	eventually(t, "a sees b", func() bool { return a.Stats().Hosts == 2 })
	r1, err := a.Create(context.Background(), player)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Create(context.Background(), player)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "both rooms at a", func() bool { return lists(a, r2.ID, "b") && lists(a, r1.ID, "b") })

	// Cut b off: it keeps its rooms; the others see them go.
	b.nc.Close()
	eventually(t, "b's rooms gone from a's view", func() bool { return len(a.List().Rooms) == 0 })
	if b.Stats().Up {
		t.Error("b still up after its connection closed")
	}
	if n := len(b.List().Rooms); n != 2 {
		t.Errorf("b lists %d rooms cut off; want its own 2", n)
	}

	// b again, as after a restart: a room reaped meanwhile is deleted, the
	// other rewritten only if changed.
	reap(lb, r1.ID)
	b2 := start(t, testConfig(url, "b", public))
	attach(t, b2, lb)
	eventually(t, "b's room back at a", func() bool { return lists(a, r2.ID, "b") })
	if lists(a, r1.ID, "b") {
		t.Error("a lists b's room reaped while b was away")
	}

	// Leaving with no room left: gone from a's view at once.
	reap(lb, r2.ID)
	eventually(t, "the reaped room gone", func() bool { return len(a.List().Rooms) == 0 })
	b2.Close()
	eventually(t, "b gone from a's hosts", func() bool { return a.Stats().Hosts == 1 })
}

// TestNATSRestartConverges: the server restarts on its store; every host
// reconnects by itself, writes its table again and the views converge,
// nothing duplicated or lost.
func TestNATSRestartConverges(t *testing.T) {
	srv, opts, url := natsServer(t)
	a, la := join(t, testConfig(url, "a", public), 2)
	b, _ := join(t, testConfig(url, "b", public), 2)
	ra, err := a.Create(context.Background(), player)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's room at b", func() bool { return lists(b, ra.ID, "a") })
	srv.Shutdown()
	srv.WaitForShutdown()
	eventually(t, "a down", func() bool { return !a.Stats().Up })
	// Alone, a places on itself; its room changes.
	ra2, err := a.Create(context.Background(), player)
	if err != nil || ra2.Node != "a" {
		t.Fatalf("CREATE cut off: %+v, %v", ra2, err)
	}
	setPlayers(la, ra.ID, 1)
	restart(t, opts)
	eventually(t, "a and b up", func() bool { return a.Stats().Up && b.Stats().Up })
	eventually(t, "b sees a's rooms as they are", func() bool {
		rooms := b.List().Rooms
		return len(rooms) == 2 && rooms[0].ID == ra.ID && rooms[0].Players == 1 && rooms[1].ID == ra2.ID
	})
	if a.Stats().Reconnects == 0 {
		t.Error("a counted no reconnect")
	}
}

// TestCreateSkipsSilentHost: a host that is listed but does not take the
// CREATE is skipped for the next.
func TestCreateSkipsSilentHost(t *testing.T) {
	_, _, url := natsServer(t)
	a, la := join(t, testConfig(url, "a", public), 1)
	b, _ := join(t, testConfig(url, "b", public), 4)
	eventually(t, "a sees b", func() bool { return a.Stats().Hosts == 2 })
	for _, s := range b.subs { // b stops answering, but its heartbeat goes on
		s.Unsubscribe()
	}
	hole, err := b.nc.Subscribe(subjectPrefix+"b.create", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Unsubscribe()
	start := time.Now()
	r, err := a.Create(context.Background(), player)
	if err != nil || r.Node != "a" {
		t.Fatalf("CREATE with b silent: %+v, %v; want a room on a", r, err)
	}
	t.Logf("placed on a %v after b was skipped", time.Since(start))
	if a.Stats().Skipped != 1 {
		t.Errorf("skipped %d hosts, want 1", a.Stats().Skipped)
	}
	reap(la, r.ID)
	if _, err := a.Create(context.Background(), player); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(context.Background(), player); !errors.Is(err, room.ErrCapacity) && !errors.Is(err, room.ErrUnreachable) {
		t.Errorf("CREATE with a full and b silent: %v; want a refusal", err)
	}
}

// TestCreateSkipsDrainedHost: a host its operator drains takes no room,
// and its players' CREATEs start rooms on the other hosts; undrained, it
// takes rooms again.
func TestCreateSkipsDrainedHost(t *testing.T) {
	_, _, url := natsServer(t)
	a, la := join(t, testConfig(url, "a", public), 4)
	join(t, testConfig(url, "b", public), 4)
	eventually(t, "a sees b", func() bool { return a.Stats().Hosts == 2 })
	la.SetDraining(true)
	for range 3 {
		r, err := a.Create(context.Background(), player)
		if err != nil || r.Node != "b" {
			t.Fatalf("CREATE at a drained: %+v, %v; want a room on b", r, err)
		}
	}
	la.SetDraining(false) // b has one room left: a must take the rest
	eventually(t, "a taking rooms again", func() bool {
		r, err := a.Create(context.Background(), player)
		return err == nil && r.Node == "a"
	})
}

// TestTableContract: the cluster keeps the contract every room table
// keeps for rooms of another host. Every room is made on b (a has no
// capacity) and every call goes through a, so each JOIN is forwarded to
// b, proof and all; the rooms report their state on b, where they run.
func TestTableContract(t *testing.T) {
	roomtabletest.Contract(t, func(t *testing.T) roomtabletest.Subject {
		_, _, url := natsServer(t)
		a, la := join(t, testConfig(url, "a", public), 0)
		_, lb := join(t, testConfig(url, "b", public), 1000)
		eventually(t, "a sees b", func() bool { return a.Stats().Hosts == 2 })
		return roomtabletest.Subject{Table: a.Table(la), Report: func(id uint32, state packet.RoomState) {
			lb.Report(id, roomtable.Report{State: state})
		}}
	})
}

// TestQuickJoinGoesOnPastASilentHost: a quick join tries the fullest
// room first and, when its host does not answer, takes a seat in the
// next; with none to join, it places a new room if its caller allows.
func TestQuickJoinGoesOnPastASilentHost(t *testing.T) {
	_, _, url := natsServer(t)
	a, la := join(t, testConfig(url, "a", public), 2)
	b, lb := join(t, testConfig(url, "b", public), 2)
	eventually(t, "a sees b", func() bool { return a.Stats().Hosts == 2 })
	ctx := context.Background()
	dm := room.CreateOptions{Meta: room.Meta{Mode: "dm"}}
	mine, err := la.CreateWith(ctx, player, dm)
	if err != nil {
		t.Fatal(err)
	}
	fuller, err := lb.CreateWith(ctx, player, dm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lb.Join(ctx, fuller.Room.ID, netip.MustParseAddrPort("198.51.100.8:8"), room.SawListing); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b's room at a, fuller than a's", func() bool {
		for _, r := range a.List().Rooms {
			if r.ID == fuller.Room.ID {
				return r.Occupied() == 2
			}
		}
		return false
	})
	for _, s := range b.subs { // b stops answering, but its heartbeat goes on
		s.Unsubscribe()
	}
	friend := netip.MustParseAddrPort("198.51.100.9:9")
	q, err := a.QuickJoin(ctx, room.Filter{Mode: "dm"}, friend, [8]byte{3}, func() error { return room.ErrRateLimited })
	if err != nil || q.Room.ID != mine.Room.ID {
		t.Fatalf("quick join with b silent: %+v, %v; want a seat in a's room %d", q, err, mine.Room.ID)
	}
	// With no room to join, it places one, if the caller allows.
	ctf := room.Filter{Mode: "ctf"}
	if _, err := a.QuickJoin(ctx, ctf, friend, [8]byte{3}, func() error { return room.ErrRateLimited }); err != room.ErrRateLimited {
		t.Errorf("quick join of no room, the caller refusing a CREATE: %v; want room.ErrRateLimited", err)
	}
	if g, err := a.QuickJoin(ctx, ctf, friend, [8]byte{3}, func() error { return nil }); err != nil || g.Room.Mode != "ctf" {
		t.Errorf("quick join of no room: %+v, %v; want a new ctf room", g, err)
	}
}

// TestCodesJoinAcrossHosts: a room created with the extension on one host
// is listed by the others with its name, mode, tags, code and privacy; its
// code joins it from any host, where its own host checks the password and
// signs the seat's token; a quick join from another host takes it.
func TestCodesJoinAcrossHosts(t *testing.T) {
	_, _, url := natsServer(t)
	// A password is checked by a slow hash on purpose: a loaded machine
	// gets more than the default JoinTimeout for it.
	ca := testConfig(url, "a", public)
	ca.JoinTimeout = 20 * time.Second
	a, _ := join(t, ca, 0)
	b, bLocal := join(t, testConfig(url, "b", public), 2)
	eventually(t, "a sees b", func() bool { return a.Stats().Hosts == 2 })
	meta := room.Meta{Name: "Ann's", Mode: "ctf", Tags: room.TagsOf([]room.Tag{{Key: "region", Value: "eu"}})}
	g, err := a.CreateWith(context.Background(), player, room.CreateOptions{Meta: meta, Private: true, Password: "pw"})
	if err != nil || g.Room.Node != "b" || len(g.Token) != ext.TokenLen {
		t.Fatalf("CREATE: %+v, %v; want a room on b with a token", g, err)
	}
	eventually(t, "b's room at a", func() bool { return lists(a, g.Room.ID, "b") })
	var seen room.Room
	for _, r := range a.List().Rooms {
		if r.ID == g.Room.ID {
			seen = r
		}
	}
	if seen.Meta() != meta || seen.Code != g.Room.Code || !seen.Private || !seen.Password {
		t.Fatalf("a lists b's room as %+v", seen)
	}
	friend := netip.MustParseAddrPort("198.51.100.9:9")
	if _, err := a.JoinWith(context.Background(), room.JoinRequest{Code: g.Room.Code, Player: friend, Password: "no"}); err != room.ErrWrongPassword {
		t.Fatalf("a wrong password through a: %v", err)
	}
	j, err := a.JoinWith(context.Background(), room.JoinRequest{Code: g.Room.Code, Player: friend, Password: "pw", Client: [8]byte{1}})
	if err != nil || j.Room.ID != g.Room.ID || len(j.Token) != ext.TokenLen {
		t.Fatalf("JOIN by code through a: %+v, %v", j, err)
	}
	if !b.CodeTaken(g.Room.Code) && !a.CodeTaken(g.Room.Code) {
		t.Error("no host knows the code is taken")
	}
	pub, err := bLocal.CreateWith(context.Background(), player, room.CreateOptions{Meta: room.Meta{Mode: "dm"}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "b's second room at a", func() bool { return lists(a, pub.Room.ID, "b") })
	q, err := a.QuickJoin(context.Background(), room.Filter{Mode: "dm"}, friend, [8]byte{2}, func() error { return room.ErrRateLimited })
	if err != nil || q.Room.ID != pub.Room.ID || len(q.Token) != ext.TokenLen {
		t.Fatalf("quick join through a: %+v, %v", q, err)
	}
}

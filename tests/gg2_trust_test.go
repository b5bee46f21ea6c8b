package tests

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/floodtest"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/gg2"
)

// forge sends payload to to from forged sources (see floodtest.Config) at
// rate datagrams a second until cond holds, failing after 20 s.
func forge(t *testing.T, to netip.AddrPort, payload []byte, sources, networks, rate int, what string, cond func() bool) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := floodtest.Run(ctx, floodtest.Config{To: to, Payload: payload, Sources: sources, Networks: networks, Rate: rate})
		done <- err
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// gg2Metric is one series of s's /metrics, 0 when absent.
func gg2Metric(t *testing.T, s *server, reason string) float64 {
	t.Helper()
	return s.metrics(t)[gg2Drops(reason)]
}

// encodeRegistration is r on the wire.
func encodeRegistration(t *testing.T, r gg2.Registration) []byte {
	t.Helper()
	b, err := r.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A GG2 server belongs to the server ID it registered with: a registration
// forged with its address and port but another ID renames nothing, an
// unregister with another ID, or with its ID from another address,
// removes nothing; its own unregister removes it.
func TestGG2ServerBelongsToItsID(t *testing.T) {
	requiretest.RawSocket(t) // forged datagrams
	f := gg2Start(t, "")
	victim := floodtest.Source(0).Addr() // where the forged datagrams come from
	port := acceptingTCPAt(t, victim.String(), make(chan uint16, 16))
	at := netip.AddrPortFrom(victim, port)
	owner := gg2GameAt(t, victim.String(), f.gg2)
	real := gg2Registration(t, gg2.Counted, gg2.TCP, port, "Bacon Town 24/7", 8, 1)
	owner.register(real)
	listed := func() []gg2.ListServer {
		var out []gg2.ListServer
		for _, s := range gg2List(t, f.gg2, gg2.GG2LobbyUUID).Servers {
			if s.V4 == at {
				out = append(out, s)
			}
		}
		return out
	}
	gg2Eventually(t, "the server listed", func() bool { return len(listed()) == 1 })

	evil := gg2Registration(t, gg2.Counted, gg2.TCP, port, "FREE SKINS - visit evil.example", 8, 8)
	forge(t, f.gg2, encodeRegistration(t, evil), 1, 0, 50, "forged registrations refused",
		func() bool { return gg2Metric(t, f.server, "owned") >= 3 })
	if l := listed(); len(l) != 1 || kv(l[0], "name") != "Bacon Town 24/7" || l[0].Players != 1 {
		t.Fatalf("after forged registrations the server is listed as %+v", l)
	}
	forge(t, f.gg2, gg2.Unregister{ServerID: evil.ServerID}.Append(nil), 1, 0, 50, "forged unregisters refused",
		func() bool { return gg2Metric(t, f.server, "unknown_id") >= 3 })
	gg2GameAt(t, "127.0.0.3", f.gg2).unregister(real.ServerID)
	gg2Eventually(t, "the unregister from another address refused", func() bool { return gg2Metric(t, f.server, "wrong_source") >= 1 })
	if l := listed(); len(l) != 1 || kv(l[0], "name") != "Bacon Town 24/7" {
		t.Fatalf("after forged unregisters the server is listed as %+v", l)
	}
	// The owner still updates it, and unregisters it.
	real.Players = 5
	owner.register(real)
	gg2Eventually(t, "the owner's update", func() bool { l := listed(); return len(l) == 1 && l[0].Players == 5 })
	owner.unregister(real.ServerID)
	gg2Eventually(t, "the owner's unregister", func() bool { return len(listed()) == 0 })
}

// Nothing unproven is offered. A UDP registration is refused by default,
// even from the lobby's own address; let in, it is listed by GG2 queries
// but never offered natively nor joinable. A TCP registration from the
// lobby's own address is offered natively once its port answered, and
// never when it does not.
func TestGG2NothingUnprovenOffered(t *testing.T) {
	f := gg2Start(t, "")
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	own := gg2GameAt(t, "127.0.0.1", f.gg2) // the lobby's own address
	own.register(gg2Registration(t, gg2.Counted, gg2.UDP, 27015, "planted", 8, 0))
	closed := closedTCPPort(t)
	own.register(gg2Registration(t, gg2.Counted, gg2.TCP, closed, "nobody home", 8, 0))
	gg2Eventually(t, "the UDP registration refused and the closed port checked", func() bool {
		return gg2Metric(t, f.server, "udp_transport") == 1 && gg2Metric(t, f.server, "unreachable") == 1
	})
	open := acceptingTCP(t, make(chan uint16, 4))
	own.register(gg2Registration(t, gg2.Counted, gg2.TCP, open, "same host", 8, 0))
	var rooms []room
	gg2Eventually(t, "the same-host server offered", func() bool { rooms = c.list(seq.next()); return len(nativeAt(rooms, open)) == 1 })
	if len(nativeAt(rooms, 27015)) != 0 || len(nativeAt(rooms, closed)) != 0 {
		t.Errorf("native LIST %+v offers an unproven server", rooms)
	}
	list := gg2List(t, f.gg2, gg2.GG2LobbyUUID)
	if len(gg2At(list, 27015)) != 0 || len(gg2At(list, closed)) != 0 || len(gg2At(list, open)) != 1 {
		t.Errorf("GG2 list %+v", list.Servers)
	}

	// Let in: listed for GG2 browsers, offered to no native client.
	u := gg2Start(t, "udp_transport = true")
	uc := newClient(t, "127.0.0.1", u.lobby)
	own = gg2GameAt(t, "127.0.0.1", u.gg2)
	own.register(gg2Registration(t, gg2.Counted, gg2.UDP, 27015, "unchecked", 8, 0))
	gg2Eventually(t, "the UDP server in the GG2 list", func() bool { return len(gg2At(gg2List(t, u.gg2, gg2.GG2LobbyUUID), 27015)) == 1 })
	open = acceptingTCP(t, make(chan uint16, 4))
	own.register(gg2Registration(t, gg2.Counted, gg2.TCP, open, "same host", 8, 0))
	var here []room
	gg2Eventually(t, "the same-host TCP server offered", func() bool { here = nativeAt(uc.list(seq.next()), open); return len(here) == 1 })
	if r := nativeAt(uc.list(seq.next()), 27015); len(r) != 0 {
		t.Fatalf("the UDP server is offered natively: %+v", r)
	}
	// Registered one after the other, the UDP server has the id just
	// before the TCP one.
	if r := uc.request(compact, joinRoom, seq.next(), joinPayload(here[0].id-1)); r.typ != joinFailed {
		t.Errorf("JOIN of the UDP server answered %#x", r.typ)
	}
}

// The registration table has quotas per network: 64 addresses in 4 /24s,
// each registering 16 servers (within its rate), hold at most 4 x
// max_servers_per_network (128) of them, and a server of another network
// is listed.
func TestGG2TableQuotaPerNetwork(t *testing.T) {
	f := gg2Start(t, "udp_transport = true")
	var regs []gg2Registrant
	for a := range 64 {
		g := gg2GameAt(t, fmt.Sprintf("127.0.%d.%d", 10+a/16, 1+a%16), f.gg2)
		for p := range 16 {
			regs = append(regs, gg2Registrant{g, gg2Registration(t, gg2.Counted, gg2.UDP, uint16(20000+p), "filler", 8, 0)})
		}
	}
	gg2RegisterUntil(t, regs, "the networks filled and the rest refused", func() bool {
		return f.metrics(t)["foyer_gg2_registered"] == 4*128 && gg2Metric(t, f.server, "network_full") >= 64*16-4*128
	})
	if n := f.metrics(t)["foyer_gg2_registered"]; n != 4*128 {
		t.Errorf("%v servers registered from 4 networks, want 4 x 128", n)
	}
	port := acceptingTCPAt(t, "127.0.20.1", make(chan uint16, 4))
	gg2GameAt(t, "127.0.20.1", f.gg2).register(gg2Registration(t, gg2.Counted, gg2.TCP, port, "real", 8, 0))
	gg2Eventually(t, "the real server listed", func() bool {
		for _, s := range gg2List(t, f.gg2, gg2.GG2LobbyUUID).Servers {
			if s.V4 == netip.AddrPortFrom(netip.MustParseAddr("127.0.20.1"), port) {
				return true
			}
		}
		return false
	})
	if n := f.metrics(t)[gg2Drops("table_full")]; n != 0 {
		t.Errorf("%v registrations refused for a full table", n)
	}
}

// synDropper is a TCP port on every loopback address that drops SYNs, as a
// host behind a firewall does: its accept queue is full, and nothing ever
// accepts. A connect to it lasts its whole timeout.
func synDropper(t *testing.T) uint16 {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil { // room for one queued connection
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(sa.(*unix.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port).String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	return port
}

// Forged TCP registrations from many networks, aimed at hosts that drop
// SYNs, do not hold the reachability checks a real server waits for: with
// 50 a second coming from 4,096 networks, a real server of another
// network is listed after its first registration, within seconds. (GG2
// servers register every 30 s: a registration refused is a listing half a
// minute later.)
func TestGG2ForgedFloodCannotStarveChecks(t *testing.T) {
	requiretest.RawSocket(t) // forged datagrams
	f := gg2Start(t, "")
	dropper := synDropper(t)
	flood := gg2Registration(t, gg2.Counted, gg2.TCP, dropper, "forged", 8, 0)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := floodtest.Run(ctx, floodtest.Config{To: f.gg2, Payload: encodeRegistration(t, flood),
			Sources: 1 << 20, Networks: floodtest.MaxNetworks, Rate: 50})
		done <- err
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// The flood holds more checks than the former pool of 16 had.
	gg2Eventually(t, "the flood's checks running", func() bool { return f.metrics(t)["foyer_gg2_pending"] >= 32 })

	real := netip.MustParseAddr("127.200.0.1")
	port := acceptingTCPAt(t, real.String(), make(chan uint16, 64))
	gg2GameAt(t, real.String(), f.gg2).register(gg2Registration(t, gg2.Counted, gg2.TCP, port, "real", 8, 0))
	start := time.Now()
	for listed := false; !listed; time.Sleep(100 * time.Millisecond) {
		for _, s := range gg2List(t, f.gg2, gg2.GG2LobbyUUID).Servers {
			listed = listed || s.V4 == netip.AddrPortFrom(real, port)
		}
		// Generous: the bound says the registration was not lost among
		// the flood's, not how fast a check is.
		if !listed && time.Since(start) > 15*time.Second {
			m := f.metrics(t)
			t.Fatalf("the real server's registration was not listed in %v (pending %v, check_queue_full %v)",
				time.Since(start), m["foyer_gg2_pending"], m[gg2Drops("check_queue_full")])
		}
	}
	t.Logf("listed %v after its one registration, under the flood", time.Since(start).Round(time.Millisecond))
}

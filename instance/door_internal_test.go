package instance

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/instance/instancepb"
)

func seatsFor(exp time.Time, players ...string) []*instancepb.Seat {
	var out []*instancepb.Seat
	for _, p := range players {
		out = append(out, &instancepb.Seat{Player: p, ExpiresUnixMs: exp.UnixMilli()})
	}
	return out
}

// A player that leaves gives back the address of its IP heard from least
// lately; one that comes claims the newest unclaimed one; an address never
// claimed is forgotten after guestTTL.
func TestDoorFollowsThePlayers(t *testing.T) {
	d := newDoor()
	t0 := time.Unix(1000, 0)
	a, b := netip.MustParseAddrPort("192.0.2.1:1000"), netip.MustParseAddrPort("192.0.2.1:2000")
	d.seat(seatsFor(t0.Add(time.Minute), "192.0.2.1:1", "192.0.2.1:2"), t0)
	if !d.admit(a, nil, t0) || !d.admit(b, nil, t0.Add(time.Second)) {
		t.Fatal("two seats of one IP did not admit two addresses")
	}
	d.player(a.Addr(), 1)
	d.player(a.Addr(), 1)
	d.admit(b, nil, t0.Add(5*time.Second)) // b speaks; a went quiet
	d.player(a.Addr(), -1)
	if d.admit(a, nil, t0.Add(6*time.Second)) || !d.admit(b, nil, t0.Add(6*time.Second)) {
		t.Fatal("the quiet address was not the one given back")
	}

	c := netip.MustParseAddrPort("192.0.2.3:3000")
	d.seat(seatsFor(t0.Add(time.Minute), "192.0.2.3:1"), t0)
	if !d.admit(c, nil, t0) {
		t.Fatal("seat of 192.0.2.3 refused")
	}
	d.seat(seatsFor(t0.Add(time.Minute), "192.0.2.9:1"), t0)
	d.admit(netip.MustParseAddrPort("192.0.2.9:9"), nil, t0.Add(guestTTL+time.Second)) // an admission sweeps
	if d.admit(c, nil, t0.Add(guestTTL+time.Second)) {
		t.Fatal("an address the game never claimed was kept past guestTTL")
	}
}

// Whatever is sent to the port, the door keeps at most maxKnocks knocks of
// at most maxKnockBytes each, one per sender, and a taken seat comes back
// neither from the host's next list nor from a knock.
func TestDoorMemoryIsBounded(t *testing.T) {
	d := newDoor()
	t0 := time.Unix(1000, 0)
	big := make([]byte, 4096)
	for i := range 1000 {
		d.admit(netip.MustParseAddrPort(fmt.Sprintf("198.51.100.%d:%d", i%250+1, 1000+i)), big, t0)
	}
	if len(d.knocks) != maxKnocks {
		t.Fatalf("%d knocks kept, want %d", len(d.knocks), maxKnocks)
	}
	if refused, _ := d.counts(); refused != 1000 {
		t.Fatalf("%d refusals counted, want 1000", refused)
	}
	seats := seatsFor(t0.Add(time.Minute), "192.0.2.1:1")
	d.seat(seats, t0)
	if !d.admit(netip.MustParseAddrPort("192.0.2.1:5"), nil, t0) {
		t.Fatal("seat refused")
	}
	d.seat(seats, t0) // the host has not heard of the player yet
	if d.admit(netip.MustParseAddrPort("192.0.2.1:6"), nil, t0) {
		t.Fatal("a taken seat came back with the host's next list")
	}
	buf := make([]byte, 64)
	if n, _, ok := d.knocked(buf, t0); ok {
		t.Fatalf("a knock of %d bytes was taken without a seat", n)
	}
}

// BenchmarkDoor is what the door costs each datagram a room reads: an
// admitted player's (the path of every game message), and a stranger's
// (refused and kept as a knock).
func BenchmarkDoor(b *testing.B) {
	d := newDoor()
	now := time.Unix(1000, 0)
	d.seat(seatsFor(now.Add(time.Hour), "192.0.2.1:1"), now)
	player := netip.MustParseAddrPort("192.0.2.1:4000")
	d.admit(player, nil, now)
	msg := make([]byte, 17)
	b.Run("admitted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !d.admit(player, msg, now) {
				b.Fatal("refused")
			}
		}
	})
	stranger := netip.MustParseAddrPort("198.51.100.7:4000")
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d.admit(stranger, msg, now) {
				b.Fatal("admitted")
			}
		}
	})
}

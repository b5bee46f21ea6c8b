package instance

import (
	"fmt"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
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
	if !d.admit(a, netip.Addr{}, nil, t0) || !d.admit(b, netip.Addr{}, nil, t0.Add(time.Second)) {
		t.Fatal("two seats of one IP did not admit two addresses")
	}
	d.player(a.Addr(), 1, t0)
	d.player(a.Addr(), 1, t0)
	d.admit(b, netip.Addr{}, nil, t0.Add(5*time.Second)) // b speaks; a went quiet
	d.player(a.Addr(), -1, t0)
	if d.admit(a, netip.Addr{}, nil, t0.Add(6*time.Second)) || !d.admit(b, netip.Addr{}, nil, t0.Add(6*time.Second)) {
		t.Fatal("the quiet address was not the one given back")
	}

	c := netip.MustParseAddrPort("192.0.2.3:3000")
	d.seat(seatsFor(t0.Add(time.Minute), "192.0.2.3:1"), t0)
	if !d.admit(c, netip.Addr{}, nil, t0) {
		t.Fatal("seat of 192.0.2.3 refused")
	}
	d.seat(seatsFor(t0.Add(time.Minute), "192.0.2.9:1"), t0)
	d.admit(netip.MustParseAddrPort("192.0.2.9:9"), netip.Addr{}, nil, t0.Add(guestTTL+time.Second)) // an admission sweeps
	if d.admit(c, netip.Addr{}, nil, t0.Add(guestTTL+time.Second)) {
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
		d.admit(netip.MustParseAddrPort(fmt.Sprintf("198.51.100.%d:%d", i%250+1, 1000+i)), netip.Addr{}, big, t0)
	}
	if len(d.knocks) != maxKnocks {
		t.Fatalf("%d knocks kept, want %d", len(d.knocks), maxKnocks)
	}
	if refused, _ := d.counts(); refused != 1000 {
		t.Fatalf("%d refusals counted, want 1000", refused)
	}
	seats := seatsFor(t0.Add(time.Minute), "192.0.2.1:1")
	d.seat(seats, t0)
	if !d.admit(netip.MustParseAddrPort("192.0.2.1:5"), netip.Addr{}, nil, t0) {
		t.Fatal("seat refused")
	}
	d.seat(seats, t0) // the host has not heard of the player yet
	if d.admit(netip.MustParseAddrPort("192.0.2.1:6"), netip.Addr{}, nil, t0) {
		t.Fatal("a taken seat came back with the host's next list")
	}
	buf := make([]byte, 64)
	if n, _, ok := d.knocked(buf, t0); ok {
		t.Fatalf("a knock of %d bytes was taken without a seat", n)
	}
}

// A datagram that came just before its sender's seat is kept: the door
// says so when the seat comes within knockTTL, and hands the datagram on
// once, admitting its sender; a knock older than knockTTL is dropped.
func TestDoorHandsOnAKnockItsSeatCaughtUpWith(t *testing.T) {
	d := newDoor()
	t0 := time.Unix(1000, 0)
	old, early := netip.MustParseAddrPort("192.0.2.2:2000"), netip.MustParseAddrPort("192.0.2.1:1000")
	if d.admit(old, netip.Addr{}, []byte("old hello"), t0) || d.admit(early, netip.Addr{}, []byte("hello"), t0.Add(knockTTL)) {
		t.Fatal("admitted without a seat")
	}
	now := t0.Add(knockTTL + knockTTL/2) // old's knock is past knockTTL, early's is not
	if d.seat(seatsFor(now.Add(time.Minute), "192.0.2.2:1"), now) {
		t.Fatal("the door says a knock past knockTTL is waiting")
	}
	if !d.seat(seatsFor(now.Add(time.Minute), "192.0.2.2:1", "192.0.2.1:1"), now) {
		t.Fatal("the seat of a kept knock came, and the door did not say so")
	}
	buf := make([]byte, 64)
	if n, from, ok := d.knocked(buf, now); !ok || from != early || string(buf[:n]) != "hello" {
		t.Fatalf("knocked: %q from %v, %v; want the early hello", buf[:n], from, ok)
	}
	if n, from, ok := d.knocked(buf, now); ok {
		t.Fatalf("knocked again: %q from %v", buf[:n], from)
	}
	if !d.admit(early, netip.Addr{}, nil, now) {
		t.Fatal("the knock's sender is not admitted")
	}
	if refused, admitted := d.counts(); refused != 2 || admitted != 1 {
		t.Fatalf("counted %d refused and %d admitted, want 2 and 1", refused, admitted)
	}
}

// presentOf is an EXT_PRESENT of the token of seat in room, signed with
// the room's key of epoch, good until expires.
func presentOf(t *testing.T, hostKey []byte, epoch, room, seat uint32, expires time.Time) []byte {
	t.Helper()
	tok := ext.NewSigner(ext.RoomKey(hostKey, room)).Sign(nil, ext.SeatToken{Epoch: epoch, Room: room, Seat: seat, Expires: uint32(expires.Unix())})
	m := ext.Message{Header: packet.Header{Type: ext.Present}, SeatToken: tok}
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDoorSeatTokens: a seat token of this room, signed with its key and
// not expired, seats its holder at any address, once; from another
// address it moves the holder (the game is told where from); once the
// game let the holder go, it comes back within the grace and not after.
// Tokens of another room, another key or past their time seat no one.
func TestDoorSeatTokens(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	key, other := []byte("host key of this epoch, 32 bytes"), []byte("another host's key, also 32 byt")
	d := newDoor()
	d.setRoom(7, 30*time.Second)
	d.addKeys([]*instancepb.SeatKey{{Epoch: 2, Key: ext.RoomKey(key, 7)}})
	later := t0.Add(time.Hour)
	a, b, c := netip.MustParseAddrPort("192.0.2.1:1000"), netip.MustParseAddrPort("198.51.100.9:2000"), netip.MustParseAddrPort("203.0.113.5:3000")
	for name, pkt := range map[string][]byte{
		"another room":  presentOf(t, key, 2, 8, 1, later),
		"another key":   presentOf(t, other, 2, 7, 1, later),
		"another epoch": presentOf(t, key, 3, 7, 1, later),
		"expired":       presentOf(t, key, 2, 7, 1, t0),
		"seat 0":        presentOf(t, key, 2, 7, 0, later),
		"not a present": {0x01, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	} {
		if _, ok := d.present(a, netip.Addr{}, pkt, t0); ok {
			t.Errorf("%s: seated", name)
		}
	}
	if d.refusedCount() != 6 {
		t.Errorf("refused %d", d.refusedCount())
	}
	tok := presentOf(t, key, 2, 7, 1, later)
	if adm, ok := d.present(a, netip.Addr{}, tok, t0); !ok || adm.From.IsValid() || adm.room != 7 {
		t.Fatalf("a valid token: %+v, %v", adm, ok)
	}
	if !d.admit(a, netip.Addr{}, nil, t0) {
		t.Fatal("the token's holder is not admitted")
	}
	d.player(a.Addr(), 1, t0)
	if adm, ok := d.present(b, netip.Addr{}, tok, t0.Add(time.Second)); !ok || adm.From != a || adm.To != b {
		t.Fatalf("the holder from a new address: %+v, %v", adm, ok)
	}
	if d.admit(a, netip.Addr{}, nil, t0.Add(2*time.Second)) || !d.admit(b, netip.Addr{}, nil, t0.Add(2*time.Second)) {
		t.Fatal("the old address still gets in, or the new one does not")
	}
	if seat, at := d.player(b.Addr(), -1, t0.Add(3*time.Second)); seat != 1 || at != b {
		t.Fatalf("the game let go of seat %d at %v", seat, at)
	}
	if adm, ok := d.present(c, netip.Addr{}, tok, t0.Add(20*time.Second)); !ok || adm.From != b {
		t.Fatalf("back within the grace: %+v, %v", adm, ok)
	}
	d.player(c.Addr(), 1, t0.Add(20*time.Second))
	d.player(c.Addr(), -1, t0.Add(21*time.Second))
	if _, ok := d.present(a, netip.Addr{}, tok, t0.Add(52*time.Second)); ok {
		t.Fatal("back after the grace")
	}
	// A seat the host keeps for an address, taken there by a seed
	// client, is the token's too: the token moves its holder rather
	// than seating a second one.
	d.seat([]*instancepb.Seat{{Player: "192.0.2.50:5", ExpiresUnixMs: later.UnixMilli(), Serial: 2}}, t0)
	seed := netip.MustParseAddrPort("192.0.2.50:5555")
	if !d.admit(seed, netip.Addr{}, nil, t0) {
		t.Fatal("the address's seat")
	}
	if adm, ok := d.present(b, netip.Addr{}, presentOf(t, key, 2, 7, 2, later), t0); !ok || adm.From != seed {
		t.Fatalf("the token of a seat taken by address: %+v, %v", adm, ok)
	}
}

// A player admitted by its address alone (a seed client, no token) that
// the game lets go is gone: its seat is not kept for the grace, neither in
// the door nor, since the door names no seat, in the host's table.
func TestDoorKeepsNoSeatWithoutAToken(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	d := newDoor()
	d.setRoom(7, 30*time.Second)
	d.seat([]*instancepb.Seat{{Player: "192.0.2.50:5", ExpiresUnixMs: t0.Add(time.Hour).UnixMilli(), Serial: 3}}, t0)
	seed := netip.MustParseAddrPort("192.0.2.50:5555")
	if !d.admit(seed, netip.Addr{}, nil, t0) {
		t.Fatal("the address's seat")
	}
	d.player(seed.Addr(), 1, t0)
	if seat, at := d.player(seed.Addr(), -1, t0.Add(time.Second)); seat != 0 || at != seed {
		t.Fatalf("the game let go of a seed client: seat %d kept at %v", seat, at)
	}
	if len(d.away) != 0 {
		t.Fatalf("seats kept away: %v", d.away)
	}
}

// BenchmarkSeatTokenCheck is what the room's door spends on a seat token:
// an EXT_PRESENT parsed and its token checked (the HMAC of the room's
// key), and the holder seated again at its address; beside it, the HMAC
// alone. Metrics: ns per EXT_PRESENT, ns per HMAC check.
func BenchmarkSeatTokenCheck(b *testing.B) {
	key := []byte("host key of this epoch, 32 bytes")
	d := newDoor()
	d.setRoom(7, time.Minute)
	d.addKeys([]*instancepb.SeatKey{{Epoch: 2, Key: ext.RoomKey(key, 7)}})
	now := time.Now()
	tok := ext.NewSigner(ext.RoomKey(key, 7)).Sign(nil, ext.SeatToken{Epoch: 2, Room: 7, Seat: 1, Expires: uint32(now.Add(time.Hour).Unix())})
	pkt, _ := (&ext.Message{Header: packet.Header{Type: ext.Present}, SeatToken: tok}).Append(nil)
	from := netip.MustParseAddrPort("192.0.2.1:1000")
	signer := ext.NewSigner(ext.RoomKey(key, 7))
	const each = 1000
	var present, hmac time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range each {
			if _, ok := d.present(from, netip.Addr{}, pkt, now); !ok {
				b.Fatal("refused")
			}
		}
		t1 := time.Now()
		for range each {
			if !signer.Verify(tok) {
				b.Fatal("refused")
			}
		}
		present += t1.Sub(t0)
		hmac += time.Since(t1)
	}
	n := float64(b.N * each)
	b.ReportMetric(float64(present.Nanoseconds())/n, "ns/present")
	b.ReportMetric(float64(hmac.Nanoseconds())/n, "ns/hmac")
}

// BenchmarkDoor is what the door costs each datagram a room reads: an
// admitted player's (the path of every game message), and a stranger's
// (refused and kept as a knock).
func BenchmarkDoor(b *testing.B) {
	d := newDoor()
	now := time.Unix(1000, 0)
	d.seat(seatsFor(now.Add(time.Hour), "192.0.2.1:1"), now)
	player := netip.MustParseAddrPort("192.0.2.1:4000")
	d.admit(player, netip.Addr{}, nil, now)
	msg := make([]byte, 17)
	b.Run("admitted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !d.admit(player, netip.Addr{}, msg, now) {
				b.Fatal("refused")
			}
		}
	})
	stranger := netip.MustParseAddrPort("198.51.100.7:4000")
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d.admit(stranger, netip.Addr{}, msg, now) {
				b.Fatal("admitted")
			}
		}
	})
}

package teeinfo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// benchInfo is a server with n clients whose names and clans are as long
// as DDNet allows (15 and 11 bytes), every third a spectator.
func benchInfo(n int) Info {
	in := Info{
		Token: 0x123407, Version: "0.6.4, 16.4", Name: "Foyer room 17", Map: "arena",
		MapCRC: -1924373370, MapSize: 1082711, GameType: "DM",
		MaxPlayers: n, MaxClients: n, NumClients: n,
	}
	for i := range n {
		p := Player{
			Name: fmt.Sprintf("player-%08d", i), Clan: fmt.Sprintf("clan-%06d", i),
			Country: 276, Score: i * 10, IsPlayer: i%3 != 0,
		}
		if p.IsPlayer {
			in.NumPlayers++
		}
		in.Players = append(in.Players, p)
	}
	return in
}

func TestAppendExtendedSplits(t *testing.T) {
	for _, n := range []int{0, 1, 20, 64, 256} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := benchInfo(n)
			pkts, err := in.AppendExtended(nil)
			if err != nil {
				t.Fatal(err)
			}
			var reps []Reply
			for i, p := range pkts {
				if len(p) > MaxDatagram {
					t.Fatalf("packet %d is %d bytes", i, len(p))
				}
				rep, err := ParseReply(p)
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if want := map[bool]Kind{true: Extended, false: More}[i == 0]; rep.Kind != want || rep.Kind == More && rep.PacketNo != i {
					t.Fatalf("packet %d: kind %v no %d", i, rep.Kind, rep.PacketNo)
				}
				// Packed tight: the next packet's first player did not fit.
				if i > 0 {
					prev := reps[i-1]
					first := Reply{Kind: More, Info: Info{Players: rep.Info.Players[:1]}}
					extra := len(first.Append(nil)) - len(appendMoreHeader(nil, 0, 0))
					if len(pkts[i-1])+extra <= MaxDatagram {
						t.Fatalf("packet %d (%d bytes, %d players) had room for %d more bytes", i-1, len(pkts[i-1]), len(prev.Info.Players), extra)
					}
				}
				reps = append(reps, rep)
			}
			if n >= 64 && len(pkts) < 2 {
				t.Fatalf("%d players in %d packet(s)", n, len(pkts))
			}
			// Delivered in any order, they assemble to the original.
			rand.Shuffle(len(reps), func(i, j int) { reps[i], reps[j] = reps[j], reps[i] })
			var a Assembler
			for i := range reps {
				done, err := a.Add(&reps[i])
				if err != nil || done != (i == len(reps)-1) {
					t.Fatalf("Add %d/%d: done %v, %v", i+1, len(reps), done, err)
				}
			}
			got := a.Info()
			if len(got.Players) == 0 {
				got.Players = nil
			}
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("assembled %+v\nwant      %+v", got, in)
			}
			// Buffers are recycled.
			again, err := in.AppendExtended(pkts[:0])
			if err != nil || len(again) != len(pkts) || n > 0 && &again[0][0] != &pkts[0][0] {
				t.Fatalf("recycled: %d packets, %v", len(again), err)
			}
		})
	}
}

// With every string at its longest, the main packet's fields leave no room
// for a player: it goes out with none, and the players follow in iex+.
func TestAppendExtendedLongHeader(t *testing.T) {
	long := strings.Repeat("x", MaxString)
	in := Info{Token: -1, Version: long, Name: long, Map: long, GameType: long, NumClients: 2,
		Players: []Player{{Name: long, Clan: long}, {Name: long, Clan: long}}}
	pkts, err := in.AppendExtended(nil)
	if err != nil {
		t.Fatal(err)
	}
	var a Assembler
	for i, p := range pkts {
		rep, err := ParseReply(p)
		if err != nil || len(p) > MaxDatagram {
			t.Fatalf("packet %d: %d bytes, %v", i, len(p), err)
		}
		if i == 0 && len(rep.Info.Players) != 0 {
			t.Fatalf("main packet holds %d players", len(rep.Info.Players))
		}
		if done, err := a.Add(&rep); err != nil || done != (i == len(pkts)-1) {
			t.Fatalf("Add %d: %v, %v", i, done, err)
		}
	}
	if got := a.Info(); !reflect.DeepEqual(got, in) {
		t.Fatalf("assembled %+v", got)
	}
}

func TestAppendExtendedTooMany(t *testing.T) {
	in := benchInfo(MaxPlayers)
	long := strings.Repeat("n", MaxString)
	for i := range in.Players {
		in.Players[i].Name = long
	}
	pkts, err := in.AppendExtended(nil)
	if !errors.Is(err, ErrTooManyPlayers) || len(pkts) != 0 {
		t.Fatalf("%d packets, %v", len(pkts), err)
	}
}

func TestAppendVanilla(t *testing.T) {
	in := benchInfo(40)
	rep, err := ParseReply(in.AppendVanilla(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Info
	if len(got.Players) != VanillaMaxClients || got.NumClients != VanillaMaxClients || got.MaxClients != VanillaMaxClients ||
		got.MaxPlayers != VanillaMaxClients || got.NumPlayers != VanillaMaxClients {
		t.Fatalf("%d players, counts %d/%d %d/%d", len(got.Players), got.NumPlayers, got.MaxPlayers, got.NumClients, got.MaxClients)
	}
	if !reflect.DeepEqual(got.Players, in.Players[:VanillaMaxClients]) || got.Name != in.Name {
		t.Fatalf("players %+v", got.Players[:2])
	}
	if got.MapCRC != 0 || got.MapSize != 0 {
		t.Fatal("vanilla carries no map CRC or size")
	}
	// Long names: the list stops where the datagram would overflow.
	for i := range in.Players {
		in.Players[i].Name = strings.Repeat("n", MaxString)
		in.Players[i].Clan = strings.Repeat("c", MaxString)
	}
	wire := in.AppendVanilla(nil)
	rep, err = ParseReply(wire)
	if err != nil || len(wire) > MaxDatagram || len(rep.Info.Players) == 0 || len(rep.Info.Players) >= VanillaMaxClients {
		t.Fatalf("%d bytes, %d players, %v", len(wire), len(rep.Info.Players), err)
	}
	small := Info{NumClients: 3, MaxClients: 8}
	rep, _ = ParseReply(small.AppendVanilla(nil))
	if rep.Info.NumClients != 3 || rep.Info.MaxClients != 8 {
		t.Fatalf("small counts changed: %+v", rep.Info)
	}
}

func BenchmarkAppendExtended(b *testing.B) {
	for _, n := range []int{16, 64} {
		in := benchInfo(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var pkts [][]byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if pkts, err = in.AppendExtended(pkts[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(pkts)), "datagrams")
		})
	}
}

func BenchmarkAppendVanilla(b *testing.B) {
	in := benchInfo(16)
	buf := make([]byte, 0, MaxDatagram)
	b.ReportAllocs()
	for b.Loop() {
		buf = in.AppendVanilla(buf[:0])
	}
}

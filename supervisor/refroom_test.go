package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/game"
	"github.com/foyerlobby/foyer/room"
)

// player is a reference-room client on a real UDP socket, bound before
// the room exists so that its endpoint can hold a seat.
type player struct {
	t    *testing.T
	conn *net.UDPConn
	room *net.UDPAddr
	seq  uint16
}

func newPlayer(t *testing.T) *player {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: loopback.AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &player{t: t, conn: c}
}

func (p *player) endpoint() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (p *player) send(typ game.Type) {
	p.t.Helper()
	p.seq++
	b, err := (&game.Message{Type: typ, Seq: p.seq}).Append(nil)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.conn.WriteToUDP(b, p.room); err != nil {
		p.t.Fatal(err)
	}
}

// expect reads until a message of type typ; only pongs may come first.
func (p *player) expect(typ game.Type) game.Message {
	p.t.Helper()
	for {
		b, err := udptest.Read(p.conn, p.room.AddrPort(), 20*time.Second)
		if err != nil || b == nil {
			p.t.Fatalf("waiting for %v: %v", typ, err)
		}
		m, err := game.Parse(b)
		if err != nil {
			p.t.Fatalf("room sent %x: %v", b, err)
		}
		if m.Type == typ {
			return m
		}
		if m.Type != game.ServerPong {
			p.t.Fatalf("got %v, want %v", m.Type, typ)
		}
	}
}

func TestReferenceRoomThroughTheSupervisor(t *testing.T) {
	s, sink := newTest(t, "refroom", 2, func(c *Config) {
		c.MaxPlayers = 2
		c.Room = map[string]string{"min_players": "2", "countdown": "1s", "match_duration": "300ms"}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := s.Table().Watch(ctx)

	alice, bob := newPlayer(t), newPlayer(t)
	r, err := s.Table().Create(ctx, alice.endpoint())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Table().Join(ctx, r.ID, bob.endpoint(), room.Unproven); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Table().Join(ctx, r.ID, ep("127.0.0.1:1"), room.Unproven); !errors.Is(err, room.ErrFull) {
		t.Fatalf("third seat in a two-player room: %v", err)
	}
	alice.room = net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, r.Port))
	bob.room = alice.room

	alice.send(game.ClientHello)
	if m := alice.expect(game.ServerHello); m.RoomID != r.ID || m.MaxPlayers != 2 {
		t.Fatalf("alice's hello %+v", m)
	}
	eventually(t, "alice's seat to become a player", func() bool {
		row, _ := listed(s, r.ID)
		return row.Players == 1 && row.Seats == 1
	})
	bob.send(game.ClientHello)
	bob.expect(game.ServerHello)
	eventually(t, "bob's seat to become a player", func() bool {
		row, _ := listed(s, r.ID)
		return row.Players == 2 && row.Seats == 0
	})
	alice.send(game.ClientReady)
	bob.send(game.ClientReady)
	for _, p := range []*player{alice, bob} {
		if m := p.expect(game.CountdownTick); m.Seconds != 1 {
			t.Fatalf("tick %+v", m)
		}
		p.expect(game.GameStart)
		p.expect(game.GameEnd)
	}

	var states []string
	for {
		ev := nextEvent(t, events)
		if ev.Room.ID != r.ID {
			continue
		}
		if ev.Kind == room.Reaped {
			if ev.Cause != "finished" || ev.ExitCode != 0 || ev.Signal != "" {
				t.Fatalf("reaped %+v", ev)
			}
			break
		}
		if st := ev.Room.State.String(); len(states) == 0 || states[len(states)-1] != st {
			states = append(states, st)
		}
	}
	want := fmt.Sprint([]packet.RoomState{packet.Waiting, packet.Countdown, packet.Playing, packet.Finished})
	if got := fmt.Sprint(states); got != want {
		t.Fatalf("states %v, want %v", got, want)
	}
	if _, ok := listed(s, r.ID); ok {
		t.Fatal("finished room still listed")
	}
	if st := s.Stats(); st.PortsInUse != 0 || st.Reaped["finished"] != 1 {
		t.Fatalf("stats after the match: %+v", st)
	}
	sink.await(t, "room reaped", `"cause":"finished"`, `"exit_code":0`)
}

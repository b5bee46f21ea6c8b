package instance_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/packet"
)

// echoRoom is a game that echoes datagrams until the host stops it.
type echoRoom struct{ conn net.PacketConn }

func (g *echoRoom) Start(_ context.Context, _ instance.Assignment, conn net.PacketConn, r instance.Reporter) error {
	g.conn = conn
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			conn.WriteTo(buf[:n], from)
		}
	}()
	r.SetState(packet.Playing)
	return nil
}

func (g *echoRoom) Stop(context.Context) error { return g.conn.Close() }

// A game process's main is one call.
func ExampleServe() {
	instance.Serve(&echoRoom{})
}

// The host launches an instance, starts it on a port, and follows its
// status until it ends.
func ExampleLaunch() {
	ctx := context.Background()
	p, err := instance.Launch(ctx, instance.LaunchConfig{
		Cmd:          exec.Command("echo-room"),
		StartTimeout: 5 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Start(ctx, instance.Assignment{RoomID: 1, Port: 30000, MaxPlayers: 4}); err != nil {
		p.Kill()
		return
	}
	for s := range p.Status() {
		fmt.Println(s.State, s.Players)
	}
	<-p.Exited()
	fmt.Println(p.ExitStatus())
}

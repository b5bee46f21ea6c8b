package instance_test

import (
	"context"
	"net"

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

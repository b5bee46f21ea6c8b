package roomtable

import (
	"net/netip"
	"testing"

	"github.com/rs/zerolog"
)

// A network whose last room is gone is forgotten: the table keeps no
// entry for each network that ever created a room.
func TestNetworkForgottenWithItsLastRoom(t *testing.T) {
	table, err := New(DefaultConfig(), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	net := netip.MustParsePrefix("192.0.2.0/24")
	table.nets[net] = 2
	table.uncount(net)
	if n, ok := table.nets[net]; n != 1 || !ok {
		t.Fatalf("one of two rooms gone: count %d, %v", n, ok)
	}
	table.uncount(net)
	if n, ok := table.nets[net]; ok {
		t.Fatalf("the last room gone: the network is still counted, %d", n)
	}
}

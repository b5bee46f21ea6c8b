package lobby

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/foyerlobby/foyer/internal/mmsg"
)

// The read loops, their batch calls raw, give their processors up now
// and then once they are as many, over every listen address, as the
// processors, leaving none for the rest of the lobby. (That a batch
// follows GOMAXPROCS as it changes is package mmsg's
// TestYieldFollowsGOMAXPROCS.)
func TestReadersYieldWithNoProcessorToSpare(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, c := range []struct {
		readers, addrs int
		yield          bool
	}{{1, 1, false}, {3, 1, false}, {4, 1, true}, {5, 1, true}, {1, 2, false}, {2, 2, true}} {
		cfg := readersConfig(c.readers)
		cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("[::1]:0")}[:c.addrs]
		l, err := cfg.build(newMemRooms(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := mmsg.Yields(l.readLoops()); got != c.yield {
			t.Errorf("%d readers on %d addresses, 4 processors: yield %v, want %v", c.readers, c.addrs, got, c.yield)
		}
		l.Close()
	}
}

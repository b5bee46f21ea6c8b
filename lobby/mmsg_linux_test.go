package lobby

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/foyerlobby/foyer/internal/mmsg"
)

// The read loops make their batch calls raw only while there are fewer of
// them, over every listen address, than processors: one is always left
// for the rest of the lobby. (That a batch follows GOMAXPROCS as it
// changes is package mmsg's TestRawFollowsGOMAXPROCS.)
func TestRawCallsOnlyWithAProcessorToSpare(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, c := range []struct {
		readers, addrs int
		raw            bool
	}{{1, 1, true}, {3, 1, true}, {4, 1, false}, {5, 1, false}, {1, 2, true}, {2, 2, false}} {
		cfg := readersConfig(c.readers)
		cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("[::1]:0")}[:c.addrs]
		l, err := cfg.build(newMemRooms(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := mmsg.Raw(l.readLoops()); got != c.raw {
			t.Errorf("%d readers on %d addresses, 4 processors: raw calls %v, want %v", c.readers, c.addrs, got, c.raw)
		}
		l.Close()
	}
}

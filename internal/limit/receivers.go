package limit

import (
	"net/netip"
	"sync"
	"time"

	"github.com/foyerlobby/foyer/internal/bounded"
)

// A UDP datagram can carry any source address, so a reply to one may land
// on whoever the sender named. A source has shown that it receives what is
// sent to its address when it completed an exchange no forger can: a TCP
// handshake with any of Foyer's listeners, a TCP check of a server it
// registered, or a native JOIN naming a room id masked for it alone.
// Receivers remembers those sources for ReceiverTTL, so that a UDP edge
// may send them replies larger than what it sends a never-seen source.
const (
	// ReceiverTTL is how long a source that showed it receives is taken
	// to still be there.
	ReceiverTTL = 10 * time.Minute
	// maxReceivers bounds the sources remembered; the least recently seen
	// make room.
	maxReceivers = 65536
)

// Receivers is a table of the sources that showed they receive. It is
// safe for concurrent use.
type Receivers struct {
	mu sync.Mutex
	t  *bounded.Table[sourceKey, time.Time] // until when each is taken to receive
}

// NewReceivers remembers at most max sources; max must be positive.
func NewReceivers(max int) *Receivers {
	return &Receivers{t: bounded.New[sourceKey, time.Time](max)}
}

// Add records that ip showed at now that it receives.
func (r *Receivers) Add(ip netip.Addr, now time.Time) {
	k := sourceKey(ip.As16())
	r.mu.Lock()
	defer r.mu.Unlock()
	until, found := r.t.Get(k)
	if !found {
		until = r.t.Insert(k)
	}
	*until = now.Add(ReceiverTTL)
}

// Has reports whether ip showed it receives less than ReceiverTTL before
// now. An IPv4-mapped IPv6 address is the IPv4 source.
func (r *Receivers) Has(ip netip.Addr, now time.Time) bool {
	k := sourceKey(ip.As16())
	r.mu.Lock()
	defer r.mu.Unlock()
	until, found := r.t.Get(k)
	return found && now.Before(*until)
}

// Len is the number of sources remembered, some perhaps past their time.
func (r *Receivers) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.t.Len()
}

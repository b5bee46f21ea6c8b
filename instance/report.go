package instance

import (
	"net/netip"
	"sync"

	instancepb "github.com/foyerlobby/foyer/instance/proto"
	"github.com/foyerlobby/foyer/packet"
)

// maxPending bounds the reports queued for a host that is not reading:
// past it the oldest are dropped. Every report carries the player count,
// so a drop loses an event's detail, never the count.
const maxPending = 1024

// reporter is the instance's side of Watch: the game writes to it, the
// Watch call drains it.
type reporter struct {
	mu       sync.Mutex
	state    packet.RoomState
	players  int
	pending  []*instancepb.Status
	wake     chan struct{} // one token: something is pending
	finished chan struct{} // closed when Finished is reported
}

func newReporter() *reporter {
	return &reporter{wake: make(chan struct{}, 1), finished: make(chan struct{})}
}

// SetState reports a state change. After Finished nothing changes any more.
func (r *reporter) SetState(s packet.RoomState) {
	if s > packet.Finished {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == packet.Finished || r.state == s {
		return
	}
	r.state = s
	r.pushLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{})
	if s == packet.Finished {
		close(r.finished)
	}
}

// PlayerConnected reports a player's arrival.
func (r *reporter) PlayerConnected(ip netip.Addr) {
	r.player(instancepb.PlayerEvent_PLAYER_EVENT_CONNECTED, ip, 1)
}

// PlayerDisconnected reports a player's departure.
func (r *reporter) PlayerDisconnected(ip netip.Addr) {
	r.player(instancepb.PlayerEvent_PLAYER_EVENT_DISCONNECTED, ip, -1)
}

func (r *reporter) player(ev instancepb.PlayerEvent, ip netip.Addr, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == packet.Finished {
		return
	}
	r.players = max(r.players+delta, 0)
	r.pushLocked(ev, ip)
}

func (r *reporter) pushLocked(ev instancepb.PlayerEvent, ip netip.Addr) {
	if len(r.pending) == maxPending {
		r.pending = append(r.pending[:0], r.pending[1:]...)
	}
	r.pending = append(r.pending, r.statusLocked(ev, ip))
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reporter) statusLocked(ev instancepb.PlayerEvent, ip netip.Addr) *instancepb.Status {
	s := &instancepb.Status{
		State:   instancepb.State(r.state),
		Players: uint32(r.players),
		Event:   ev,
	}
	if ip.IsValid() {
		s.Ip = ip.String()
	}
	return s
}

// current is the status as a heartbeat carries it.
func (r *reporter) current() *instancepb.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{})
}

// playerCount is the number of players the game reports as connected.
func (r *reporter) playerCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.players
}

// take returns the pending reports and clears them.
func (r *reporter) take() []*instancepb.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending
	r.pending = nil
	return p
}

// snapshot returns the current status and drops what is pending: a new
// watcher learns the present, not the history it missed.
func (r *reporter) snapshot() *instancepb.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = nil
	return r.statusLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{})
}

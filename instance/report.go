package instance

import (
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// maxPending bounds the reports queued for a host that is not reading:
// past it the oldest are dropped. Every report carries the player count,
// so a drop loses an event's detail, never the count.
const maxPending = 1024

// maxDetailText bounds each text a kept program reports of itself: it is
// what a foreign server wrote, and the host has no use for more.
const maxDetailText = 256

// reporter is the instance's side of Watch: the game writes to it, the
// Watch call drains it.
type reporter struct {
	mu       sync.Mutex
	state    packet.RoomState
	players  int
	details  *instancepb.Details // the last reported; nil if none ever was
	fresh    bool                // details reported again since the last heartbeat
	exit     *instancepb.Exit    // set with Finished
	pending  []*instancepb.Status
	wake     chan struct{} // one token: something is pending
	finished chan struct{} // closed when Finished is reported
	// onPlayer hears of every player's arrival (1) and departure (-1),
	// for the room's door, which says the player's seat and address;
	// nil: no one. refused counts what the door turned away; nil:
	// nothing.
	onPlayer func(ip netip.Addr, delta int, now time.Time) (uint32, netip.AddrPort)
	refused  func() uint64
	// seated is the door's answer to Seated; nil: no seat is held.
	seated func(ip netip.Addr, now time.Time) (time.Time, bool)
	// token is the door's answer to SeatToken; nil: no token holds.
	token func(b []byte, now time.Time) (uint32, time.Time, bool)
	// kept is the room's description as its host keeps it (Keep); own
	// is what the game made of it (Labeler), nil while it said nothing.
	kept, own *instancepb.Metadata
}

var (
	_ KeptReporter = (*reporter)(nil)
	_ Labeler      = (*reporter)(nil)
)

func newReporter(onPlayer func(netip.Addr, int, time.Time) (uint32, netip.AddrPort)) *reporter {
	return &reporter{wake: make(chan struct{}, 1), finished: make(chan struct{}), onPlayer: onPlayer}
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
	if s == packet.Finished {
		r.finishLocked(&instancepb.Exit{})
		return
	}
	r.state = s
	r.pushLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, false)
}

// finishLocked reports Finished with how the process will end. r.mu is
// held.
func (r *reporter) finishLocked(exit *instancepb.Exit) {
	r.state, r.exit = packet.Finished, exit
	r.pushLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, false)
	close(r.finished)
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
	var seat uint32
	var at netip.AddrPort
	if r.onPlayer != nil {
		seat, at = r.onPlayer(ip, delta, time.Now())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == packet.Finished {
		return
	}
	r.players = max(r.players+delta, 0)
	r.pushLocked(ev, ip, false)
	st := r.pending[len(r.pending)-1]
	st.Seat = seat
	if delta < 0 && at.IsValid() {
		st.Addr = at.String()
	}
}

// SetDetails reports what a kept program says of itself. A change is sent
// at once; the same account again rides on the next heartbeat, which then
// carries the details as the sign of life they are.
func (r *reporter) SetDetails(d Details) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == packet.Finished {
		return
	}
	players := min(max(d.Players, 0), math.MaxUint16)
	details := &instancepb.Details{
		MaxPlayers: uint32(min(max(d.MaxPlayers, 0), math.MaxUint16)),
		Name:       clip(d.Name), Game: clip(d.Game), Map: clip(d.Map),
		Password: d.Password,
	}
	if players == r.players && proto.Equal(details, r.details) {
		r.fresh = true
		return
	}
	r.players, r.details = players, details
	r.pushLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, true)
}

// keep takes the room's description as the host keeps it.
func (r *reporter) keep(m *instancepb.Metadata) {
	r.mu.Lock()
	r.kept = m
	r.mu.Unlock()
}

// describedAs is the room's name, mode and map as it shows them: the
// game's, or the host's.
func (r *reporter) describedAs() (name, mode, mapName string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.own
	if m == nil {
		m = r.kept
	}
	return m.GetName(), m.GetMode(), m.GetMap()
}

// SetName, SetMode, SetMap and SetLabel change the room's description;
// see Labeler.
func (r *reporter) SetName(name string) {
	r.label(func(m *instancepb.Metadata) { m.Name = fit(name, ext.MaxName) })
}

func (r *reporter) SetMode(mode string) {
	r.label(func(m *instancepb.Metadata) { m.Mode = fit(mode, ext.MaxMode) })
}

func (r *reporter) SetMap(mapName string) {
	r.label(func(m *instancepb.Metadata) { m.Map = fit(mapName, ext.MaxMap) })
}

func (r *reporter) SetLabel(key, value string) {
	if !ext.ValidTagKey(key) {
		return
	}
	value = fit(value, ext.MaxTagValue)
	r.label(func(m *instancepb.Metadata) {
		i := slices.IndexFunc(m.Tags, func(t *instancepb.Tag) bool { return t.GetKey() == key })
		switch {
		case value == "" && i >= 0:
			m.Tags = slices.Delete(m.Tags, i, i+1)
		case value == "":
		case i >= 0:
			m.Tags[i].Value = value
		case len(m.Tags) < ext.MaxTags:
			m.Tags = append(m.Tags, &instancepb.Tag{Key: key, Value: value})
		}
	})
}

// label changes the game's description with change, from the host's if
// the game said nothing yet, and reports it.
func (r *reporter) label(change func(*instancepb.Metadata)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == packet.Finished {
		return
	}
	m := &instancepb.Metadata{}
	if r.own != nil {
		m = proto.Clone(r.own).(*instancepb.Metadata)
	} else if r.kept != nil {
		m = proto.Clone(r.kept).(*instancepb.Metadata)
	}
	change(m)
	if proto.Equal(m, r.own) {
		return
	}
	r.own = m
	r.pushLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, false)
}

// fit is s as a text of at most max bytes: cut at a rune, control
// characters dropped, so that every listing can show it.
func fit(s string, max int) string {
	var b []byte
	for _, c := range s {
		if c < 0x20 || c >= 0x7F && c < 0xA0 || c == utf8.RuneError {
			continue
		}
		if len(b)+utf8.RuneLen(c) > max {
			break
		}
		b = utf8.AppendRune(b, c)
	}
	return string(b)
}

// Exited reports how a kept program ended, which finishes the room.
func (r *reporter) Exited(code int, signal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == packet.Finished {
		return
	}
	r.finishLocked(&instancepb.Exit{Code: int32(max(min(code, math.MaxInt32), -1)), Signal: clip(signal)})
}

// Seated reports whether ip holds a seat the host keeps now, and until
// when.
func (r *reporter) Seated(ip netip.Addr) (time.Time, bool) {
	if r.seated == nil {
		return time.Time{}, false
	}
	return r.seated(ip, time.Now())
}

// SeatToken reports whether b is a seat token of the room that a player
// may present now (signed by a key of its host, unexpired), its seat and
// its expiry.
func (r *reporter) SeatToken(b []byte) (seat uint32, expires time.Time, ok bool) {
	if r.token == nil {
		return 0, time.Time{}, false
	}
	return r.token(b, time.Now())
}

// exitCode is what the process exits with: 0, or 1 when a kept program
// ended otherwise than with status 0.
func (r *reporter) exitCode() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exit.GetCode() != 0 || r.exit.GetSignal() != "" {
		return 1
	}
	return 0
}

func clip(s string) string {
	if len(s) > maxDetailText {
		return s[:maxDetailText]
	}
	return s
}

func (r *reporter) pushLocked(ev instancepb.PlayerEvent, ip netip.Addr, details bool) {
	if len(r.pending) == maxPending {
		r.pending = append(r.pending[:0], r.pending[1:]...)
	}
	r.pending = append(r.pending, r.statusLocked(ev, ip, details))
	r.fresh = r.fresh && !details
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// statusLocked is the status now, with ev about ip, and the details when
// asked for. The final status carries how the process ends.
func (r *reporter) statusLocked(ev instancepb.PlayerEvent, ip netip.Addr, details bool) *instancepb.Status {
	s := &instancepb.Status{
		State:   instancepb.State(r.state),
		Players: uint32(r.players),
		Event:   ev,
		Exit:    r.exit,
	}
	if details {
		s.Details = r.details
	}
	s.Meta = r.own
	if r.refused != nil {
		s.DoorRefused = r.refused()
	}
	if ip.IsValid() {
		s.Ip = ip.String()
	}
	return s
}

// current is the status as a new watcher gets it: the details included.
func (r *reporter) current() *instancepb.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, true)
}

// heartbeat is the status a heartbeat carries: the details only when the
// program reported them again since the last one, so that a program that
// fell silent stops looking alive.
func (r *reporter) heartbeat() *instancepb.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.statusLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, r.fresh)
	r.fresh = false
	return st
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

// snapshot returns the current status, details included, and drops what
// is pending: a new watcher learns the present, not the history it
// missed.
func (r *reporter) snapshot() *instancepb.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = nil
	return r.statusLocked(instancepb.PlayerEvent_PLAYER_EVENT_NONE, netip.Addr{}, true)
}

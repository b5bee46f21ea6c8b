package host

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// PlayerEventKind says whether a player came or went.
type PlayerEventKind uint8

// The player events a Status can carry.
const (
	NoPlayerEvent PlayerEventKind = iota
	PlayerConnected
	PlayerDisconnected
)

// Status is one report from an instance: sent on every change and as a
// heartbeat at least every 2 s.
type Status struct {
	State   packet.RoomState
	Players int
	Event   PlayerEventKind // NoPlayerEvent for heartbeats and state changes
	IP      netip.Addr      // the player's IP when Event is set
	// Details is set when a room that counts its players without their
	// addresses reports itself; a room that does is alive only while it
	// keeps doing so.
	Details *Details
	// Exit is set on the last report of an instance about to exit.
	Exit *Exit
	// DoorRefused is how many datagrams the room's door turned away so
	// far: their senders held no seat.
	DoorRefused uint64
	// Seat is the seat of the player of Event when it showed a seat
	// token; with PlayerDisconnected, Addr is its last address.
	Seat uint32
	Addr netip.AddrPort
	// Meta is what the room now says describes it; nil if it said
	// nothing.
	Meta *room.Meta
}

// Status's reports beyond the player events.
type (
	// Details is what a room that counts its players without their
	// addresses (a kept foreign server) says of itself; a Status carries
	// it only when the room just said so.
	Details struct {
		MaxPlayers      int
		Name, Game, Map string
		Password        bool
	}
	// Exit is how the instance said its process ends: the code, or -1
	// and the signal that ended the program it kept.
	Exit struct {
		Code   int
		Signal string
	}
)

// Kept is what a host stores in its instance (Process.Keep) for the next
// host to find (Description.Kept).
type Kept struct {
	Listed bool        // handed out, as opposed to kept ready
	Seats  []room.Seat // oldest first
	// Keys are the room's seat-token keys, newest first.
	Keys []instance.SeatKey
	// Meta, Code and Private are the room's; Password the salted hash of
	// its password (nil: none).
	Meta     room.Meta
	Code     string
	Private  bool
	Password []byte
}

// maxKeptSeats bounds the seats one Keep carries, so that the message
// stays far below instancepb.MaxMessage whatever a room's size: the
// youngest are kept.
const maxKeptSeats = 1024

// Description is what an instance says of itself (Process.Describe).
type Description struct {
	Started    bool // Start succeeded: it is a room
	Assignment instance.Assignment
	StartedAt  time.Time
	Status     Status // the present, details included
	Kept       Kept
	PID        int
	StartTicks uint64 // with PID, names the process for good
	// Runs says that the game runs another program on its port (a kept
	// foreign server).
	Runs bool
}

func hostState(k Kept) *instancepb.HostState {
	seats := k.Seats
	if len(seats) > maxKeptSeats {
		seats = seats[len(seats)-maxKeptSeats:]
	}
	m := &instancepb.HostState{Listed: k.Listed, Seats: make([]*instancepb.Seat, len(seats)),
		SeatKeys: seatKeys(k.Keys), Meta: metadata(k.Meta), Code: k.Code, Private: k.Private, Password: k.Password}
	for i, s := range seats {
		m.Seats[i] = &instancepb.Seat{Player: s.Player.String(), ExpiresUnixMs: s.Expires.UnixMilli(), Proven: s.Proven,
			Creator: s.Creator, Serial: s.Serial}
	}
	return m
}

func metadata(m room.Meta) *instancepb.Metadata {
	out := &instancepb.Metadata{Name: m.Name, Mode: m.Mode, Map: m.Map}
	for _, t := range m.Tags.Slice() {
		out.Tags = append(out.Tags, &instancepb.Tag{Key: t.Key, Value: t.Value})
	}
	return out
}

// metaFrom reads what a room says describes it: the word of a process
// that may be anything, so what a listing cannot carry is dropped.
func metaFrom(m *instancepb.Metadata) room.Meta {
	text := func(s string, max int) string {
		if ext.ValidText(s, max) {
			return s
		}
		return ""
	}
	out := room.Meta{Name: text(m.GetName(), ext.MaxName), Mode: text(m.GetMode(), ext.MaxMode), Map: text(m.GetMap(), ext.MaxMap)}
	var tags []room.Tag
	for _, t := range m.GetTags() {
		if len(tags) < room.MaxTags && ext.ValidTagKey(t.GetKey()) && ext.ValidText(t.GetValue(), ext.MaxTagValue) &&
			!slices.ContainsFunc(tags, func(u room.Tag) bool { return u.Key == t.GetKey() }) {
			tags = append(tags, room.Tag{Key: t.GetKey(), Value: t.GetValue()})
		}
	}
	out.Tags = room.TagsOf(tags)
	return out
}

// descriptionFrom reads an instance's description; it is the word of a
// process that may be anything, so every field is checked.
func descriptionFrom(m *instancepb.Description) (Description, error) {
	d := Description{Started: m.GetStarted(), PID: int(m.GetPid()), StartTicks: m.GetStartTicks(), Runs: m.GetKept()}
	if d.Started {
		a, err := assignment(m.GetAssignment())
		if err != nil {
			return Description{}, err
		}
		d.Assignment = a
		d.StartedAt = time.UnixMilli(m.GetStartedUnixMs())
	}
	st, ok := statusFrom(m.GetStatus())
	if !ok {
		return Description{}, errors.New("instance: describe: invalid status")
	}
	d.Status = st
	h := m.GetHost()
	d.Kept.Listed = h.GetListed()
	d.Kept.Meta, d.Kept.Private = metaFrom(h.GetMeta()), h.GetPrivate()
	if ext.ValidCode(h.GetCode()) {
		d.Kept.Code = h.GetCode()
	}
	if len(h.GetPassword()) > 0 {
		d.Kept.Password = h.GetPassword()
	}
	for _, k := range h.GetSeatKeys() {
		d.Kept.Keys = append(d.Kept.Keys, instance.SeatKey{Epoch: k.GetEpoch(), Key: k.GetKey()})
	}
	seats := h.GetSeats()
	for _, s := range seats[max(len(seats)-maxKeptSeats, 0):] {
		player, err := netip.ParseAddrPort(s.GetPlayer())
		if err != nil {
			continue
		}
		d.Kept.Seats = append(d.Kept.Seats, room.Seat{Player: player, Expires: time.UnixMilli(s.GetExpiresUnixMs()),
			Proven: s.GetProven(), Creator: s.GetCreator(), Serial: s.GetSerial()})
	}
	return d, nil
}

func assignment(m *instancepb.StartRequest) (instance.Assignment, error) {
	a := instance.Assignment{RoomID: m.GetRoomId(), MaxPlayers: int(m.GetMaxPlayers()), Settings: m.GetSettings()}
	if a.RoomID == 0 || m.GetPort() == 0 || m.GetPort() > 0xFFFF || a.MaxPlayers < 1 || a.MaxPlayers > 0xFFFF {
		return a, fmt.Errorf("instance: describe: assignment of room %d port %d for %d players makes no room",
			a.RoomID, m.GetPort(), a.MaxPlayers)
	}
	a.Port = uint16(m.GetPort())
	if b := m.GetBind(); b != "" {
		ip, err := netip.ParseAddr(b)
		if err != nil {
			return a, fmt.Errorf("instance: describe: bind %q: %v", b, err)
		}
		a.Bind = ip
	}
	return a, nil
}

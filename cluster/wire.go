package cluster

import (
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
	"github.com/foyerlobby/foyer/room"
)

// What hosts write to each other, as JSON: small, and readable with the
// nats command when a cluster needs looking into. Everything read is
// checked: a value that cannot be a room is dropped and counted.

// Key prefixes in the cluster bucket.
const (
	hostsPrefix = "hosts."
	roomsPrefix = "rooms."
)

// hostKey and roomKey name a host's keys.
func hostKey(host string) string { return hostsPrefix + host }
func roomKey(host string, id uint32) string {
	return roomsPrefix + host + "." + strconv.FormatUint(uint64(id), 10)
}

// parseRoomKey splits rooms.<host>.<id>; host names may hold dots, ids
// never do.
func parseRoomKey(key string) (host string, id uint32, ok bool) {
	rest, ok := strings.CutPrefix(key, roomsPrefix)
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil || n == 0 {
		return "", 0, false
	}
	return rest[:i], uint32(n), true
}

// hostRecord is a host's heartbeat.
type hostRecord struct {
	Addr netip.Addr `json:"addr"` // public address
	Free int        `json:"free"` // rooms it could start now
	// Range is the range of room ids the host holds (see ids.go): its
	// rooms are the rooms of that range it lists, and only those.
	Range int `json:"range"`
}

func (h hostRecord) valid() bool {
	return h.Addr.IsValid() && h.Free >= 0 && h.Range >= 1 && h.Range <= maxRange
}

// roomRecord is one room as its host publishes it.
type roomRecord struct {
	ID         uint32           `json:"id"`
	Port       uint16           `json:"port"`
	State      packet.RoomState `json:"state"`
	Players    int              `json:"players"`
	Seats      int              `json:"seats"`
	MaxPlayers int              `json:"max"`
	PID        int              `json:"pid,omitempty"`
	StartedAt  int64            `json:"started"` // Unix ms
	Source     room.Source      `json:"source"`
	Name       string           `json:"name,omitempty"`
	Game       string           `json:"game,omitempty"`
	Map        string           `json:"map,omitempty"`
	Host       netip.Addr       `json:"host,omitzero"` // a registered room's own address
	Password   bool             `json:"password,omitempty"`
	Unchecked  bool             `json:"unchecked,omitempty"` // never offered natively
	// What the lobby's extension carries: the room's mode and tags, its
	// join code (which joins it from any host) and whether it is private.
	Mode    string     `json:"mode,omitempty"`
	Tags    []room.Tag `json:"tags,omitempty"`
	Code    string     `json:"code,omitempty"`
	Private bool       `json:"private,omitempty"`
}

func recordOf(r room.Room) roomRecord {
	return roomRecord{
		ID: r.ID, Port: r.Port, State: r.State, Players: r.Players, Seats: r.Seats, MaxPlayers: r.MaxPlayers,
		PID: r.PID, StartedAt: r.StartedAt.UnixMilli(), Source: r.Source, Name: r.Name, Game: r.Game, Map: r.Map,
		Host: r.Host, Password: r.Password, Unchecked: r.Unchecked,
		Mode: r.Mode, Tags: r.Tags.Slice(), Code: r.Code, Private: r.Private,
	}
}

func (rec roomRecord) valid() bool {
	in16 := func(n int) bool { return n >= 0 && n <= math.MaxUint16 }
	return rec.ID != 0 && rec.Port != 0 && rec.State <= packet.Finished &&
		in16(rec.Players) && in16(rec.Seats) && in16(rec.MaxPlayers) &&
		(rec.Code == "" || ext.ValidCode(rec.Code)) && len(rec.Tags) <= room.MaxTags && validMeta(rec.meta())
}

// equal reports whether rec and o say the same (no tags and an empty
// list of them alike).
func (rec roomRecord) equal(o roomRecord) bool {
	if !slices.Equal(rec.Tags, o.Tags) {
		return false
	}
	rec.Tags, o.Tags = nil, nil
	return reflect.DeepEqual(rec, o)
}

// meta is what describes rec's room.
func (rec roomRecord) meta() room.Meta {
	return room.Meta{Name: rec.Name, Mode: rec.Mode, Map: rec.Map, Tags: room.TagsOf(rec.Tags)}
}

// validMeta reports whether m may describe a room of another host: what
// the extension's listings carry. A registered room's name is its
// server's, which the GG2 edge bounds: only the mode and the tags, which
// the extension alone gives, are held to its bounds.
func validMeta(m room.Meta) bool {
	tags := m.Tags.Slice()
	if !ext.ValidText(m.Mode, ext.MaxMode) || len(tags) > room.MaxTags {
		return false
	}
	for i, t := range tags {
		if !ext.ValidTagKey(t.Key) || !ext.ValidText(t.Value, ext.MaxTagValue) {
			return false
		}
		for _, u := range tags[:i] {
			if u.Key == t.Key {
				return false
			}
		}
	}
	return true
}

// row is rec as a room of host node, listed by this host: at host's
// address (see the package doc), or at its own for a registered room.
func (rec roomRecord) row(node string, host netip.Addr) room.Room {
	if rec.Host.IsValid() {
		host = rec.Host
	}
	r := room.Room{
		ID: rec.ID, Port: rec.Port, State: rec.State, Players: rec.Players, Seats: rec.Seats,
		MaxPlayers: rec.MaxPlayers, PID: rec.PID, StartedAt: time.UnixMilli(rec.StartedAt), Source: rec.Source,
		Game: rec.Game, Host: host, Node: node, Password: rec.Password,
		Unchecked: rec.Unchecked, Code: rec.Code, Private: rec.Private,
	}
	r.SetMeta(rec.meta())
	return r
}

// decodeRoom reads a room value.
func decodeRoom(b []byte) (roomRecord, error) {
	var rec roomRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, err
	}
	if !rec.valid() {
		return rec, errors.New("not a room")
	}
	return rec, nil
}

// createRequest asks a host to start a room with a seat for Creator; an
// extended one (Ext) with what describes it, private or not, with a
// password or not, and a seat token for Client.
type createRequest struct {
	Creator  netip.AddrPort `json:"creator"`
	Ext      bool           `json:"ext,omitempty"`
	Name     string         `json:"name,omitempty"`
	Mode     string         `json:"mode,omitempty"`
	Map      string         `json:"map,omitempty"`
	Tags     []room.Tag     `json:"tags,omitempty"`
	Private  bool           `json:"private,omitempty"`
	Password string         `json:"password,omitempty"`
	Client   [8]byte        `json:"client,omitzero"`
}

// options are what an extended createRequest asks of its room.
func (r createRequest) options() room.CreateOptions {
	return room.CreateOptions{Meta: room.Meta{Name: r.Name, Mode: r.Mode, Map: r.Map, Tags: room.TagsOf(r.Tags)},
		Private: r.Private, Password: r.Password, Client: r.Client}
}

// valid reports whether r can be run.
func (r createRequest) valid() bool {
	m := r.options().Meta
	return r.Creator.IsValid() && len(r.Tags) <= room.MaxTags && ext.ValidText(m.Name, ext.MaxName) &&
		ext.ValidText(m.Map, ext.MaxMap) && validMeta(m) && ext.ValidText(r.Password, ext.MaxPassword)
}

// joinRequest asks a host to hold a seat in room ID for Player; an
// extended one (Ext) by ID or Code, with a Password, and a seat token for
// Client.
type joinRequest struct {
	ID       uint32         `json:"id"`
	Player   netip.AddrPort `json:"player"`
	Proof    room.Proof     `json:"proof"`
	Ext      bool           `json:"ext,omitempty"`
	Code     string         `json:"code,omitempty"`
	Password string         `json:"password,omitempty"`
	Client   [8]byte        `json:"client,omitzero"`
}

// valid reports whether r can be run.
func (r joinRequest) valid() bool {
	return (r.ID != 0 || r.Ext && ext.ValidCode(r.Code)) && r.Player.IsValid() && r.Proof <= room.SawListing &&
		ext.ValidText(r.Password, ext.MaxPassword)
}

// reply answers a request: Ack alone first for a CREATE, then the Room
// (with the seat's Token, for an extended request) or the Err, a
// room.Reason name.
type reply struct {
	Ack   bool        `json:"ack,omitempty"`
	Room  *roomRecord `json:"room,omitempty"`
	Token []byte      `json:"token,omitempty"`
	Err   string      `json:"err,omitempty"`
	Msg   string      `json:"msg,omitempty"` // the refusal in words, for the log
}

// refusal turns a reply's Err back into the sentinel it names, wrapped
// with its words when they add something.
func (r reply) refusal() error {
	err := room.ReasonError(r.Err)
	switch {
	case err == nil:
		return errors.New(r.Msg)
	case r.Msg == "" || r.Msg == err.Error() || err == room.ErrFull || err == room.ErrNotJoinable || err == room.ErrNoRoom ||
		err == room.ErrWrongPassword:
		// The lobby compares these with ==.
		return err
	}
	return &remoteError{err: err, msg: r.Msg}
}

// remoteError is a refusal from another host: its sentinel, and its words.
type remoteError struct {
	err error
	msg string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// encodeReply encodes a request's outcome.
func encodeReply(r room.Room, err error) []byte { return encodeGrant(room.Grant{Room: r}, err) }

// encodeGrant encodes an extended request's outcome: the room and the
// seat's token.
func encodeGrant(g room.Grant, err error) []byte {
	var rep reply
	if err != nil {
		rep.Err, rep.Msg = room.Reason(err), err.Error()
	} else {
		rec := recordOf(g.Room)
		rep.Room, rep.Token = &rec, g.Token
	}
	b, _ := json.Marshal(rep) // plain values: cannot fail
	return b
}

// decodeReply reads an answer; a room in it must be a room.
func decodeReply(b []byte) (reply, error) {
	var rep reply
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, err
	}
	if rep.Room != nil && !rep.Room.valid() {
		return rep, errors.New("not a room")
	}
	if !rep.Ack && rep.Room == nil && rep.Err == "" {
		return rep, errors.New("empty reply")
	}
	return rep, nil
}

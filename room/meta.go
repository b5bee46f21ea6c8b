package room

import (
	"context"
	"net/netip"
	"strings"
)

// MaxTags is how many tags a room carries at most.
const MaxTags = 4

// Tag is one key/value label of a room.
type Tag struct{ Key, Value string }

// Tags are a room's labels, the set ones first: the first with an empty
// Key ends them. An array, so that a Room stays comparable.
type Tags [MaxTags]Tag

// TagsOf makes Tags of at most MaxTags tags; extra ones are dropped.
func TagsOf(tags []Tag) Tags {
	var t Tags
	copy(t[:], tags)
	return t
}

// Slice returns the set tags.
func (t Tags) Slice() []Tag {
	n := 0
	for n < MaxTags && t[n].Key != "" {
		n++
	}
	if n == 0 {
		return nil
	}
	return append([]Tag(nil), t[:n]...)
}

// Get returns the value of key, and whether the room has it.
func (t Tags) Get(key string) (string, bool) {
	for _, g := range t {
		if g.Key == "" {
			break
		}
		if g.Key == key {
			return g.Value, true
		}
	}
	return "", false
}

// String is the tags as "k=v,k=v", for pages and logs.
func (t Tags) String() string {
	var b strings.Builder
	for i, g := range t.Slice() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.Key + "=" + g.Value)
	}
	return b.String()
}

// Meta is what describes a room in the listings that show it: given at
// CREATE, updated by the room itself.
type Meta struct {
	Name, Mode, Map string
	Tags            Tags
}

// Meta is r's description.
func (r *Room) Meta() Meta { return Meta{Name: r.Name, Mode: r.Mode, Map: r.Map, Tags: r.Tags} }

// SetMeta replaces r's description with m.
func (r *Room) SetMeta(m Meta) { r.Name, r.Mode, r.Map, r.Tags = m.Name, m.Mode, m.Map, m.Tags }

// Filter says which rooms a listing or a quick join wants; zero fields ask
// nothing.
type Filter struct {
	// States is a set of room states, bit n for state n; 0 is any.
	States uint8
	// MinFree is the free places a room must have at least.
	MinFree int
	// Mode and Map must equal the room's; NamePrefix must start its name.
	Mode, Map, NamePrefix string
	// Tags must each be among the room's.
	Tags []Tag
}

// Match reports whether r is a room f asks for.
func (f *Filter) Match(r *Room) bool {
	switch {
	case f.States != 0 && f.States&(1<<r.State) == 0,
		f.MinFree > 0 && r.MaxPlayers-r.Occupied() < f.MinFree,
		f.Mode != "" && f.Mode != r.Mode,
		f.Map != "" && f.Map != r.Map,
		f.NamePrefix != "" && !strings.HasPrefix(r.Name, f.NamePrefix):
		return false
	}
	for _, t := range f.Tags {
		if v, ok := r.Tags.Get(t.Key); !ok || v != t.Value {
			return false
		}
	}
	return true
}

// Public reports whether r may be listed: it is not private. A private
// room is joined by its code alone, and no listing shows it.
func (r *Room) Public() bool { return !r.Private }

// CreateOptions are what an extended CREATE asks of its room.
type CreateOptions struct {
	Meta    Meta
	Private bool
	// Password, when not empty, is wanted by every JOIN; the table keeps
	// only a salted slow hash of it.
	Password string
	// Client is the client's own id, which its seat token binds.
	Client [8]byte
}

// JoinRequest is an extended JOIN: by room id or by code.
type JoinRequest struct {
	ID       uint32 // 0 with a Code
	Code     string
	Player   netip.AddrPort
	Proof    Proof
	Password string
	Client   [8]byte
}

// Grant is a seat an extended request got: the room, and the seat's
// signed token, which the player shows the room's door.
type Grant struct {
	Room  Room
	Token []byte
}

// Extended is a Table that also serves the extended lobby protocol:
// metadata, private rooms and codes, passwords, quick join and seat
// tokens.
type Extended interface {
	Table
	// CreateWith starts a room with o for creator and holds its seat.
	CreateWith(ctx context.Context, creator netip.AddrPort, o CreateOptions) (Grant, error)
	// JoinWith holds a seat for req.Player in the room req names, by id
	// (a public room only) or by code, checking its password. It may
	// wait for a password's hash: callers run it off any loop unless
	// NeedsWork says it does not.
	JoinWith(ctx context.Context, req JoinRequest) (Grant, error)
	// QuickJoin holds a seat for player in the fullest joinable public
	// room without a password that f matches, or starts one described by
	// f (its mode, map and tags) when none does, asking mayCreate first.
	QuickJoin(ctx context.Context, f Filter, player netip.AddrPort, client [8]byte, mayCreate func() error) (Grant, error)
}

package ext

import (
	"net/netip"

	"github.com/foyerlobby/foyer/packet"
)

// Version is the extension's version, the first byte of every payload.
const Version = 1

// The extension's message types.
const (
	List     packet.Type = 0x80
	Rooms    packet.Type = 0x81
	Create   packet.Type = 0x82
	Seat     packet.Type = 0x83
	Join     packet.Type = 0x84
	Refused  packet.Type = 0x85
	Quick    packet.Type = 0x86
	Retry    packet.Type = 0x87
	Present  packet.Type = 0x88
	Admitted packet.Type = 0x89
)

// names are the extension's message names, by type.
var names = map[packet.Type]string{
	List: "EXT_LIST", Rooms: "EXT_ROOMS", Create: "EXT_CREATE", Seat: "EXT_SEAT", Join: "EXT_JOIN",
	Refused: "EXT_REFUSED", Quick: "EXT_QUICK", Retry: "EXT_RETRY", Present: "EXT_PRESENT", Admitted: "EXT_ADMITTED",
}

// Name is the protocol's name of extension type t ("EXT_LIST"), or "" if
// t is not one.
func Name(t packet.Type) string { return names[t] }

// Is reports whether t is an extension message type.
func Is(t packet.Type) bool { return t >= List && t <= Admitted }

// Dir is the direction a message of type t travels in; 0 if t is not an
// extension type. Requests (to the lobby, or to a room) are the even ones.
func Dir(t packet.Type) packet.Direction {
	switch {
	case !Is(t):
		return 0
	case t%2 == 0:
		return packet.ClientToServer
	}
	return packet.ServerToClient
}

// Bounds of the fields. Texts are UTF-8 without control characters.
const (
	// MaxDatagram is the longest extension datagram a lobby or a room
	// sends: within every path's MTU, so a reply never fragments. A
	// listing that would not fit is cut into pages.
	MaxDatagram = 1200
	MaxName     = 32 // a room's name
	MaxMode     = 16 // its game mode
	MaxMap      = 32 // its map
	MaxTags     = 4  // tags a room carries, or a filter asks for
	MaxTagKey   = 16 // a tag's key: a-z, 0-9, '_', '-', '.'
	MaxTagValue = 32 // a tag's value
	MaxPassword = 64 // a room's password, as sent
	MaxToken    = 64 // a retry or seat token
	CodeLen     = 6  // a join code
)

// CodeAlphabet is the letters of join codes: A-Z without I, L and O, which
// read as 1, 1 and 0. Codes are all letters, so that a code never reads as
// a room id. Decoders take codes in upper case only; people may type
// lower case, which clients raise.
const CodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ"

// ValidCode reports whether s is a join code: CodeLen letters of
// CodeAlphabet.
func ValidCode(s string) bool {
	if len(s) != CodeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if codeIndex[s[i]] == 0 {
			return false
		}
	}
	return true
}

// codeIndex is 1 + a letter's place in CodeAlphabet, 0 for other bytes.
var codeIndex = func() (t [256]uint8) {
	for i := 0; i < len(CodeAlphabet); i++ {
		t[CodeAlphabet[i]] = uint8(i + 1)
	}
	return t
}()

// Tag is one key/value label of a room.
type Tag struct{ Key, Value string }

// Meta is what describes a room in listings: given at CREATE, updated by
// the room itself.
type Meta struct {
	Name, Mode, Map string
	Tags            []Tag // at most MaxTags, keys distinct
}

// Filter says which rooms a listing or a quick join wants. Zero fields
// ask nothing.
type Filter struct {
	// States is a set of room states, bit n for packet.RoomState n; 0 is
	// every state.
	States uint8
	// MinFree is the free places a room must have at least.
	MinFree uint8
	// Mode and Map must equal the room's when set; NamePrefix must start
	// its name.
	Mode, Map, NamePrefix string
	// Tags must each be among the room's tags.
	Tags []Tag
}

// Entry is one room of an EXT_ROOMS page.
type Entry struct {
	ID         uint32
	Players    uint16 // connected and seated, as every listing counts
	MaxPlayers uint16
	Port       uint16
	State      packet.RoomState
	Password   bool
	Code       string // CodeLen letters
	Meta
}

// Message is one extension message. Which fields are meaningful depends
// on Header.Type; encoders ignore the others.
type Message struct {
	packet.Header
	// Token is the retry token a request echoes (EXT_LIST, EXT_CREATE,
	// EXT_JOIN, EXT_QUICK), or the one EXT_RETRY hands out; empty for
	// none.
	Token []byte
	// Pad is the number of zero bytes that end a request to the lobby: a
	// request of a source the lobby has not validated is answered with
	// no more bytes than it has (an EXT_RETRY), so a client pads its
	// first one.
	Pad int
	// Client is the client's own random id, which its seat token binds
	// (EXT_CREATE, EXT_JOIN, EXT_QUICK).
	Client [8]byte

	Filter Filter // EXT_LIST, EXT_QUICK
	Cursor uint32 // EXT_LIST: list the rooms after this id; 0 from the start
	Limit  uint8  // EXT_LIST: at most this many rooms; 0 as many as fit

	Meta     Meta   // EXT_CREATE
	Private  bool   // EXT_CREATE: unlisted, joined by code
	Password string // EXT_CREATE, EXT_JOIN

	RoomID uint32 // EXT_JOIN (0 with a Code), EXT_SEAT, EXT_ADMITTED
	Code   string // EXT_JOIN (or ""), EXT_SEAT
	Port   uint16 // EXT_SEAT
	// Addr is where the room of an EXT_SEAT runs when that is not the
	// lobby's address (another host of a cluster); zero: the lobby's.
	Addr netip.Addr
	// SeatToken is the seat's token (EXT_SEAT), as the player presents it
	// to the room (EXT_PRESENT).
	SeatToken []byte

	Next    uint32  // EXT_ROOMS: the cursor of the next page; 0 at the end
	Entries []Entry // EXT_ROOMS

	Reason uint8 // EXT_REFUSED: a room.Code
}

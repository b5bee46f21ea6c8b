package packet

import (
	"fmt"
)

// Framing is the header layout a datagram uses.
type Framing uint8

const (
	// Compact is the 8-byte header: packetType, messageType, sequenceId,
	// payloadSize, originalSize.
	Compact Framing = iota
	// Legacy is the original game's 17-byte header: magic A3 5F C8 1D,
	// version, packetType, messageType, sequenceId, tickId, payloadSize,
	// originalSize.
	Legacy
)

// String returns "compact" or "legacy".
func (f Framing) String() string {
	switch f {
	case Compact:
		return "compact"
	case Legacy:
		return "legacy"
	}
	return fmt.Sprintf("Framing(%d)", uint8(f))
}

// Direction is the packetType byte.
type Direction uint8

const (
	// ClientToServer marks requests: LIST_ROOMS, CREATE_ROOM, JOIN_ROOM.
	ClientToServer Direction = 0x01
	// ServerToClient marks replies: ROOM_LIST, ROOM_CREATED, JOIN_SUCCESS,
	// JOIN_FAILED.
	ServerToClient Direction = 0x02
)

// String returns "client_to_server" or "server_to_client".
func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "client_to_server"
	case ServerToClient:
		return "server_to_client"
	}
	return fmt.Sprintf("Direction(0x%02x)", uint8(d))
}

// Type is the messageType byte.
type Type uint8

// The seven native message types.
const (
	ListRooms   Type = 0x40
	RoomList    Type = 0x41
	CreateRoom  Type = 0x42
	RoomCreated Type = 0x43
	JoinRoom    Type = 0x44
	JoinSuccess Type = 0x45
	JoinFailed  Type = 0x46
)

// Dir is the direction a message of type t travels in, or 0 if t is not
// one of the seven native types.
func (t Type) Dir() Direction {
	switch t {
	case ListRooms, CreateRoom, JoinRoom:
		return ClientToServer
	case RoomList, RoomCreated, JoinSuccess, JoinFailed:
		return ServerToClient
	}
	return 0
}

// String returns the protocol's name for t, such as "LIST_ROOMS".
func (t Type) String() string {
	switch t {
	case ListRooms:
		return "LIST_ROOMS"
	case RoomList:
		return "ROOM_LIST"
	case CreateRoom:
		return "CREATE_ROOM"
	case RoomCreated:
		return "ROOM_CREATED"
	case JoinRoom:
		return "JOIN_ROOM"
	case JoinSuccess:
		return "JOIN_SUCCESS"
	case JoinFailed:
		return "JOIN_FAILED"
	}
	return fmt.Sprintf("Type(0x%02x)", uint8(t))
}

// RoomState is the state of a room as carried in ROOM_LIST.
type RoomState uint8

// The four room states; any other value on the wire is malformed.
const (
	Waiting RoomState = iota
	Countdown
	Playing
	Finished
)

// String returns "waiting", "countdown", "playing" or "finished".
func (s RoomState) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Countdown:
		return "countdown"
	case Playing:
		return "playing"
	case Finished:
		return "finished"
	}
	return fmt.Sprintf("RoomState(%d)", uint8(s))
}

// Room is one 11-byte entry of a ROOM_LIST: ID u32, Players u16,
// MaxPlayers u16, Port u16, State u8.
type Room struct {
	ID         uint32
	Players    uint16
	MaxPlayers uint16
	Port       uint16
	State      RoomState
}

// MaxRooms is the most rooms one ROOM_LIST may carry. The protocol fixed it
// from the largest UDP datagram (65,507 bytes) at 13 bytes a room; entries
// are in fact 11 bytes, so a full list is 55,421 bytes in the compact
// framing (55,430 legacy) and always fits in one datagram. Encoders refuse
// more and decoders reject more, so both ends agree on the limit.
const MaxRooms = 5037

// MaxLegacyListRooms is the most rooms a ROOM_LIST in the Legacy framing
// should carry: the original game's client reads a lobby reply into 2,048
// bytes and drops a list cut short, so 17 + 2 + 11n + 4 must fit: 184
// rooms. Decoders still accept up to MaxRooms.
const MaxLegacyListRooms = (2048 - LegacyHeaderLen - roomCountLen - CRCLen) / roomLen

// Header is what both framings carry besides the payload sizes, which
// encoders derive and decoders check.
type Header struct {
	Framing    Framing
	Type       Type   // the direction follows from the type
	Seq        uint16 // echoed by the lobby in its reply
	Tick       uint32 // Legacy framing only
	Compressed bool   // payload is (decode) or should be (encode) an LZ4 block
}

// Message is one decoded native message. Which fields are meaningful
// depends on Header.Type; encoders ignore the others.
type Message struct {
	Header
	RoomID uint32 // JoinRoom, RoomCreated, JoinSuccess
	Port   uint16 // RoomCreated, JoinSuccess
	Rooms  []Room // RoomList
}

// Package packet encodes and decodes Foyer's native lobby protocol,
// messages 0x40-0x46, in both framings a client may use.
//
// API CONTRACT (being implemented; signatures are fixed, bodies are stubs).
package packet

import "errors"

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

// Direction is the packetType byte.
type Direction uint8

const (
	ClientToServer Direction = 0x01
	ServerToClient Direction = 0x02
)

// Type is the messageType byte.
type Type uint8

const (
	ListRooms   Type = 0x40
	RoomList    Type = 0x41
	CreateRoom  Type = 0x42
	RoomCreated Type = 0x43
	JoinRoom    Type = 0x44
	JoinSuccess Type = 0x45
	JoinFailed  Type = 0x46
)

// RoomState is the state of a room as carried in ROOM_LIST.
type RoomState uint8

const (
	Waiting RoomState = iota
	Countdown
	Playing
	Finished
)

// Room is one 13-byte entry of a ROOM_LIST.
type Room struct {
	ID         uint32
	Players    uint16
	MaxPlayers uint16
	Port       uint16
	State      RoomState
}

// MaxRooms is the most rooms one ROOM_LIST datagram can carry.
const MaxRooms = 5037

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
// depends on Header.Type.
type Message struct {
	Header
	RoomID uint32 // JoinRoom, RoomCreated, JoinSuccess
	Port   uint16 // RoomCreated, JoinSuccess
	Rooms  []Room // RoomList
}

var errStub = errors.New("packet: not implemented yet")

// Frame is one datagram checked for framing, length and CRC, with its
// payload inflated, but not interpreted. Other protocols that share the
// framing (the reference room's game protocol) build on it.
type Frame struct {
	Header
	Dir     Direction
	Payload []byte // aliases the input unless it was compressed
}

// ParseFrame checks a datagram's framing, length, CRC and compression.
func ParseFrame(b []byte) (Frame, error) { return Frame{}, errStub }

// AppendFrame appends a datagram carrying payload to b.
func AppendFrame(b []byte, h Header, dir Direction, payload []byte) []byte { return b }

// Parse decodes and fully validates one datagram.
func Parse(b []byte) (Message, error) { return Message{}, errStub }

// Append appends the encoding of m to b.
func (m *Message) Append(b []byte) ([]byte, error) { return b, errStub }

// SetSeq rewrites the sequence id of an encoded datagram in place and
// fixes its CRC, so a cached reply can be reused.
func SetSeq(pkt []byte, seq uint16) {}

// Reason is a short, stable label for a decode error, for counters.
func Reason(err error) string { return "unknown" }

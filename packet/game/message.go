package game

import (
	"encoding/binary"
	"fmt"

	"github.com/foyerlobby/foyer/packet"
)

// Type is a game message's messageType byte.
type Type uint8

// The game messages.
const (
	ClientHello      Type = 0x01
	ClientReady      Type = 0x03
	ClientPing       Type = 0x04
	ClientDisconnect Type = 0x07
	ServerHello      Type = 0x10
	ServerJoinDeny   Type = 0x12
	ServerPong       Type = 0x13
	GameStart        Type = 0x15
	GameEnd          Type = 0x16
	CountdownTick    Type = 0x20
)

// shape is what the wire says about a type: its direction, its payload
// size, and its name.
type shape struct {
	dir  packet.Direction
	size int
	name string
}

var shapes = [256]shape{
	ClientHello:      {packet.ClientToServer, 0, "CLIENT_HELLO"},
	ClientReady:      {packet.ClientToServer, 0, "CLIENT_READY"},
	ClientPing:       {packet.ClientToServer, 4, "CLIENT_PING"},
	ClientDisconnect: {packet.ClientToServer, 0, "CLIENT_DISCONNECT"},
	ServerHello:      {packet.ServerToClient, 6, "SERVER_HELLO"},
	ServerJoinDeny:   {packet.ServerToClient, 1, "SERVER_JOIN_DENY"},
	ServerPong:       {packet.ServerToClient, 4, "SERVER_PONG"},
	GameStart:        {packet.ServerToClient, 2, "GAME_START"},
	GameEnd:          {packet.ServerToClient, 1, "GAME_END"},
	CountdownTick:    {packet.ServerToClient, 1, "COUNTDOWN_TICK"},
}

func (t Type) known() bool { return shapes[t].dir != 0 }

// Dir is the direction a message of type t travels in, or 0 if t is not a
// game message.
func (t Type) Dir() packet.Direction { return shapes[t].dir }

// String returns the message's name, such as "CLIENT_HELLO".
func (t Type) String() string {
	if !t.known() {
		return fmt.Sprintf("Type(0x%02x)", uint8(t))
	}
	return shapes[t].name
}

// DenyReason says why a room refused a ClientHello.
type DenyReason uint8

// The reasons a SERVER_JOIN_DENY gives. Decoders accept any value, so a
// newer room can add reasons.
const (
	DenyFull       DenyReason = 1 // every slot is taken
	DenyInProgress DenyReason = 2 // the countdown or the match has begun
)

// EndReason says why a match ended.
type EndReason uint8

// The reasons a GAME_END gives. Decoders accept any value.
const (
	EndTimeUp    EndReason = 1 // the match ran its full length
	EndAbandoned EndReason = 2 // every player left
	EndStopped   EndReason = 3 // the host stopped the room
)

// Message is one decoded game message. Which fields are meaningful
// depends on Type; the others are zero.
type Message struct {
	Type       Type
	Seq        uint16     // sender's sequence id; a pong echoes its ping's
	RoomID     uint32     // ServerHello
	Slot       uint8      // ServerHello: the player's slot, from 0
	MaxPlayers uint8      // ServerHello
	Deny       DenyReason // ServerJoinDeny
	End        EndReason  // GameEnd
	Seconds    uint16     // CountdownTick (seconds left, at most 255), GameStart (match length)
	Token      uint32     // ClientPing, ServerPong
}

// MaxLen is the longest encoded game message.
const MaxLen = packet.CompactHeaderLen + 6 + packet.CRCLen

// Is reports whether b looks like a game message: the compact framing, a
// matching length and a known type in its direction. It skips the CRC;
// only [Parse] validates.
func Is(b []byte) bool {
	if !packet.Is(b) || b[0] != byte(packet.ClientToServer) && b[0] != byte(packet.ServerToClient) {
		return false
	}
	t := Type(b[1])
	return t.known() && byte(t.Dir()) == b[0]
}

// Parse decodes and fully validates one datagram.
func Parse(b []byte) (Message, error) {
	f, err := packet.ParseFrame(b)
	if err != nil {
		return Message{}, err
	}
	if f.Framing != packet.Compact {
		return Message{}, ErrFraming
	}
	t := Type(f.Type)
	if !t.known() {
		return Message{}, ErrType
	}
	if f.Dir != t.Dir() {
		return Message{}, ErrDirection
	}
	p := f.Payload
	if len(p) != shapes[t].size {
		return Message{}, ErrSize
	}
	m := Message{Type: t, Seq: f.Seq}
	switch t {
	case ClientPing, ServerPong:
		m.Token = binary.BigEndian.Uint32(p)
	case ServerHello:
		m.RoomID = binary.BigEndian.Uint32(p)
		m.Slot, m.MaxPlayers = p[4], p[5]
	case ServerJoinDeny:
		m.Deny = DenyReason(p[0])
	case GameStart:
		m.Seconds = binary.BigEndian.Uint16(p)
	case GameEnd:
		m.End = EndReason(p[0])
	case CountdownTick:
		m.Seconds = uint16(p[0])
	}
	return m, nil
}

// Append appends the encoding of m to b. It fails with ErrType for an
// unknown type and ErrRange for a CountdownTick over 255 seconds.
func (m *Message) Append(b []byte) ([]byte, error) {
	if !m.Type.known() {
		return b, ErrType
	}
	var p [6]byte
	switch m.Type {
	case ClientPing, ServerPong:
		binary.BigEndian.PutUint32(p[:], m.Token)
	case ServerHello:
		binary.BigEndian.PutUint32(p[:], m.RoomID)
		p[4], p[5] = m.Slot, m.MaxPlayers
	case ServerJoinDeny:
		p[0] = byte(m.Deny)
	case GameStart:
		binary.BigEndian.PutUint16(p[:], m.Seconds)
	case GameEnd:
		p[0] = byte(m.End)
	case CountdownTick:
		if m.Seconds > 0xFF {
			return b, ErrRange
		}
		p[0] = byte(m.Seconds)
	}
	h := packet.Header{Framing: packet.Compact, Type: packet.Type(m.Type), Seq: m.Seq}
	return packet.AppendFrame(b, h, m.Type.Dir(), p[:shapes[m.Type].size]), nil
}

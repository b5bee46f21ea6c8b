package game

import (
	"encoding/binary"
	"fmt"

	"github.com/foyerlobby/foyer/packet"
)

// Type is a game message's messageType byte.
type Type uint8

// The game messages. Four exist only in the Legacy framing, as the
// original game's: ClientJoinRequest, ClientInput, ServerJoinAccept and
// AllReady; one only in the Compact framing: PlayerLeft (the original
// game's PLAYER_DISCONNECTED names a player by an id its legacy players
// are never given).
const (
	ClientHello       Type = 0x01
	ClientJoinRequest Type = 0x02 // Legacy only
	ClientReady       Type = 0x03
	ClientPing        Type = 0x04
	ClientInput       Type = 0x05 // Legacy only
	ClientDisconnect  Type = 0x07
	ServerHello       Type = 0x10
	ServerJoinAccept  Type = 0x11 // Legacy only
	ServerJoinDeny    Type = 0x12
	ServerPong        Type = 0x13
	GameStart         Type = 0x15
	GameEnd           Type = 0x16
	PlayerLeft        Type = 0x1C // Compact only
	AllReady          Type = 0x1F // Legacy only
	CountdownTick     Type = 0x20
)

// kind is what a type is in either framing: its direction and its name.
type kind struct {
	dir  packet.Direction
	name string
}

var kinds = [256]kind{
	ClientHello:       {packet.ClientToServer, "CLIENT_HELLO"},
	ClientJoinRequest: {packet.ClientToServer, "CLIENT_JOIN_REQUEST"},
	ClientReady:       {packet.ClientToServer, "CLIENT_READY"},
	ClientPing:        {packet.ClientToServer, "CLIENT_PING"},
	ClientInput:       {packet.ClientToServer, "CLIENT_INPUT"},
	ClientDisconnect:  {packet.ClientToServer, "CLIENT_DISCONNECT"},
	ServerHello:       {packet.ServerToClient, "SERVER_HELLO"},
	ServerJoinAccept:  {packet.ServerToClient, "SERVER_JOIN_ACCEPT"},
	ServerJoinDeny:    {packet.ServerToClient, "SERVER_JOIN_DENY"},
	ServerPong:        {packet.ServerToClient, "SERVER_PONG"},
	GameStart:         {packet.ServerToClient, "GAME_START"},
	GameEnd:           {packet.ServerToClient, "GAME_END"},
	PlayerLeft:        {packet.ServerToClient, "PLAYER_LEFT"},
	AllReady:          {packet.ServerToClient, "ALL_READY"},
	CountdownTick:     {packet.ServerToClient, "COUNTDOWN_TICK"},
}

// sizes is the set of payload sizes a type may have in one framing: bit n
// set means n bytes are well-formed. Zero means the type is not a message
// of that framing.
type sizes uint32

func sizeSet(ns ...int) sizes {
	var s sizes
	for _, n := range ns {
		s |= 1 << n
	}
	return s
}

func (s sizes) has(n int) bool { return n < 32 && s&(1<<n) != 0 }

// shapes holds the payload sizes of every type, per framing.
var shapes = [2][256]sizes{
	packet.Compact: {
		ClientHello:      sizeSet(0),
		ClientReady:      sizeSet(0),
		ClientPing:       sizeSet(0, 4), // the token is optional
		ClientDisconnect: sizeSet(0),
		ServerHello:      sizeSet(6),
		ServerJoinDeny:   sizeSet(1),
		ServerPong:       sizeSet(4),
		GameStart:        sizeSet(2),
		GameEnd:          sizeSet(1),
		PlayerLeft:       sizeSet(1),
		CountdownTick:    sizeSet(1),
	},
	packet.Legacy: {
		ClientHello:       sizeSet(0),
		ClientJoinRequest: sizeSet(0, legacyJoinUserLen),
		ClientReady:       sizeSet(0),
		ClientPing:        sizeSet(0),
		ClientInput:       sizeSet(LegacyInputLen),
		ClientDisconnect:  sizeSet(0),
		ServerHello:       sizeSet(0),
		ServerJoinAccept:  sizeSet(0),
		ServerJoinDeny:    sizeSet(0),
		ServerPong:        sizeSet(0),
		GameStart:         sizeSet(0),
		GameEnd:           sizeSet(legacyGameEndLen),
		AllReady:          sizeSet(0),
		CountdownTick:     sizeSet(1),
	},
}

// Payload sizes of the Legacy framing's non-empty messages.
const (
	// LegacyInputLen is a CLIENT_INPUT: playerId u32, flags u16, then x,
	// y and angle as float32.
	LegacyInputLen = 18
	// legacyJoinUserLen is a CLIENT_JOIN_REQUEST of later versions of the
	// original client: spectator u8, userId u32.
	legacyJoinUserLen = 5
	// legacyGameEndLen is a GAME_END without scores: victory u8,
	// playerCount u8 (0).
	legacyGameEndLen = 2
)

func validFraming(f packet.Framing) bool { return f == packet.Compact || f == packet.Legacy }

func (t Type) known() bool { return kinds[t].dir != 0 }

// In reports whether t is a message of framing f.
func (t Type) In(f packet.Framing) bool { return validFraming(f) && shapes[f][t] != 0 }

// Dir is the direction a message of type t travels in, or 0 if t is not a
// game message in either framing.
func (t Type) Dir() packet.Direction { return kinds[t].dir }

// String returns the message's name, such as "CLIENT_HELLO".
func (t Type) String() string {
	if !t.known() {
		return fmt.Sprintf("Type(0x%02x)", uint8(t))
	}
	return kinds[t].name
}

// DenyReason says why a room refused a ClientHello.
type DenyReason uint8

// The reasons a compact SERVER_JOIN_DENY gives. Decoders accept any value,
// so a newer room can add reasons. A legacy deny carries no reason.
const (
	DenyFull       DenyReason = 1 // every slot is taken
	DenyInProgress DenyReason = 2 // the match has begun
)

// EndReason says why a match ended.
type EndReason uint8

// The reasons a compact GAME_END gives. Decoders accept any value. A
// legacy GAME_END says only whether the match ran its full length: it
// decodes as EndTimeUp or as 0, and every reason but EndTimeUp encodes as
// "not a victory".
const (
	EndTimeUp    EndReason = 1 // the match ran its full length
	EndAbandoned EndReason = 2 // every player left
	EndStopped   EndReason = 3 // the host stopped the room
)

// Message is one decoded game message. Which fields are meaningful
// depends on Framing and Type; the others are zero, and encoders ignore
// them.
type Message struct {
	Framing    packet.Framing // Compact (the zero value) or Legacy
	Type       Type
	Seq        uint16     // sender's sequence id; a reply may echo its request's
	Tick       uint32     // Legacy only: the header's tickId; a pong echoes its ping's
	RoomID     uint32     // ServerHello (compact)
	Slot       uint8      // ServerHello (compact): the player's slot, from 0; PlayerLeft: the slot left
	MaxPlayers uint8      // ServerHello (compact)
	Deny       DenyReason // ServerJoinDeny (compact)
	End        EndReason  // GameEnd
	Seconds    uint16     // CountdownTick (seconds left, at most 255), GameStart (compact: match length)
	Token      uint32     // ClientPing, ServerPong (compact)
	NoToken    bool       // ClientPing (compact): sent without a token
	HasUser    bool       // ClientJoinRequest (legacy): carries Spectator and UserID
	Spectator  bool       // ClientJoinRequest (legacy, HasUser)
	UserID     uint32     // ClientJoinRequest (legacy, HasUser)
	// Input is a ClientInput's payload as sent (legacy): the original
	// game's controls, which a room that plays no game reads only as a
	// sign of life.
	Input [LegacyInputLen]byte
}

// MaxLen is the longest encoded game message: a legacy CLIENT_INPUT.
const MaxLen = packet.LegacyHeaderLen + LegacyInputLen + packet.CRCLen

// legacyFirstByte opens every legacy datagram (package packet's magic).
const legacyFirstByte = 0xA3

// Is reports whether b looks like a game message: a framing, length and
// packetType package packet accepts, and a type of that framing sent in
// its direction. It skips the CRC; only [Parse] validates.
func Is(b []byte) bool {
	if !packet.Is(b) {
		return false
	}
	f, dir, t := packet.Compact, packet.Direction(b[0]), Type(b[1])
	if b[0] == legacyFirstByte {
		f, dir, t = packet.Legacy, packet.Direction(b[5]), Type(b[6])
	}
	return t.In(f) && t.Dir() == dir
}

// Parse decodes and fully validates one datagram in either framing.
func Parse(b []byte) (Message, error) {
	f, err := packet.ParseFrameMax(b, maxPayload)
	if err != nil {
		return Message{}, err
	}
	t := Type(f.Type)
	if !t.In(f.Framing) {
		return Message{}, ErrType
	}
	if f.Dir != t.Dir() {
		return Message{}, ErrDirection
	}
	p := f.Payload
	if !shapes[f.Framing][t].has(len(p)) {
		return Message{}, ErrSize
	}
	m := Message{Framing: f.Framing, Type: t, Seq: f.Seq, Tick: f.Tick}
	if f.Framing == packet.Legacy {
		err = m.readLegacy(p)
	} else {
		m.readCompact(p)
	}
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

// readCompact fills m from a compact payload whose size Parse checked.
func (m *Message) readCompact(p []byte) {
	switch m.Type {
	case ClientPing, ServerPong:
		if len(p) == 0 {
			m.NoToken = true
		} else {
			m.Token = binary.BigEndian.Uint32(p)
		}
	case ServerHello:
		m.RoomID = binary.BigEndian.Uint32(p)
		m.Slot, m.MaxPlayers = p[4], p[5]
	case ServerJoinDeny:
		m.Deny = DenyReason(p[0])
	case GameStart:
		m.Seconds = binary.BigEndian.Uint16(p)
	case GameEnd:
		m.End = EndReason(p[0])
	case PlayerLeft:
		m.Slot = p[0]
	case CountdownTick:
		m.Seconds = uint16(p[0])
	}
}

// readLegacy fills m from a legacy payload whose size Parse checked. Its
// flags must be 0 or 1, so that every message has one encoding.
func (m *Message) readLegacy(p []byte) error {
	switch m.Type {
	case ClientJoinRequest:
		if len(p) == 0 {
			return nil
		}
		if p[0] > 1 {
			return ErrValue
		}
		m.HasUser, m.Spectator, m.UserID = true, p[0] == 1, binary.BigEndian.Uint32(p[1:])
	case GameEnd:
		// victory u8, then playerCount u8 and as many scores; Foyer's
		// rooms keep no scores.
		if p[0] > 1 {
			return ErrValue
		}
		if p[1] != 0 {
			return ErrSize
		}
		if p[0] == 1 {
			m.End = EndTimeUp
		}
	case CountdownTick:
		m.Seconds = uint16(p[0])
	case ClientInput:
		m.Input = [LegacyInputLen]byte(p)
	}
	return nil
}

// maxPayload is the longest payload of any game message.
const maxPayload = LegacyInputLen

// Append appends the encoding of m to b. It fails with ErrFraming for a
// framing other than Compact and Legacy, ErrType for a type that is not a
// message of m's framing, and ErrRange for a CountdownTick over 255
// seconds.
func (m *Message) Append(b []byte) ([]byte, error) {
	if !validFraming(m.Framing) {
		return b, ErrFraming
	}
	if !m.Type.In(m.Framing) {
		return b, ErrType
	}
	if m.Type == CountdownTick && m.Seconds > 0xFF {
		return b, ErrRange
	}
	var buf [maxPayload]byte
	var p []byte
	if m.Framing == packet.Legacy {
		p = m.legacyPayload(buf[:0])
	} else {
		p = m.compactPayload(buf[:0])
	}
	h := packet.Header{Framing: m.Framing, Type: packet.Type(m.Type), Seq: m.Seq, Tick: m.Tick}
	return packet.AppendFrame(b, h, m.Type.Dir(), p), nil
}

func (m *Message) compactPayload(p []byte) []byte {
	switch m.Type {
	case ClientPing, ServerPong:
		if m.Type == ServerPong || !m.NoToken {
			p = binary.BigEndian.AppendUint32(p, m.Token)
		}
	case ServerHello:
		p = binary.BigEndian.AppendUint32(p, m.RoomID)
		p = append(p, m.Slot, m.MaxPlayers)
	case ServerJoinDeny:
		p = append(p, byte(m.Deny))
	case GameStart:
		p = binary.BigEndian.AppendUint16(p, m.Seconds)
	case GameEnd:
		p = append(p, byte(m.End))
	case PlayerLeft:
		p = append(p, m.Slot)
	case CountdownTick:
		p = append(p, byte(m.Seconds))
	}
	return p
}

func (m *Message) legacyPayload(p []byte) []byte {
	switch m.Type {
	case ClientJoinRequest:
		if m.HasUser {
			p = append(p, flag(m.Spectator))
			p = binary.BigEndian.AppendUint32(p, m.UserID)
		}
	case GameEnd:
		p = append(p, flag(m.End == EndTimeUp), 0)
	case CountdownTick:
		p = append(p, byte(m.Seconds))
	case ClientInput:
		p = append(p, m.Input[:]...)
	}
	return p
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

package packet

import "encoding/binary"

// Payload sizes of the fixed-size messages and of one ROOM_LIST entry.
const (
	roomIDLen    = 4  // JOIN_ROOM
	roomPortLen  = 6  // ROOM_CREATED, JOIN_SUCCESS
	roomCountLen = 2  // ROOM_LIST's leading count
	roomLen      = 11 // one ROOM_LIST entry
)

// Parse decodes and fully validates one datagram in either framing. It
// checks, in order, and returns the first that fails: the length covers a
// header (ErrShort); a legacy header's magic and version (ErrMagic); the
// length matches payloadSize (ErrLength); the CRC (ErrCRC); the packetType
// (ErrPacketType); the message type (ErrUnknownType) and its direction
// (ErrDirection); the compression sizes, including a claimed size the
// type cannot have, and the LZ4 block (ErrCompression);
// the payload size for the type (ErrPayloadSize); the room count
// (ErrRoomCount); and each room's state (ErrRoomState).
//
// Fixed-size messages decode without allocating. A ROOM_LIST allocates its
// Rooms only after its size has been checked against the bytes received.
func Parse(b []byte) (Message, error) {
	var m Message
	if err := parse(b, false, &m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// ParseRequest is Parse for a server, which takes requests only: a
// message that travels server to client fails with ErrNotRequest once its
// framing, CRC and packetType hold, before its payload is inflated or
// read (a ROOM_LIST's LZ4 block inflates 200-fold).
func ParseRequest(b []byte) (Message, error) {
	var m Message
	if err := m.UnmarshalRequest(b); err != nil {
		return Message{}, err
	}
	return m, nil
}

// UnmarshalRequest is ParseRequest into m, which it overwrites; after an
// error m holds nothing of use. A server's read loop decodes every
// datagram into the one Message, sparing the copy of a returned one.
func (m *Message) UnmarshalRequest(b []byte) error {
	*m = Message{}
	return parse(b, true, m)
}

// parse is Parse, or ParseRequest with requests, decoding into m, which
// is zero.
func parse(b []byte, requests bool, m *Message) error {
	var w wire
	if err := parseWire(b, &m.Header, &w); err != nil {
		return err
	}
	d := m.Type.Dir()
	if d == 0 {
		return ErrUnknownType
	}
	if d != w.dir {
		return ErrDirection
	}
	if requests && d != ClientToServer {
		return ErrNotRequest
	}
	if m.Compressed && !m.Type.holds(w.original) {
		return ErrCompression // refused before inflating anything
	}
	if err := inflate(&m.Header, &w); err != nil {
		return err
	}
	return m.decodePayload(w.payload)
}

// holds reports whether a payload of n bytes can be a message of type t:
// what a compressed payload must claim to be worth inflating.
func (t Type) holds(n int) bool {
	switch t {
	case JoinRoom:
		return n == roomIDLen
	case RoomCreated, JoinSuccess:
		return n == roomPortLen
	case RoomList:
		k := n - roomCountLen
		return k >= 0 && k%roomLen == 0
	}
	return n == 0
}

func (m *Message) decodePayload(p []byte) error {
	switch m.Type {
	case ListRooms, CreateRoom, JoinFailed:
		if len(p) != 0 {
			return ErrPayloadSize
		}
	case JoinRoom:
		if len(p) != roomIDLen {
			return ErrPayloadSize
		}
		m.RoomID = binary.BigEndian.Uint32(p)
	case RoomCreated, JoinSuccess:
		if len(p) != roomPortLen {
			return ErrPayloadSize
		}
		m.RoomID = binary.BigEndian.Uint32(p)
		m.Port = binary.BigEndian.Uint16(p[4:])
	case RoomList:
		return m.decodeRooms(p)
	}
	return nil
}

func (m *Message) decodeRooms(p []byte) error {
	if len(p) < roomCountLen {
		return ErrPayloadSize
	}
	n := int(binary.BigEndian.Uint16(p))
	entries := p[roomCountLen:]
	if len(entries) != n*roomLen {
		return ErrPayloadSize
	}
	if n > MaxRooms {
		return ErrRoomCount
	}
	// Validate before allocating, so a bad list costs nothing.
	for i := roomLen - 1; i < len(entries); i += roomLen {
		if RoomState(entries[i]) > Finished {
			return ErrRoomState
		}
	}
	if n == 0 {
		return nil
	}
	m.Rooms = make([]Room, n) // n is backed by n*11 bytes already received
	for i := range m.Rooms {
		e := entries[i*roomLen : (i+1)*roomLen]
		m.Rooms[i] = Room{
			ID:         binary.BigEndian.Uint32(e),
			Players:    binary.BigEndian.Uint16(e[4:]),
			MaxPlayers: binary.BigEndian.Uint16(e[6:]),
			Port:       binary.BigEndian.Uint16(e[8:]),
			State:      RoomState(e[roomLen-1]),
		}
	}
	return nil
}

// Append appends the encoding of m to b. The packetType follows from
// m.Type, payloadSize, originalSize and the CRC from the payload; fields
// that m.Type does not carry are ignored. With m.Compressed set the payload
// is sent as an LZ4 block if that is smaller than the payload, and as is
// (with the compressed flag clear) otherwise: tiny payloads never shrink.
//
// Append returns b unchanged and an error, never a wrong datagram, for an
// unknown type (ErrUnknownType) or framing (ErrFraming), more than MaxRooms
// rooms (ErrRoomCount) or a room state beyond Finished (ErrRoomState).
// Given a b with room for the datagram, it does not allocate unless
// compressing.
func (m *Message) Append(b []byte) ([]byte, error) {
	dir := m.Type.Dir()
	if dir == 0 {
		return b, ErrUnknownType
	}
	n, err := m.payloadLen()
	if err != nil {
		return b, err
	}
	out, start, err := beginFrame(b, m.Framing, n)
	if err != nil {
		return b, err
	}
	switch m.Type {
	case JoinRoom:
		out = binary.BigEndian.AppendUint32(out, m.RoomID)
	case RoomCreated, JoinSuccess:
		out = binary.BigEndian.AppendUint32(out, m.RoomID)
		out = binary.BigEndian.AppendUint16(out, m.Port)
	case RoomList:
		out = appendRooms(out, m.Rooms)
	}
	return endFrame(out, start, m.Header, dir), nil
}

// Len is the length of the datagram Append builds for m when it does not
// compress, so a caller can size a buffer once; it is 0 when Append would
// refuse m.
func (m *Message) Len() int {
	hl, err := headerLen(m.Framing)
	if err != nil || m.Type.Dir() == 0 {
		return 0
	}
	n, err := m.payloadLen()
	if err != nil {
		return 0
	}
	return hl + n + CRCLen
}

// payloadLen is the uncompressed payload size of m, whose type is known.
func (m *Message) payloadLen() (int, error) {
	switch m.Type {
	case JoinRoom:
		return roomIDLen, nil
	case RoomCreated, JoinSuccess:
		return roomPortLen, nil
	case RoomList:
		if len(m.Rooms) > MaxRooms {
			return 0, ErrRoomCount
		}
		for _, r := range m.Rooms {
			if r.State > Finished {
				return 0, ErrRoomState
			}
		}
		return roomCountLen + roomLen*len(m.Rooms), nil
	}
	return 0, nil
}

func appendRooms(b []byte, rooms []Room) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(rooms)))
	for _, r := range rooms {
		b = binary.BigEndian.AppendUint32(b, r.ID)
		b = binary.BigEndian.AppendUint16(b, r.Players)
		b = binary.BigEndian.AppendUint16(b, r.MaxPlayers)
		b = binary.BigEndian.AppendUint16(b, r.Port)
		b = append(b, byte(r.State))
	}
	return b
}

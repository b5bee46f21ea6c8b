package gunz

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// CommandResponseServerList is the commandId of a locator response.
const CommandResponseServerList = 40002

// ServerType is what kind of game a server runs.
type ServerType uint8

// The server types a response may carry.
const (
	Debug ServerType = 1 + iota
	Match
	Clan
	Quest
	Event
	Test
)

// String names the type, or "type(N)" outside 1..6.
func (t ServerType) String() string {
	names := [...]string{"debug", "match", "clan", "quest", "event", "test"}
	if t >= Debug && t <= Test {
		return names[t-1]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Status says whether a server takes players.
type Status uint8

const (
	// Offline is status 0.
	Offline Status = 0
	// Online is status 1.
	Online Status = 1
)

// Server is one 15-byte entry of a response.
type Server struct {
	Addr       netip.Addr // IPv4 only
	Port       uint32
	ID         uint8
	MaxPlayers uint16
	Players    uint16
	Type       ServerType
	Status     Status
}

// Response is a locator's server list.
type Response struct {
	Serial  uint8
	Servers []Server
}

const (
	// ServerLen is the size of one server entry (the oneBlobSize field).
	ServerLen = 15
	// blobHeaderLen is blobBytes, oneBlobSize and count.
	blobHeaderLen = 12
	// responseFixed is a response's size without servers.
	responseFixed = HeaderLen + CommandHeaderLen + blobHeaderLen
	// MaxServers is the most servers one response datagram can carry.
	MaxServers = (MaxDatagram - responseFixed) / ServerLen
)

const msgResponse = "response"

// Append encodes r with its checksum. It refuses more than MaxServers
// servers, an address that is not IPv4, and a type or status the protocol
// does not define.
func (r Response) Append(b []byte) ([]byte, error) {
	if len(r.Servers) > MaxServers {
		return b, fail(msgResponse, responseFixed-4, ErrTooMany)
	}
	for i, s := range r.Servers {
		off := responseFixed + i*ServerLen
		switch {
		case !s.Addr.Is4():
			return b, fail(msgResponse, off, ErrAddr)
		case s.Type < Debug || s.Type > Test:
			return b, fail(msgResponse, off+13, ErrServerType)
		case s.Status > Online:
			return b, fail(msgResponse, off+14, ErrStatus)
		}
	}
	start := len(b)
	n := len(r.Servers)
	b = appendCommand(b, CommandResponseServerList, r.Serial, blobHeaderLen+n*ServerLen)
	b = binary.LittleEndian.AppendUint32(b, uint32(8+n*ServerLen))
	b = binary.LittleEndian.AppendUint32(b, ServerLen)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	for _, s := range r.Servers {
		ip := s.Addr.As4()
		b = append(b, ip[:]...)
		b = binary.LittleEndian.AppendUint32(b, s.Port)
		b = append(b, s.ID)
		b = binary.LittleEndian.AppendUint16(b, s.MaxPlayers)
		b = binary.LittleEndian.AppendUint16(b, s.Players)
		b = append(b, byte(s.Type), byte(s.Status))
	}
	seal(b[start:])
	return b, nil
}

// ParseResponse decodes a locator response, checksum included.
func ParseResponse(b []byte) (Response, error) {
	serial, p, err := parseCommand(msgResponse, b, CommandResponseServerList)
	if err != nil {
		return Response{}, err
	}
	const pOff = HeaderLen + CommandHeaderLen // p[0] is b[pOff]
	if len(p) < blobHeaderLen {
		return Response{}, fail(msgResponse, pOff+len(p), ErrTruncated)
	}
	if int64(binary.LittleEndian.Uint32(p)) != int64(len(p)-4) {
		return Response{}, fail(msgResponse, pOff, ErrSize)
	}
	if binary.LittleEndian.Uint32(p[4:]) != ServerLen {
		return Response{}, fail(msgResponse, pOff+4, ErrBlobSize)
	}
	// The count is the sender's word: it must describe exactly the bytes
	// that follow, which also bounds the allocation.
	count := binary.LittleEndian.Uint32(p[8:])
	entries := p[blobHeaderLen:]
	if uint64(count)*ServerLen != uint64(len(entries)) {
		return Response{}, fail(msgResponse, pOff+8, ErrSize)
	}
	r := Response{Serial: serial, Servers: make([]Server, 0, len(entries)/ServerLen)}
	for i := 0; i < len(entries); i += ServerLen {
		e := entries[i : i+ServerLen]
		s := Server{
			Addr:       netip.AddrFrom4([4]byte(e[0:4])),
			Port:       binary.LittleEndian.Uint32(e[4:]),
			ID:         e[8],
			MaxPlayers: binary.LittleEndian.Uint16(e[9:]),
			Players:    binary.LittleEndian.Uint16(e[11:]),
			Type:       ServerType(e[13]),
			Status:     Status(e[14]),
		}
		off := responseFixed + i
		if s.Type < Debug || s.Type > Test {
			return Response{}, fail(msgResponse, off+13, ErrServerType)
		}
		if s.Status > Online {
			return Response{}, fail(msgResponse, off+14, ErrStatus)
		}
		r.Servers = append(r.Servers, s)
	}
	return r, nil
}

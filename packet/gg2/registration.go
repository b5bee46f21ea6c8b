package gg2

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Transport is the protocol a listed server accepts players on.
type Transport uint8

const (
	// TCP is transport 0.
	TCP Transport = 0
	// UDP is transport 1.
	UDP Transport = 1
)

func (t Transport) valid() bool { return t == TCP || t == UDP }

// String returns "tcp", "udp" or "transport(N)".
func (t Transport) String() string {
	switch t {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	}
	return "transport(" + strconv.Itoa(int(t)) + ")"
}

// FlagPassword is the flags bit of a server that asks for a password.
const FlagPassword uint16 = 0x0001

// Form is the registration layout a datagram used.
type Form uint8

const (
	// Counted is the newer layout: a u16 entry count at 59, the table at 61.
	Counted Form = iota
	// Legacy is the older layout: no count, the table from 59 to the end.
	Legacy
)

// String returns "counted" or "legacy".
func (f Form) String() string {
	if f == Legacy {
		return "legacy"
	}
	return "counted"
}

// Offsets of the registration layout.
const (
	regFixedLen = 59 // everything before the table (legacy) or count
	regCountOff = 59
	regTableOff = 61
)

// Registration is a game server's announcement of itself to a lobby.
type Registration struct {
	Form      Form // the layout parsed, or the one Append writes
	ServerID  UUID
	LobbyID   UUID
	Transport Transport
	Port      uint16 // never 0 in a valid registration
	Slots     uint16
	Players   uint16
	Bots      uint16
	Flags     uint16 // FlagPassword; other bits reserved, kept as sent
	KeyValues KeyValues
}

// Password reports whether the server asks for a password.
func (r *Registration) Password() bool { return r.Flags&FlagPassword != 0 }

const msgRegistration = "registration"

// ParseRegistration decodes a registration in either form. The returned
// value's key/value bytes alias b. It fails with [ErrNoName] when the table
// has no "name" key, as a lobby must ignore such a registration.
func ParseRegistration(b []byte) (Registration, error) {
	var r Registration
	if len(b) < regFixedLen {
		return r, fail(msgRegistration, len(b), ErrTruncated)
	}
	if UUID(b[:16]) != RegisterUUID {
		return r, fail(msgRegistration, 0, ErrMessageType)
	}
	r.ServerID = UUID(b[16:32])
	r.LobbyID = UUID(b[32:48])
	r.Transport = Transport(b[48])
	if !r.Transport.valid() {
		return Registration{}, fail(msgRegistration, 48, ErrTransport)
	}
	r.Port = binary.BigEndian.Uint16(b[49:])
	if r.Port == 0 {
		return Registration{}, fail(msgRegistration, 49, ErrPort)
	}
	r.Slots = binary.BigEndian.Uint16(b[51:])
	r.Players = binary.BigEndian.Uint16(b[53:])
	r.Bots = binary.BigEndian.Uint16(b[55:])
	r.Flags = binary.BigEndian.Uint16(b[57:])

	kv, err := parseCounted(b)
	r.Form = Counted
	if err != nil {
		r.Form = Legacy
		kv, _, err = parseTable(msgRegistration, b, regFixedLen, len(b), -1)
		if err != nil {
			return Registration{}, err
		}
	}
	if _, ok := kv.Get("name"); !ok {
		return Registration{}, fail(msgRegistration, regFixedLen, ErrNoName)
	}
	r.KeyValues = kv
	return r, nil
}

// parseCounted reads the counted form's table; any error, including bytes
// left over, sends ParseRegistration to the legacy form.
func parseCounted(b []byte) (KeyValues, error) {
	if len(b) < regTableOff {
		return nil, fail(msgRegistration, len(b), ErrTruncated)
	}
	n := int(binary.BigEndian.Uint16(b[regCountOff:]))
	kv, end, err := parseTable(msgRegistration, b, regTableOff, len(b), n)
	if err != nil {
		return nil, err
	}
	if end != len(b) {
		return nil, fail(msgRegistration, end, ErrLength)
	}
	return kv, nil
}

// Append encodes r in r.Form. It refuses what ParseRegistration would
// refuse: an unknown transport, port 0, a table without "name", and
// entries that do not fit their length fields or repeat a key.
func (r *Registration) Append(b []byte) ([]byte, error) {
	if !r.Transport.valid() {
		return b, fail(msgRegistration, 48, ErrTransport)
	}
	if r.Port == 0 {
		return b, fail(msgRegistration, 49, ErrPort)
	}
	tableOff := regFixedLen
	if r.Form == Counted {
		tableOff = regTableOff
		if len(r.KeyValues) > math.MaxUint16 {
			return b, fail(msgRegistration, regCountOff, ErrCount)
		}
	}
	if err := r.KeyValues.check(msgRegistration, tableOff); err != nil {
		return b, err
	}
	if _, ok := r.KeyValues.Get("name"); !ok {
		return b, fail(msgRegistration, tableOff, ErrNoName)
	}
	b = append(b, RegisterUUID[:]...)
	b = append(b, r.ServerID[:]...)
	b = append(b, r.LobbyID[:]...)
	b = append(b, byte(r.Transport))
	for _, v := range [...]uint16{r.Port, r.Slots, r.Players, r.Bots, r.Flags} {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	if r.Form == Counted {
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.KeyValues)))
	}
	return r.KeyValues.appendTable(b), nil
}

// Len is the encoded size of r.
func (r *Registration) Len() int {
	n := regFixedLen + r.KeyValues.wireLen()
	if r.Form == Counted {
		n += 2
	}
	return n
}

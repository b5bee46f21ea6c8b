package ext

import (
	"encoding/binary"
	"net/netip"
	"unicode/utf8"

	"github.com/foyerlobby/foyer/packet"
)

// MaxPayload is the longest payload of an extension message: a compact
// datagram of MaxDatagram bytes (header and CRC included).
const MaxPayload = MaxDatagram - packet.CompactHeaderLen - packet.CRCLen

// Flag bits.
const (
	flagPrivate  = 1 << 0 // EXT_CREATE
	flagPassword = 1 << 0 // an EXT_ROOMS entry
	allStates    = 1<<(packet.Finished+1) - 1
)

// Parse decodes and fully validates one extension datagram in either
// framing: the framing, length and CRC (package packet's errors), then
// the type (ErrType) and its direction (ErrDirection), the version
// (ErrVersion), every field (ErrShort, ErrField) and what follows the last
// one (ErrTrailing: a request may end in zero bytes of padding, a reply
// ends with its last field). A compressed payload claiming more than
// MaxPayload is refused before it is inflated.
func Parse(b []byte) (Message, error) { return parse(b, false) }

// ParseRequest is Parse for a lobby or a room, which take requests only: a
// reply fails with packet.ErrNotRequest once its framing and CRC hold,
// before its payload is inflated or read.
func ParseRequest(b []byte) (Message, error) { return parse(b, true) }

func parse(b []byte, requests bool) (Message, error) {
	if requests && packet.Is(b) {
		dir := packet.Direction(b[0])
		if b[0] == 0xA3 {
			dir = packet.Direction(b[5])
		}
		if dir == packet.ServerToClient {
			if _, err := packet.ParseFrameMax(b, 0); err != nil && err != packet.ErrCompression {
				return Message{}, err // not even a well-framed datagram
			}
			return Message{}, packet.ErrNotRequest
		}
	}
	f, err := packet.ParseFrameMax(b, MaxPayload)
	if err != nil {
		return Message{}, err
	}
	if !Is(f.Type) {
		return Message{}, ErrType
	}
	if f.Dir != Dir(f.Type) {
		return Message{}, ErrDirection
	}
	if len(f.Payload) > MaxPayload {
		return Message{}, ErrTooLong
	}
	m := Message{Header: f.Header}
	r := reader{p: f.Payload}
	if r.u8() != Version && r.err == nil {
		return Message{}, ErrVersion
	}
	m.decode(&r)
	if r.err != nil {
		return Message{}, r.err
	}
	if Dir(m.Type) == packet.ClientToServer && m.Type != Present {
		for _, c := range r.p {
			if c != 0 {
				return Message{}, ErrTrailing
			}
		}
		m.Pad = len(r.p)
	} else if len(r.p) > 0 {
		return Message{}, ErrTrailing
	}
	return m, nil
}

func (m *Message) decode(r *reader) {
	switch m.Type {
	case List:
		m.Token = r.blob(MaxToken)
		m.Cursor = r.u32()
		m.Limit = r.u8()
		m.Filter = r.filter()
	case Create:
		m.Token = r.blob(MaxToken)
		m.Client = r.client()
		flags := r.u8()
		if flags&^flagPrivate != 0 {
			r.fail(ErrField)
		}
		m.Private = flags&flagPrivate != 0
		m.Meta = r.meta()
		m.Password = r.text(MaxPassword)
	case Join:
		m.Token = r.blob(MaxToken)
		m.Client = r.client()
		m.RoomID = r.u32()
		if n := r.u8(); n != 0 {
			m.Code = r.code(int(n))
		}
		m.Password = r.text(MaxPassword)
		if (m.RoomID == 0) == (m.Code == "") && r.err == nil {
			r.fail(ErrField) // by id or by code: one of them
		}
	case Quick:
		m.Token = r.blob(MaxToken)
		m.Client = r.client()
		m.Filter = r.filter()
	case Present:
		m.SeatToken = r.blob(MaxToken)
		if m.SeatToken == nil && r.err == nil {
			r.fail(ErrField)
		}
	case Rooms:
		m.Next = r.u32()
		n := int(r.u8())
		for i := 0; i < n && r.err == nil; i++ {
			// Each entry takes at least entryMin bytes: n is backed by
			// the bytes received before anything is kept.
			if len(r.p) < entryMin {
				r.fail(ErrShort)
				break
			}
			m.Entries = append(m.Entries, r.entry())
		}
	case Seat:
		m.RoomID = r.u32()
		m.Port = r.u16()
		m.Code = r.code(CodeLen)
		m.Addr = r.addr()
		m.SeatToken = r.blob(MaxToken)
	case Refused:
		m.Reason = r.u8()
	case Retry:
		m.Token = r.blob(MaxToken)
		if m.Token == nil && r.err == nil {
			r.fail(ErrField)
		}
	case Admitted:
		m.RoomID = r.u32()
	}
}

// entryMin is the fewest bytes an EXT_ROOMS entry takes: its fixed fields,
// its code and four empty lengths (name, mode, map, tag count).
const entryMin = 4 + 2 + 2 + 2 + 1 + 1 + CodeLen + 4

// reader reads a payload front to back; the first failure sticks and
// every later read returns zero values.
type reader struct {
	p   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.p = nil
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.p) < n {
		r.fail(ErrShort)
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// addr reads len u8 (0, 4 or 16) and an IP address of that many bytes;
// the zero Addr for 0. An IPv4-mapped IPv6 address is refused: it is sent
// as IPv4.
func (r *reader) addr() netip.Addr {
	n := int(r.u8())
	b := r.take(n)
	var a netip.Addr
	switch {
	case r.err != nil, n == 0:
	case n == 4:
		a = netip.AddrFrom4([4]byte(b))
	case n == 16 && !netip.AddrFrom16([16]byte(b)).Is4In6():
		a = netip.AddrFrom16([16]byte(b))
	default:
		r.fail(ErrField)
	}
	return a
}

func (r *reader) client() (c [8]byte) {
	copy(c[:], r.take(8))
	return c
}

// blob reads len u8 and that many bytes, at most max; nil for none.
func (r *reader) blob(max int) []byte {
	n := int(r.u8())
	if n > max {
		r.fail(ErrField)
		return nil
	}
	b := r.take(n)
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// text reads len u8 and that many bytes of text, at most max.
func (r *reader) text(max int) string {
	n := int(r.u8())
	b := r.take(n)
	if r.err == nil && (n > max || !validText(b)) {
		r.fail(ErrField)
	}
	return string(b)
}

// code reads a join code of n bytes, which must be CodeLen.
func (r *reader) code(n int) string {
	b := r.take(n)
	if r.err == nil && (n != CodeLen || !ValidCode(string(b))) {
		r.fail(ErrField)
		return ""
	}
	return string(b)
}

func (r *reader) tags() []Tag {
	n := int(r.u8())
	if n > MaxTags {
		r.fail(ErrField)
		return nil
	}
	var tags []Tag
	for range n {
		t := Tag{Key: r.text(MaxTagKey), Value: r.text(MaxTagValue)}
		if r.err != nil {
			return nil
		}
		tags = append(tags, t)
	}
	if !validTags(tags) {
		r.fail(ErrField)
		return nil
	}
	return tags
}

func (r *reader) meta() Meta {
	return Meta{Name: r.text(MaxName), Mode: r.text(MaxMode), Map: r.text(MaxMap), Tags: r.tags()}
}

func (r *reader) filter() Filter {
	f := Filter{States: r.u8(), MinFree: r.u8()}
	if f.States&^allStates != 0 {
		r.fail(ErrField)
	}
	f.Mode, f.Map, f.NamePrefix = r.text(MaxMode), r.text(MaxMap), r.text(MaxName)
	f.Tags = r.tags()
	return f
}

func (r *reader) entry() Entry {
	e := Entry{ID: r.u32(), Players: r.u16(), MaxPlayers: r.u16(), Port: r.u16(), State: packet.RoomState(r.u8())}
	flags := r.u8()
	if r.err == nil && (e.State > packet.Finished || flags&^flagPassword != 0) {
		r.fail(ErrField)
	}
	e.Password = flags&flagPassword != 0
	e.Code = r.code(CodeLen)
	e.Meta = r.meta()
	return e
}

// validText reports whether b is UTF-8 without control characters: what a
// name shown in a browser, a terminal or a zero-terminated string can be.
func validText(b []byte) bool {
	for len(b) > 0 {
		c, n := utf8.DecodeRune(b)
		if c == utf8.RuneError && n <= 1 || c < 0x20 || c >= 0x7F && c < 0xA0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// ValidText reports whether s may be a text field of at most max bytes.
func ValidText(s string, max int) bool { return len(s) <= max && validText([]byte(s)) }

// ValidTagKey reports whether s may be a tag's key: 1 to MaxTagKey bytes
// of a-z, 0-9, '_', '-' and '.'.
func ValidTagKey(s string) bool {
	if s == "" || len(s) > MaxTagKey {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validTags reports whether tags may be a room's or a filter's: at most
// MaxTags, each key valid and distinct, each value a text.
func validTags(tags []Tag) bool {
	if len(tags) > MaxTags {
		return false
	}
	for i, t := range tags {
		if !ValidTagKey(t.Key) || !ValidText(t.Value, MaxTagValue) {
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

// Valid reports whether m may describe a room on the wire.
func (m Meta) Valid() bool {
	return ValidText(m.Name, MaxName) && ValidText(m.Mode, MaxMode) && ValidText(m.Map, MaxMap) && validTags(m.Tags)
}

// Valid reports whether f may be sent.
func (f Filter) Valid() bool {
	return f.States&^allStates == 0 && ValidText(f.Mode, MaxMode) && ValidText(f.Map, MaxMap) &&
		ValidText(f.NamePrefix, MaxName) && validTags(f.Tags)
}

// Append appends the encoding of m to b: the header of m's framing, the
// payload of its type, the CRC. It returns b unchanged and an error, never
// a datagram Parse would refuse: ErrType for a type that is no extension
// message, ErrField for a field out of its range, ErrTooLong past
// MaxPayload, packet.ErrFraming for an unknown framing.
func (m *Message) Append(b []byte) ([]byte, error) {
	dir := Dir(m.Type)
	if dir == 0 {
		return b, ErrType
	}
	if m.Framing != packet.Compact && m.Framing != packet.Legacy {
		return b, packet.ErrFraming
	}
	var w writer
	w.p = make([]byte, 0, 64)
	w.u8(Version)
	m.encode(&w)
	if w.err != nil {
		return b, w.err
	}
	if len(w.p) > MaxPayload {
		return b, ErrTooLong
	}
	return packet.AppendFrame(b, m.Header, dir, w.p), nil
}

func (m *Message) encode(w *writer) {
	pad := dirPad(m)
	switch m.Type {
	case List:
		w.blob(m.Token)
		w.u32(m.Cursor)
		w.u8(m.Limit)
		w.filter(m.Filter)
	case Create:
		w.blob(m.Token)
		w.p = append(w.p, m.Client[:]...)
		var flags uint8
		if m.Private {
			flags |= flagPrivate
		}
		w.u8(flags)
		w.meta(m.Meta)
		w.text(m.Password, MaxPassword)
	case Join:
		if (m.RoomID == 0) == (m.Code == "") {
			w.fail(ErrField)
		}
		w.blob(m.Token)
		w.p = append(w.p, m.Client[:]...)
		w.u32(m.RoomID)
		if m.Code != "" {
			w.u8(CodeLen)
			w.code(m.Code)
		} else {
			w.u8(0)
		}
		w.text(m.Password, MaxPassword)
	case Quick:
		w.blob(m.Token)
		w.p = append(w.p, m.Client[:]...)
		w.filter(m.Filter)
	case Present:
		if len(m.SeatToken) == 0 {
			w.fail(ErrField)
		}
		w.blob(m.SeatToken)
	case Rooms:
		if len(m.Entries) > 0xFF {
			w.fail(ErrTooLong)
		}
		w.u32(m.Next)
		w.u8(uint8(len(m.Entries)))
		for _, e := range m.Entries {
			w.entry(e)
		}
	case Seat:
		w.u32(m.RoomID)
		w.u16(m.Port)
		w.code(m.Code)
		w.addr(m.Addr)
		w.blob(m.SeatToken)
	case Refused:
		w.u8(m.Reason)
	case Retry:
		if len(m.Token) == 0 {
			w.fail(ErrField)
		}
		w.blob(m.Token)
	case Admitted:
		w.u32(m.RoomID)
	}
	if pad < 0 || pad > MaxPayload {
		w.fail(ErrTooLong)
		return
	}
	w.p = append(w.p, make([]byte, pad)...)
}

// dirPad is the padding m's encoding ends with: requests to the lobby
// only.
func dirPad(m *Message) int {
	if Dir(m.Type) == packet.ClientToServer && m.Type != Present {
		return m.Pad
	}
	return 0
}

// EntryLen is the bytes e takes in an EXT_ROOMS payload, so that a lobby
// can fill a page up to MaxDatagram.
func EntryLen(e *Entry) int {
	n := entryMin + len(e.Name) + len(e.Mode) + len(e.Map)
	for _, t := range e.Tags {
		n += 2 + len(t.Key) + len(t.Value)
	}
	return n
}

// RoomsOverhead is what an EXT_ROOMS datagram in the compact framing
// takes besides its entries: header, version, cursor, count and CRC.
const RoomsOverhead = packet.CompactHeaderLen + 1 + 4 + 1 + packet.CRCLen

type writer struct {
	p   []byte
	err error
}

func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) u8(v uint8)   { w.p = append(w.p, v) }
func (w *writer) u16(v uint16) { w.p = binary.BigEndian.AppendUint16(w.p, v) }
func (w *writer) u32(v uint32) { w.p = binary.BigEndian.AppendUint32(w.p, v) }

func (w *writer) addr(a netip.Addr) {
	switch {
	case !a.IsValid():
		w.u8(0)
	case a.Is4() || a.Is4In6():
		v := a.Unmap().As4()
		w.u8(4)
		w.p = append(w.p, v[:]...)
	case a.Zone() != "":
		w.fail(ErrField)
	default:
		v := a.As16()
		w.u8(16)
		w.p = append(w.p, v[:]...)
	}
}

func (w *writer) blob(b []byte) {
	if len(b) > MaxToken {
		w.fail(ErrField)
		return
	}
	w.u8(uint8(len(b)))
	w.p = append(w.p, b...)
}

func (w *writer) text(s string, max int) {
	if !ValidText(s, max) {
		w.fail(ErrField)
		return
	}
	w.u8(uint8(len(s)))
	w.p = append(w.p, s...)
}

func (w *writer) code(s string) {
	if !ValidCode(s) {
		w.fail(ErrField)
		return
	}
	w.p = append(w.p, s...)
}

func (w *writer) tags(tags []Tag) {
	if !validTags(tags) {
		w.fail(ErrField)
		return
	}
	w.u8(uint8(len(tags)))
	for _, t := range tags {
		w.text(t.Key, MaxTagKey)
		w.text(t.Value, MaxTagValue)
	}
}

func (w *writer) meta(m Meta) {
	w.text(m.Name, MaxName)
	w.text(m.Mode, MaxMode)
	w.text(m.Map, MaxMap)
	w.tags(m.Tags)
}

func (w *writer) filter(f Filter) {
	if f.States&^allStates != 0 {
		w.fail(ErrField)
	}
	w.u8(f.States)
	w.u8(f.MinFree)
	w.text(f.Mode, MaxMode)
	w.text(f.Map, MaxMap)
	w.text(f.NamePrefix, MaxName)
	w.tags(f.Tags)
}

func (w *writer) entry(e Entry) {
	if e.State > packet.Finished {
		w.fail(ErrField)
	}
	w.u32(e.ID)
	w.u16(e.Players)
	w.u16(e.MaxPlayers)
	w.u16(e.Port)
	w.u8(uint8(e.State))
	var flags uint8
	if e.Password {
		flags |= flagPassword
	}
	w.u8(flags)
	w.code(e.Code)
	w.meta(e.Meta)
}

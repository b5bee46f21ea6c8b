package packet

import (
	"encoding/binary"
	"slices"
)

// Sizes of the framing parts, in bytes.
const (
	// CompactHeaderLen is the size of the compact header.
	CompactHeaderLen = 8
	// LegacyHeaderLen is the size of the legacy header.
	LegacyHeaderLen = 17
	// CRCLen is the size of the CRC-32 trailer.
	CRCLen = 4
	// MaxPayload is the largest payload a frame can carry; payloadSize
	// and originalSize are 16-bit fields.
	MaxPayload = 0xFFFF
)

// legacyMagic opens every legacy datagram. Its first byte can never start a
// compact one, whose first byte is the packetType 1 or 2.
var legacyMagic = [4]byte{0xA3, 0x5F, 0xC8, 0x1D}

const (
	legacyVersion    = 0x01
	legacyCompressed = 0x80
)

// Frame is one datagram checked for framing, length and CRC, with its
// payload inflated, but not interpreted. Other protocols that share the
// framing (the reference room's game protocol) build on it.
type Frame struct {
	Header
	Dir     Direction
	Payload []byte // aliases the input unless it was compressed
}

// wire is what a datagram's framing says besides its Header, which is
// kept apart so that a parser fills its caller's in place.
type wire struct {
	dir      Direction
	flagged  bool   // legacy version byte has the compressed bit
	original int    // originalSize
	payload  []byte // as sent, aliasing the input, until inflate inflates it
}

// readHeader checks what a header alone can tell: the framing, its size,
// the legacy magic and version, and that the length matches payloadSize.
// It does not check the CRC. It fills h and w in place: a header
// returned by value would be built of narrow stores and copied with wide
// loads, which the processor cannot forward, on every datagram.
func readHeader(b []byte, h *Header, w *wire) error {
	hl := CompactHeaderLen
	if len(b) > 0 && b[0] == legacyMagic[0] {
		hl = LegacyHeaderLen
	}
	if len(b) < hl+CRCLen {
		return ErrShort
	}
	var sizes []byte
	if hl == LegacyHeaderLen {
		if [4]byte(b[:4]) != legacyMagic || b[4]&^legacyCompressed != legacyVersion {
			return ErrMagic
		}
		*h = Header{Framing: Legacy, Type: Type(b[6]), Seq: binary.BigEndian.Uint16(b[7:]), Tick: binary.BigEndian.Uint32(b[9:])}
		w.flagged = b[4]&legacyCompressed != 0
		w.dir = Direction(b[5])
		sizes = b[13:17]
	} else {
		*h = Header{Framing: Compact, Type: Type(b[1]), Seq: binary.BigEndian.Uint16(b[2:])}
		w.flagged = false
		w.dir = Direction(b[0])
		sizes = b[4:8]
	}
	n := int(binary.BigEndian.Uint16(sizes))
	if len(b) != hl+n+CRCLen {
		return ErrLength
	}
	w.original = int(binary.BigEndian.Uint16(sizes[2:]))
	w.payload = b[hl : hl+n : hl+n]
	h.Compressed = w.original > n
	return nil
}

func validDir(d Direction) bool { return d == ClientToServer || d == ServerToClient }

// parseWire checks the framing layer up to, not including, compression,
// filling h and w in place (see readHeader).
func parseWire(b []byte, h *Header, w *wire) error {
	if err := readHeader(b, h, w); err != nil {
		return err
	}
	n := len(b) - CRCLen
	if binary.BigEndian.Uint32(b[n:]) != checksum(b[:n]) {
		return ErrCRC
	}
	if !validDir(w.dir) {
		return ErrPacketType
	}
	return nil
}

// Is reports whether b looks like a datagram in either framing: a valid
// legacy magic and version if it starts with 0xA3, a packetType of 1 or 2
// and a length that matches the header. It reads the header only and skips
// the CRC, so a server can route or drop a datagram cheaply; only [Parse]
// and [ParseFrame] validate.
func Is(b []byte) bool {
	var h Header
	var w wire
	return readHeader(b, &h, &w) == nil && validDir(w.dir)
}

// TypeOf returns the message type in the header of a datagram in either
// framing, or 0 (no message type) if b is too short for a header. It
// checks nothing else, not even the magic: it is for a datagram whose
// bytes are trusted, such as a reply a server encoded itself and counts
// by type once sent, at the cost of two comparisons. Only [Parse] and
// [ParseFrame] validate.
func TypeOf(b []byte) Type {
	if len(b) > 0 && b[0] == legacyMagic[0] {
		if len(b) < LegacyHeaderLen {
			return 0
		}
		return Type(b[6])
	}
	if len(b) < CompactHeaderLen {
		return 0
	}
	return Type(b[1])
}

// ParseFrame checks a datagram's framing, length, CRC and compression.
// It checks in the same order as [Parse] and returns the same errors, but
// leaves the message type and the payload to the caller.
func ParseFrame(b []byte) (Frame, error) { return ParseFrameMax(b, MaxPayload) }

// ParseFrameMax is ParseFrame for a protocol whose payloads are at most
// max bytes: a compressed payload that claims more is refused
// (ErrCompression) before anything is inflated, so that a hostile block
// costs a receiver no more than a plain datagram.
func ParseFrameMax(b []byte, max int) (Frame, error) {
	var h Header
	var w wire
	if err := parseWire(b, &h, &w); err != nil {
		return Frame{}, err
	}
	if h.Compressed && w.original > max {
		return Frame{}, ErrCompression
	}
	if err := inflate(&h, &w); err != nil {
		return Frame{}, err
	}
	return Frame{Header: h, Dir: w.dir, Payload: w.payload}, nil
}

// AppendFrame appends a datagram carrying payload to b. If h.Compressed is
// set, the payload is sent as an LZ4 block when that block is smaller than
// the payload, and as is otherwise; h.Tick is written only in the Legacy
// framing.
//
// AppendFrame panics if dir is not ClientToServer or ServerToClient, if
// h.Framing is unknown, or if payload is longer than MaxPayload: each would
// make a datagram no peer can parse, and the signature has no error to say so.
func AppendFrame(b []byte, h Header, dir Direction, payload []byte) []byte {
	if !validDir(dir) {
		panic("packet: AppendFrame with invalid direction " + dir.String())
	}
	if len(payload) > MaxPayload {
		panic("packet: AppendFrame payload longer than MaxPayload")
	}
	b, start, err := beginFrame(b, h.Framing, len(payload))
	if err != nil {
		panic("packet: AppendFrame with " + err.Error())
	}
	b = append(b, payload...)
	return endFrame(b, start, h, dir)
}

func headerLen(f Framing) (int, error) {
	switch f {
	case Compact:
		return CompactHeaderLen, nil
	case Legacy:
		return LegacyHeaderLen, nil
	}
	return 0, ErrFraming
}

// beginFrame grows b once for a whole frame with a payload of n bytes,
// appends room for the header and returns where the frame starts. The
// caller appends the payload and calls endFrame.
func beginFrame(b []byte, f Framing, n int) ([]byte, int, error) {
	hl, err := headerLen(f)
	if err != nil {
		return b, len(b), err
	}
	b = slices.Grow(b, hl+n+CRCLen)
	start := len(b)
	var zero [LegacyHeaderLen]byte
	return append(b, zero[:hl]...), start, nil
}

// endFrame compresses the payload after b[start:]'s header if asked and
// worthwhile, fills in the header and appends the CRC.
func endFrame(b []byte, start int, h Header, dir Direction) []byte {
	hl, _ := headerLen(h.Framing) // beginFrame checked it
	original := len(b) - start - hl
	if h.Compressed {
		b = b[:start+hl+deflate(b[start+hl:])]
	}
	size := len(b) - start - hl
	f := b[start:]
	// The header goes in eight bytes at a store: the checksum reads it
	// back at once, eight bytes at a time, which the processor forwards
	// from one store but not from several narrower ones.
	if h.Framing == Legacy {
		version := uint64(legacyVersion)
		if size < original {
			version |= legacyCompressed
		}
		binary.BigEndian.PutUint64(f, uint64(binary.BigEndian.Uint32(legacyMagic[:]))<<32|version<<24|uint64(dir)<<16|uint64(h.Type)<<8|uint64(h.Seq>>8))
		binary.BigEndian.PutUint64(f[8:], uint64(h.Seq&0xff)<<56|uint64(h.Tick)<<24|uint64(size)<<8|uint64(original>>8))
		f[16] = byte(original)
	} else {
		binary.BigEndian.PutUint64(f, uint64(dir)<<56|uint64(h.Type)<<48|uint64(h.Seq)<<32|uint64(size)<<16|uint64(original))
	}
	return binary.BigEndian.AppendUint32(b, checksum(f))
}

// SetSeq rewrites the sequence id of an encoded datagram in place and
// computes its CRC anew, so that an encoding can be reused for another
// sequence id (and a datagram changed by hand gets a right CRC). It works
// for either framing and leaves pkt alone if it is too short to hold a
// header and CRC.
func SetSeq(pkt []byte, seq uint16) {
	off, ok := seqAt(pkt)
	if !ok {
		return
	}
	binary.BigEndian.PutUint16(pkt[off:], seq)
	n := len(pkt) - CRCLen
	binary.BigEndian.PutUint32(pkt[n:], checksum(pkt[:n]))
}

// SetSeqTick gives an encoding the sequence and tick of a request, for a
// reply's whole echo of it: the sequence id, and the tickId in the Legacy
// framing (the Compact one has none). A server encodes a reply once, e.g.
// the lobby its ROOM_LIST once per change, and patches the copy it sends
// to each request. pkt's CRC must be right, as Append made it: it is
// updated from the bytes that change, in the same few steps whatever
// pkt's length (a full ROOM_LIST is some 60 KB). Like SetSeq it leaves
// alone a pkt too short to hold a header and CRC.
func SetSeqTick(pkt []byte, seq uint16, tick uint32) {
	off, ok := seqAt(pkt)
	if !ok {
		return
	}
	var fields [6]byte // the sequence, and the tick if the framing has one
	k := 2
	binary.BigEndian.PutUint16(fields[:], seq)
	if off == legacySeqAt {
		k = 6
		binary.BigEndian.PutUint32(fields[2:], tick)
	}
	n := len(pkt) - CRCLen
	var d [6]byte
	for i := range k {
		d[i] = pkt[off+i] ^ fields[i]
	}
	copy(pkt[off:], fields[:k])
	old := binary.BigEndian.Uint32(pkt[n:])
	binary.BigEndian.PutUint32(pkt[n:], changedChecksum(old, d[:k], off, n))
}

// Where the sequence id of a datagram starts, in either framing.
const (
	compactSeqAt = 2
	legacySeqAt  = 7
)

// seqAt is where pkt's sequence id starts, and whether pkt is long enough
// to hold a header and CRC.
func seqAt(pkt []byte) (int, bool) {
	off, hl := compactSeqAt, CompactHeaderLen
	if len(pkt) > 0 && pkt[0] == legacyMagic[0] {
		off, hl = legacySeqAt, LegacyHeaderLen
	}
	return off, len(pkt) >= hl+CRCLen
}

package gg2

import (
	"encoding/binary"
	"math"
	"net/netip"
)

// ListServer is one server block of a list reply.
type ListServer struct {
	Transport Transport
	// V4 is the IPv4 endpoint; port 0 means there is none, and the
	// address is then carried but meaningless. The zero AddrPort encodes
	// as 0.0.0.0:0.
	V4 netip.AddrPort
	// V6 is the IPv6 endpoint, on the same terms. The zero AddrPort
	// encodes as [::]:0.
	V6        netip.AddrPort
	Slots     uint16
	Players   uint16
	Bots      uint16
	Flags     uint16 // FlagPassword; other bits reserved
	KeyValues KeyValues
}

// WireLen is the size of s's block in a reply, its length field included.
func (s ListServer) WireLen() int { return minBlock + s.KeyValues.wireLen() }

// ListReply is the lobby's answer to a list query.
type ListReply struct {
	Servers []ListServer
}

const (
	msgListReply = "list reply"
	// blockFixed is a server block's size after its length field, before
	// the table: transport 1, v4 port 2 and address 4, v6 port 2 and
	// address 16, slots, players, bots, flags, entry count 2 each.
	blockFixed = 1 + 2 + 4 + 2 + 16 + 2*5
	// minBlock is the smallest server block on the wire, length included.
	minBlock = 4 + blockFixed
)

// Append encodes the reply. It fails on an unknown transport, an address
// of the wrong family, or a table that cannot be encoded.
func (l ListReply) Append(b []byte) ([]byte, error) {
	if uint64(len(l.Servers)) > math.MaxUint32 {
		return b, fail(msgListReply, 0, ErrCount)
	}
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Servers)))
	for i := range l.Servers {
		s := &l.Servers[i]
		off := len(b) - start
		if !s.Transport.valid() {
			return b[:start], fail(msgListReply, off+4, ErrTransport)
		}
		v4, v6 := s.V4.Addr(), s.V6.Addr()
		if v4.IsValid() && !v4.Is4() || v6.IsValid() && !v6.Is6() {
			return b[:start], fail(msgListReply, off+5, ErrAddr)
		}
		if len(s.KeyValues) > math.MaxUint16 {
			return b[:start], fail(msgListReply, off+4+blockFixed-2, ErrCount)
		}
		if err := s.KeyValues.check(msgListReply, off+4+blockFixed); err != nil {
			return b[:start], err
		}
		b = binary.BigEndian.AppendUint32(b, uint32(blockFixed+s.KeyValues.wireLen()))
		b = append(b, byte(s.Transport))
		b = binary.BigEndian.AppendUint16(b, s.V4.Port())
		var a4 [4]byte // the zero Addr, which As4 refuses, stays 0.0.0.0
		if v4.IsValid() {
			a4 = v4.As4()
		}
		b = append(b, a4[:]...)
		b = binary.BigEndian.AppendUint16(b, s.V6.Port())
		a16 := v6.As16()
		b = append(b, a16[:]...)
		for _, v := range [...]uint16{s.Slots, s.Players, s.Bots, s.Flags, uint16(len(s.KeyValues))} {
			b = binary.BigEndian.AppendUint16(b, v)
		}
		b = s.KeyValues.appendTable(b)
	}
	return b, nil
}

// ParseListReply decodes a complete list reply, as read until the lobby
// closed the connection. Each block must be consumed exactly by its fields
// and table, and nothing may follow the last block. Key/value bytes alias b.
func ParseListReply(b []byte) (ListReply, error) {
	var l ListReply
	if len(b) < 4 {
		return l, fail(msgListReply, len(b), ErrTruncated)
	}
	count := binary.BigEndian.Uint32(b)
	// The count is the sender's word: reserve no more blocks than the
	// bytes could hold.
	if room := uint32((len(b) - 4) / minBlock); count > room {
		return l, fail(msgListReply, len(b), ErrTruncated)
	}
	l.Servers = make([]ListServer, 0, count)
	off := 4
	for range count {
		if len(b)-off < minBlock {
			return ListReply{}, fail(msgListReply, len(b), ErrTruncated)
		}
		blockLen := int(binary.BigEndian.Uint32(b[off:]))
		if blockLen < blockFixed {
			return ListReply{}, fail(msgListReply, off, ErrLength)
		}
		if len(b)-off-4 < blockLen {
			return ListReply{}, fail(msgListReply, len(b), ErrTruncated)
		}
		p := off + 4
		end := p + blockLen
		var s ListServer
		s.Transport = Transport(b[p])
		if !s.Transport.valid() {
			return ListReply{}, fail(msgListReply, p, ErrTransport)
		}
		s.V4 = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[p+3:p+7])), binary.BigEndian.Uint16(b[p+1:]))
		s.V6 = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[p+9:p+25])), binary.BigEndian.Uint16(b[p+7:]))
		s.Slots = binary.BigEndian.Uint16(b[p+25:])
		s.Players = binary.BigEndian.Uint16(b[p+27:])
		s.Bots = binary.BigEndian.Uint16(b[p+29:])
		s.Flags = binary.BigEndian.Uint16(b[p+31:])
		n := int(binary.BigEndian.Uint16(b[p+33:]))
		kv, tableEnd, err := parseTable(msgListReply, b, p+blockFixed, end, n)
		if err != nil {
			return ListReply{}, err
		}
		if tableEnd != end {
			return ListReply{}, fail(msgListReply, tableEnd, ErrLength)
		}
		s.KeyValues = kv
		l.Servers = append(l.Servers, s)
		off = end
	}
	if off != len(b) {
		return ListReply{}, fail(msgListReply, off, ErrLength)
	}
	return l, nil
}

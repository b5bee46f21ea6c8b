package gg2

import (
	"encoding/binary"
	"math"
	"net/netip"
)

// LegacyServer is one server of a legacy query reply.
type LegacyServer struct {
	// Info is the info string the lobby rebuilt for the server, at most
	// 255 bytes (see LegacyInfo.Append).
	Info []byte
	// Addr is the server's IPv4 address and port.
	Addr netip.AddrPort
}

// LegacyReply is the lobby's answer to a legacy query.
type LegacyReply struct {
	Servers []LegacyServer
}

const (
	msgLegacyReply = "legacy reply"
	// MaxLegacyServers is the most servers a legacy reply carries: its
	// count is one byte.
	MaxLegacyServers = math.MaxUint8
	// legacyEntryFixed is an entry's size besides its info string: the
	// info length, the IPv4 address and the port.
	legacyEntryFixed = 1 + 4 + 2
)

// Append encodes the reply. It fails on more than 255 servers, an info
// string longer than 255 bytes, or an address that is not IPv4.
func (l LegacyReply) Append(b []byte) ([]byte, error) {
	start := len(b)
	if len(l.Servers) > MaxLegacyServers {
		return b, fail(msgLegacyReply, 0, ErrCount)
	}
	b = append(b, byte(len(l.Servers)))
	for _, s := range l.Servers {
		var err error
		if b, err = AppendLegacyServer(b, start, s.Info, s.Addr); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// AppendLegacyServer appends one server entry to a reply that starts at
// b[start] (the offset is for errors). A lobby writes the count byte, then
// entries with this, without building a LegacyReply. On error b is
// returned unchanged.
func AppendLegacyServer(b []byte, start int, info []byte, addr netip.AddrPort) ([]byte, error) {
	off := len(b) - start
	switch {
	case len(info) > math.MaxUint8:
		return b, fail(msgLegacyReply, off, ErrValue)
	case !addr.Addr().Is4():
		return b, fail(msgLegacyReply, off+1+len(info), ErrAddr)
	}
	b = append(b, byte(len(info)))
	b = append(b, info...)
	a4 := addr.Addr().As4()
	b = append(b, a4[:]...)
	return binary.LittleEndian.AppendUint16(b, addr.Port()), nil
}

// ParseLegacyReply decodes a complete legacy reply, as read until the
// lobby closed the connection; nothing may follow the last entry. Info
// strings alias b.
func ParseLegacyReply(b []byte) (LegacyReply, error) {
	if len(b) < 1 {
		return LegacyReply{}, fail(msgLegacyReply, 0, ErrTruncated)
	}
	count := int(b[0])
	// The count is the sender's word: reserve no more entries than the
	// bytes could hold.
	if count > (len(b)-1)/legacyEntryFixed {
		return LegacyReply{}, fail(msgLegacyReply, len(b), ErrTruncated)
	}
	l := LegacyReply{Servers: make([]LegacyServer, 0, count)}
	off := 1
	for range count {
		if len(b)-off < legacyEntryFixed {
			return LegacyReply{}, fail(msgLegacyReply, len(b), ErrTruncated)
		}
		n := int(b[off])
		p := off + 1
		if len(b)-p < n+6 {
			return LegacyReply{}, fail(msgLegacyReply, len(b), ErrTruncated)
		}
		ip := netip.AddrFrom4([4]byte(b[p+n : p+n+4]))
		l.Servers = append(l.Servers, LegacyServer{
			Info: b[p : p+n : p+n],
			Addr: netip.AddrPortFrom(ip, binary.LittleEndian.Uint16(b[p+n+4:])),
		})
		off = p + n + 6
	}
	if off != len(b) {
		return LegacyReply{}, fail(msgLegacyReply, off, ErrLength)
	}
	return l, nil
}

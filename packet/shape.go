package packet

import "github.com/foyerlobby/foyer/internal/sockfilter"

// RequestShapes are the shapes, for a kernel socket filter, of requests
// of the given types in either framing whose payload on the wire is at
// most maxPayload bytes: the packetType of a request, one of types, and a
// length that matches payloadSize. A datagram outside them cannot parse
// as such a request; one inside may still fail its CRC or its payload.
func RequestShapes(types []Type, maxPayload int) []sockfilter.Shape {
	ts := make([]byte, len(types))
	for i, t := range types {
		ts[i] = byte(t)
	}
	return []sockfilter.Shape{
		{
			sockfilter.Byte(0, byte(ClientToServer)),
			sockfilter.Byte(1, ts...),
			sockfilter.SizeField(4, CompactHeaderLen+CRCLen, maxPayload),
		},
		append(sockfilter.Bytes(0, legacyMagic[:]),
			sockfilter.Masked(4, ^byte(legacyCompressed), legacyVersion),
			sockfilter.Byte(5, byte(ClientToServer)),
			sockfilter.Byte(6, ts...),
			sockfilter.SizeField(13, LegacyHeaderLen+CRCLen, maxPayload)),
	}
}

// MaxRequestPayload is the longest payload, on the wire, of a native
// request: JOIN_ROOM's room id (a compressed payload is shorter than the
// one it inflates to).
const MaxRequestPayload = roomIDLen

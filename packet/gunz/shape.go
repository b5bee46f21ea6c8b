package gunz

import (
	"encoding/binary"

	"github.com/foyerlobby/foyer/internal/sockfilter"
)

// RequestShape is the shape, for a kernel socket filter, of a locator
// request: its exact size and the fixed fields of its two headers (the
// checksum and serial vary).
func RequestShape() sockfilter.Shape {
	packetHeader := binary.LittleEndian.AppendUint16(nil, MsgRawCommand)
	packetHeader = binary.LittleEndian.AppendUint16(packetHeader, RequestLen)
	command := binary.LittleEndian.AppendUint16(nil, CommandHeaderLen)
	command = binary.LittleEndian.AppendUint16(command, CommandRequestServerList)
	s := sockfilter.Shape{sockfilter.Length(RequestLen, RequestLen)}
	s = append(s, sockfilter.Bytes(0, packetHeader)...)
	return append(s, sockfilter.Bytes(HeaderLen, command)...)
}

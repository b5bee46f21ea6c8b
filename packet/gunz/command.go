package gunz

import "encoding/binary"

// Framing constants.
const (
	// MsgRawCommand is the packet header's msgId for a raw command.
	MsgRawCommand = 0x64
	// HeaderLen is the packet header's size.
	HeaderLen = 6
	// CommandHeaderLen is the command header's size, parameters excluded.
	CommandHeaderLen = 5
	// MaxDatagram is the largest UDP payload over IPv4.
	MaxDatagram = 65507
)

// Checksum computes the packet header checksum of a whole datagram: the
// sum of every byte from offset 6 on, minus the sum of bytes 0 to 3, as a
// 32-bit value whose high and low halves are then added, keeping the low 16
// bits. The checksum field itself (bytes 4 and 5) does not take part.
// b must hold at least the 6-byte header.
func Checksum(b []byte) uint16 {
	var sum uint32
	for _, c := range b[HeaderLen:] {
		sum += uint32(c)
	}
	for _, c := range b[:4] {
		sum -= uint32(c)
	}
	return uint16(sum>>16 + sum&0xffff)
}

// appendCommand writes the packet header and command header for a command
// whose parameters will be paramLen bytes; the caller appends them and then
// calls seal.
func appendCommand(b []byte, id uint16, serial uint8, paramLen int) []byte {
	total := HeaderLen + CommandHeaderLen + paramLen
	b = binary.LittleEndian.AppendUint16(b, MsgRawCommand)
	b = binary.LittleEndian.AppendUint16(b, uint16(total))
	b = append(b, 0, 0) // checksum, filled by seal
	b = binary.LittleEndian.AppendUint16(b, uint16(CommandHeaderLen+paramLen))
	b = binary.LittleEndian.AppendUint16(b, id)
	return append(b, serial)
}

// seal fills in the checksum of the datagram pkt, which ends b.
func seal(pkt []byte) {
	binary.LittleEndian.PutUint16(pkt[4:], Checksum(pkt))
}

// parseCommand checks the framing of a datagram carrying command id and
// returns the serial and the parameter bytes.
func parseCommand(msg string, b []byte, id uint16) (serial uint8, params []byte, err error) {
	if len(b) < HeaderLen+CommandHeaderLen {
		return 0, nil, fail(msg, len(b), ErrTruncated)
	}
	if binary.LittleEndian.Uint16(b) != MsgRawCommand {
		return 0, nil, fail(msg, 0, ErrMsgID)
	}
	if int(binary.LittleEndian.Uint16(b[2:])) != len(b) {
		return 0, nil, fail(msg, 2, ErrSize)
	}
	if binary.LittleEndian.Uint16(b[4:]) != Checksum(b) {
		return 0, nil, fail(msg, 4, ErrChecksum)
	}
	if int(binary.LittleEndian.Uint16(b[6:])) != len(b)-HeaderLen {
		return 0, nil, fail(msg, 6, ErrSize)
	}
	if binary.LittleEndian.Uint16(b[8:]) != id {
		return 0, nil, fail(msg, 8, ErrCommand)
	}
	return b[10], b[HeaderLen+CommandHeaderLen:], nil
}

// IsRequest reports, from the first 11 bytes alone and without checking
// the checksum, whether b looks like a locator request: the cheap test
// before a full parse.
func IsRequest(b []byte) bool {
	return len(b) == RequestLen &&
		binary.LittleEndian.Uint16(b) == MsgRawCommand &&
		binary.LittleEndian.Uint16(b[8:]) == CommandRequestServerList
}

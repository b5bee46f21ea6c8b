package lobby

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg appends a control message of level and type carrying data, padded
// to its space unless it is the last (the kernel may leave that one
// unpadded).
func cmsg(oob []byte, level, typ int32, data []byte, last bool) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	if last {
		b = b[:unix.CmsgLen(len(data))]
	}
	return append(oob, b...)
}

// A datagram's control messages are read one after the other: the drop
// counter and the destination address both, the last one unpadded.
func TestParseControlReadsEveryMessage(t *testing.T) {
	drops := binary.NativeEndian.AppendUint32(nil, 7)
	var info [unix.SizeofInet4Pktinfo]byte
	copy(info[8:12], []byte{192, 0, 2, 5})
	oob := cmsg(nil, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, drops, false)
	oob = cmsg(oob, unix.IPPROTO_IP, unix.IP_PKTINFO, info[:], true)
	at, n, ok := parseControl(oob)
	if at.to != netip.MustParseAddr("192.0.2.5") || n != 7 || !ok {
		t.Fatalf("parsed %v, %d drops, %v; want 192.0.2.5, 7, true", at.to, n, ok)
	}
	if at, _, ok := parseControl(oob[:len(oob)-1]); at.to.IsValid() || !ok {
		t.Fatalf("a message cut short: parsed %v, %v; want only the drops", at.to, ok)
	}
}

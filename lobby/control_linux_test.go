package lobby

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/internal/udptest"
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

// A datagram's control messages are read one after the other: one of
// another kind before the destination address is passed over, and the
// last one may be unpadded.
func TestParseControlReadsEveryMessage(t *testing.T) {
	drops := binary.NativeEndian.AppendUint32(nil, 7)
	var info [unix.SizeofInet4Pktinfo]byte
	copy(info[8:12], []byte{192, 0, 2, 5})
	oob := cmsg(nil, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, drops, false)
	oob = cmsg(oob, unix.IPPROTO_IP, unix.IP_PKTINFO, info[:], true)
	if at := parseControl(oob); at.to != netip.MustParseAddr("192.0.2.5") {
		t.Fatalf("parsed %v; want 192.0.2.5", at.to)
	}
	if at := parseControl(oob[:len(oob)-1]); at.to.IsValid() {
		t.Fatalf("a message cut short: parsed %v; want none", at.to)
	}
}

// A loop sees the kernel's drops at its socket: those from before it
// began, then each new run of them, asking the kernel at most
// once per dropCheck.
func TestBatchSeesDropsAtMostOncePerCheck(t *testing.T) {
	srv := udptest.Listen(t, "127.0.0.1")
	c := dial(t, "127.0.0.1", srv.LocalAddr().(*net.UDPAddr).AddrPort())
	overflow := func() {
		t.Helper()
		before, err := sockfilter.Drops(srv)
		for i := 0; err == nil && i < 100_000; i++ {
			c.sendRaw(make([]byte, 1024))
			if now, _ := sockfilter.Drops(srv); now != before {
				return
			}
		}
		t.Fatalf("the socket dropped nothing (%v)", err)
	}
	overflow() // before the loop is made: as at a start under a flood
	q := newBatch(srv, true, 0)
	now := time.Now()
	if !q.dropped(now) {
		t.Fatal("drops from before the loop began not seen")
	}
	overflow()
	if q.dropped(now.Add(dropCheck - 1)) {
		t.Fatal("looked again within dropCheck")
	}
	if !q.dropped(now.Add(dropCheck)) {
		t.Fatal("new drops not seen a dropCheck later")
	}
	if q.dropped(now.Add(3 * dropCheck)) {
		t.Fatal("drops seen twice")
	}
}

// Package udpsock makes a UDP socket of an address or of a descriptor
// another process passed on, alike wherever Foyer does it: the supervisor
// binding a room's port for its instance, an instance binding its own or
// taking the one passed to it, a lobby taking its predecessor's. It is
// portable, as the room SDK that uses it is.
package udpsock

import (
	"errors"
	"net"
	"net/netip"
	"os"
)

// Listen binds port at bind or, when bind is invalid, at every address.
func Listen(bind netip.Addr, port uint16) (*net.UDPConn, error) {
	addr := &net.UDPAddr{Port: int(port)}
	if bind.IsValid() {
		addr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(bind, port))
	}
	return net.ListenUDP("udp", addr)
}

// FromFile is the UDP socket of f, a descriptor another process passed
// on; f stays the caller's to close.
func FromFile(f *os.File) (*net.UDPConn, error) {
	pc, err := net.FilePacketConn(f)
	if err != nil {
		return nil, err
	}
	c, ok := pc.(*net.UDPConn)
	if !ok {
		pc.Close()
		return nil, errors.New("not a UDP socket")
	}
	return c, nil
}

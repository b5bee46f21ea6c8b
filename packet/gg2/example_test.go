package gg2_test

import (
	"fmt"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// A lobby tells the two UDP messages apart by their first 16 bytes, then
// parses the one it got.
func Example() {
	reg := gg2.Registration{
		ServerID:  gg2.MustParseUUID("00112233-4455-6677-8899-aabbccddeeff"),
		LobbyID:   gg2.GG2LobbyUUID,
		Transport: gg2.UDP,
		Port:      30001,
		Slots:     8,
		KeyValues: gg2.KeyValues{{Key: "name", Value: []byte("Room 1")}},
	}
	datagram, err := reg.Append(nil)
	if err != nil {
		return
	}
	switch gg2.Classify(datagram) {
	case gg2.KindRegistration:
		r, err := gg2.ParseRegistration(datagram)
		fmt.Println(r.Form, r.Transport, r.Port, r.KeyValues.Name(), err)
	case gg2.KindUnregister:
		u, err := gg2.ParseUnregister(datagram)
		fmt.Println(u.ServerID, err)
	}
	// Output: counted udp 30001 Room 1 <nil>
}

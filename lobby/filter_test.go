package lobby

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// lobbyFilter is the filter of a lobby whose table serves the extension.
func lobbyFilter(t testing.TB) []bpf.Instruction {
	t.Helper()
	l := testConfig().newLobby(newMemRooms(t, 4))
	t.Cleanup(l.stop)
	if l.ext == nil {
		t.Fatal("the test table does not serve the extension")
	}
	prog, err := sockfilter.Program(l.filter()...)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// served reports whether the lobby would take b for a request it serves.
func served(b []byte) bool {
	if m, err := packet.ParseRequest(b); err == nil {
		return slices.Contains(nativeRequests, m.Type)
	}
	m, err := ext.ParseRequest(b)
	return err == nil && slices.Contains(extRequests, m.Type)
}

// FuzzFilterKeepsEveryRequest: the socket filter never drops a datagram
// the lobby would serve, in either framing, compressed or not, native or
// the extension's. The seeds (testdata) are requests and replies of both.
func FuzzFilterKeepsEveryRequest(f *testing.F) {
	prog := lobbyFilter(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if !served(b) {
			return
		}
		if ok, err := sockfilter.Passes(prog, b); !ok || err != nil {
			t.Fatalf("request %x dropped by the filter (%v)", b, err)
		}
	})
}

// reseal sets b's CRC, for a datagram changed by hand.
func reseal(b []byte) []byte {
	n := len(b) - packet.CRCLen
	binary.BigEndian.PutUint32(b[n:], crc32.ChecksumIEEE(b[:n]))
	return b
}

// TestFilterDropsWhatCannotBeARequest: each datagram below, none of them a
// request the lobby serves, is dropped by the filter; and each request
// next to it passes.
func TestFilterDropsWhatCannotBeARequest(t *testing.T) {
	prog := lobbyFilter(t)
	encode := func(m packet.Message) []byte {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	list := encode(packet.Message{Header: packet.Header{Type: packet.ListRooms, Seq: 1}})
	join := encode(packet.Message{Header: packet.Header{Type: packet.JoinRoom, Seq: 2}, RoomID: 7})
	legacyJoin := encode(packet.Message{Header: packet.Header{Framing: packet.Legacy, Type: packet.JoinRoom, Seq: 3, Tick: 9}, RoomID: 7})
	extList, err := (&ext.Message{Header: packet.Header{Type: ext.List, Seq: 4}}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	longJoin := append(slices.Clone(join[:len(join)-packet.CRCLen]), 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(longJoin[4:], 5)
	binary.BigEndian.PutUint16(longJoin[6:], 5)
	reply := encode(packet.Message{Header: packet.Header{Type: packet.RoomCreated, Seq: 1}, RoomID: 1, Port: 30000})
	present := packet.AppendFrame(nil, packet.Header{Type: ext.Present}, packet.ClientToServer, make([]byte, 20))
	unknown := reseal(slices.Clone(list))
	unknown[1] = 0x47
	wrongDir := reseal(slices.Clone(list))
	wrongDir[0] = byte(packet.ServerToClient)
	badMagic := reseal(slices.Clone(legacyJoin))
	badMagic[2] ^= 1
	badVersion := reseal(slices.Clone(legacyJoin))
	badVersion[4] = 2
	for _, c := range []struct {
		name string
		b    []byte
		kept bool
	}{
		{"LIST", list, true},
		{"JOIN", join, true},
		{"legacy JOIN", legacyJoin, true},
		{"EXT_LIST", extList, true},
		{"LIST with a byte more than its payloadSize", append(slices.Clone(list), 0), false},
		{"LIST a byte short", list[:len(list)-1], false},
		{"JOIN with a 5-byte payload", reseal(longJoin), false},
		{"ROOM_CREATED, a reply", reply, false},
		{"EXT_PRESENT, a room's message", present, false},
		{"message type 0x47", unknown, false},
		{"a request type sent as a reply", wrongDir, false},
		{"legacy with a wrong magic", badMagic, false},
		{"legacy version 2", badVersion, false},
		{"legacy JOIN cut short", legacyJoin[:len(legacyJoin)-2], false},
		{"empty", nil, false},
		{"EXT_LIST past the extension's longest payload", packet.AppendFrame(nil, packet.Header{Type: ext.List}, packet.ClientToServer, make([]byte, ext.MaxPayload+1)), false},
	} {
		got, err := sockfilter.Passes(prog, c.b)
		if err != nil || got != c.kept {
			t.Errorf("%s (%x): kept %v (%v), want %v", c.name, c.b, got, err, c.kept)
		}
		if served(c.b) != c.kept {
			t.Errorf("%s: the lobby would serve it: %v, the test says %v", c.name, served(c.b), c.kept)
		}
	}
}

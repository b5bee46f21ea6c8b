package tests

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// The reference GG2 lobby (Faucet) has four integration tests, which a
// lobby that stands in for it must pass as it does. They are restated
// here, each as its own subtest, against foyer serve with the three ports
// Faucet serves (list and registration, legacy, status page) and UDP
// registrations let in, since the third registers a server for UDP:
//
//  1. GET /status answers 200.
//  2. A list query for the GG2 lobby of a fresh lobby gets 0 servers.
//  3. A registration of the counted form, for UDP, of a server with 8
//     slots, 2 players and no bots, with a name, a game and a random
//     protocol_id, sent from a socket other than the server's port, is
//     the one server of the next list query, with those counts.
//  4. A legacy registration of version 1 for a port that accepts TCP
//     connections gets a connect to that port within 3 s, and a legacy
//     query for version 1 then lists a server whose info holds the
//     registered name and "[5/10]".
//
// Each waits as Faucet's do: half a second after a registration.
func TestFaucetIntegrationChecks(t *testing.T) {
	webPort := gg2FreePort(t)
	f, legacyAddr := legacyStart(t, fmt.Sprintf("udp_transport = true\n[web]\nlisten = \"127.0.0.1:%d\"", webPort))

	t.Run("web interface", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/status", webPort))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/status: %d", resp.StatusCode)
		}
	})

	t.Run("new-style list, empty", func(t *testing.T) {
		if n := faucetServerCount(t, f.gg2.String()); n != 0 {
			t.Fatalf("%d servers, want 0", n)
		}
	})

	t.Run("server registration", func(t *testing.T) {
		var id, protocol [16]byte
		rand.Read(id[:])
		rand.Read(protocol[:])
		p := append([]byte(nil), gg2.RegisterUUID[:]...)
		p = append(p, id[:]...)
		p = append(p, gg2.GG2LobbyUUID[:]...)
		p = append(p, 1) // UDP
		p = binary.BigEndian.AppendUint16(p, 12345)
		p = binary.BigEndian.AppendUint16(p, 8) // slots
		p = binary.BigEndian.AppendUint16(p, 2) // players
		p = binary.BigEndian.AppendUint16(p, 0) // bots
		p = append(p, 0, 0)                     // flags
		p = binary.BigEndian.AppendUint16(p, 3)
		for _, kv := range [][2][]byte{{[]byte("name"), []byte("Test Server")}, {[]byte("game"), []byte("Test Game")}, {[]byte("protocol_id"), protocol[:]}} {
			p = append(p, byte(len(kv[0])))
			p = append(p, kv[0]...)
			p = binary.BigEndian.AppendUint16(p, uint16(len(kv[1])))
			p = append(p, kv[1]...)
		}
		faucetSend(t, f.gg2.String(), p)
		time.Sleep(500 * time.Millisecond)

		c := faucetDial(t, f.gg2.String())
		defer c.Close()
		c.Write(append(append([]byte(nil), gg2.ListProtocolUUID[:]...), gg2.GG2LobbyUUID[:]...))
		if n := binary.BigEndian.Uint32(faucetRead(t, c, 4)); n != 1 {
			t.Fatalf("%d servers, want 1", n)
		}
		block := faucetRead(t, c, int(binary.BigEndian.Uint32(faucetRead(t, c, 4))))
		slots, players, bots := binary.BigEndian.Uint16(block[25:]), binary.BigEndian.Uint16(block[27:]), binary.BigEndian.Uint16(block[29:])
		if slots != 8 || players != 2 || bots != 0 {
			t.Fatalf("listed with slots %d, players %d, bots %d", slots, players, bots)
		}
	})

	t.Run("legacy protocol", func(t *testing.T) {
		mock, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer mock.Close()
		connected := make(chan struct{})
		go func() {
			if c, err := mock.Accept(); err == nil {
				close(connected)
				c.Close()
			}
		}()
		port := uint16(mock.Addr().(*net.TCPAddr).Port)
		info := "Test Legacy Server [5/10]"
		p := []byte{4, 8, 15, 16, 23, 42, 1}
		p = binary.LittleEndian.AppendUint16(p, port)
		p = append(p, byte(len(info)))
		p = append(p, info...)
		faucetSend(t, legacyAddr.String(), p)
		select {
		case <-connected:
		case <-time.After(3 * time.Second):
			t.Fatal("the lobby did not connect for the reachability check")
		}
		time.Sleep(500 * time.Millisecond)

		c := faucetDial(t, legacyAddr.String())
		defer c.Close()
		c.Write([]byte{1})
		resp := make([]byte, 1024)
		n, err := c.Read(resp)
		if err != nil || n == 0 || resp[0] == 0 {
			t.Fatalf("reply %x, %v", resp[:n], err)
		}
		resp = resp[:n]
		found := false
		for i, off := 0, 1; i < int(resp[0]); i++ {
			if off >= len(resp) || off+1+int(resp[off])+6 > len(resp) {
				t.Fatalf("truncated reply %x", resp)
			}
			s := string(resp[off+1 : off+1+int(resp[off])])
			found = found || strings.Contains(s, "Test Legacy Server") && strings.Contains(s, "[5/10]")
			off += 1 + int(resp[off]) + 6
		}
		if !found {
			t.Fatalf("the registered server is not in %q", resp)
		}
	})
}

func faucetSend(t *testing.T, to string, b []byte) {
	t.Helper()
	c, err := net.Dial("udp4", to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func faucetDial(t *testing.T, to string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp4", to, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

func faucetRead(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

// faucetServerCount sends a list query for the GG2 lobby and reads the
// server count.
func faucetServerCount(t *testing.T, to string) uint32 {
	t.Helper()
	c := faucetDial(t, to)
	defer c.Close()
	c.Write(append(append([]byte(nil), gg2.ListProtocolUUID[:]...), gg2.GG2LobbyUUID[:]...))
	return binary.BigEndian.Uint32(faucetRead(t, c, 4))
}

package gg2

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// The two 32-byte messages share their tests: a leading UUID and a payload
// UUID, nothing else.
type pairCase struct {
	name   string
	lead   string
	parse  func([]byte) (UUID, error)
	append func([]byte, UUID) []byte
}

var pairCases = []pairCase{
	{
		"unregister", hexUnregisterUUID,
		func(b []byte) (UUID, error) { u, err := ParseUnregister(b); return u.ServerID, err },
		func(b []byte, u UUID) []byte { return Unregister{ServerID: u}.Append(b) },
	},
	{
		"list query", hexListUUID,
		func(b []byte) (UUID, error) { q, err := ParseListQuery(b); return q.Lobby, err },
		func(b []byte, u UUID) []byte { return ListQuery{Lobby: u}.Append(b) },
	},
}

func TestUUIDPairGolden(t *testing.T) {
	for _, tc := range pairCases {
		t.Run(tc.name, func(t *testing.T) {
			wire := wiretest.Hex(t, tc.lead+hexServerID)
			got, err := tc.parse(wire)
			if err != nil || got != testServerID {
				t.Fatalf("parse = %v, %v", got, err)
			}
			if out := tc.append(nil, testServerID); !bytes.Equal(out, wire) {
				t.Fatalf("append = % x, want % x", out, wire)
			}
			for n := range len(wire) {
				if _, err := tc.parse(wire[:n]); !errors.Is(err, ErrTruncated) {
					t.Fatalf("prefix %d: %v", n, err)
				}
			}
			if _, err := tc.parse(append(wire, 0)); !errors.Is(err, ErrLength) {
				t.Fatalf("33 bytes: %v", err)
			}
			wrong := wiretest.Hex(t, hexRegisterUUID+hexServerID)
			if _, err := tc.parse(wrong); !errors.Is(err, ErrMessageType) {
				t.Fatalf("wrong UUID: %v", err)
			}
		})
	}
}

func TestListQueryLobby(t *testing.T) {
	q, err := ParseListQuery(wiretest.Hex(t, hexListUUID+hexGG2Lobby))
	if err != nil || q.Lobby != GG2LobbyUUID {
		t.Fatalf("%v, %v", q, err)
	}
	// Logs and callers read the error text: it names package, message and offset.
	if _, err := ParseListQuery(nil); err == nil || err.Error() != "gg2: list query: truncated (at offset 0)" {
		t.Fatalf("ParseListQuery(nil) = %v", err)
	}
}

// fuzzPair checks that a 32-byte message that parses re-encodes to itself.
func fuzzPair(f *testing.F, tc pairCase) {
	f.Add(wiretest.Hex(f, tc.lead+hexServerID))
	f.Add(wiretest.Hex(f, tc.lead+hexGG2Lobby))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := tc.parse(b)
		if err != nil {
			return
		}
		if out := tc.append(nil, u); !bytes.Equal(out, b) {
			t.Fatalf("round trip: % x -> % x", b, out)
		}
	})
}

func FuzzUnregister(f *testing.F) { fuzzPair(f, pairCases[0]) }

// TestShapesKeepWhatTheLobbyTakes: the socket filter's shapes keep the
// golden registrations and unregister of each port, and drop a list query
// (a TCP message), a registration cut inside its fixed part, an
// unregister a byte long and garbage.
func TestShapesKeepWhatTheLobbyTakes(t *testing.T) {
	unregister := wiretest.Hex(t, hexUnregisterUUID+hexServerID)
	counted := wiretest.Hex(t, hexRegCounted)
	for _, c := range []struct {
		name   string
		shapes []sockfilter.Shape
		b      []byte
		kept   bool
	}{
		{"counted registration", DatagramShapes(), counted, true},
		{"legacy-form registration", DatagramShapes(), wiretest.Hex(t, hexRegLegacy), true},
		{"unregister", DatagramShapes(), unregister, true},
		{"legacy registration", LegacyShapes(), wiretest.Hex(t, hexLegacyRegShort), true},
		{"legacy registration, long version", LegacyShapes(), wiretest.Hex(t, hexLegacyRegLong), true},
		{"list query", DatagramShapes(), wiretest.Hex(t, hexListUUID+hexGG2Lobby), false},
		{"registration cut short", DatagramShapes(), counted[:regFixedLen-1], false},
		{"unregister and a byte", DatagramShapes(), append(slices.Clone(unregister), 0), false},
		{"registration on the legacy port", LegacyShapes(), counted, false},
		{"garbage", DatagramShapes(), []byte("no GG2 message at all, long enough to be one"), false},
	} {
		if got := sockfilter.Keeps(c.shapes, c.b); got != c.kept {
			t.Errorf("%s: kept %v, want %v", c.name, got, c.kept)
		}
	}
}

func FuzzListQuery(f *testing.F) { fuzzPair(f, pairCases[1]) }

func BenchmarkUUIDPair(b *testing.B) {
	for _, tc := range pairCases {
		wire := wiretest.Hex(b, tc.lead+hexServerID)
		b.Run("parse "+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.parse(wire); err != nil {
					b.Fatal(err)
				}
			}
		})
		buf := make([]byte, 0, 32)
		b.Run("append "+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = tc.append(buf[:0], testServerID)
			}
		})
	}
}

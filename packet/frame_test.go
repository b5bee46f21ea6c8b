package packet

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// TestFrameRoundTrip carries payloads of another protocol sharing the
// framing (message types outside 0x40-0x46) through both framings.
func TestFrameRoundTrip(t *testing.T) {
	payloads := [][]byte{nil, {1}, []byte("hello"), bytes.Repeat([]byte("room"), 1000), make([]byte, MaxPayload)}
	for _, p := range payloads {
		for _, f := range []Framing{Compact, Legacy} {
			for _, c := range []bool{false, true} {
				for _, dir := range []Direction{ClientToServer, ServerToClient} {
					h := Header{Framing: f, Type: 0x15, Seq: 3, Compressed: c}
					if f == Legacy {
						h.Tick = 77
					}
					b := AppendFrame(nil, h, dir, p)
					got, err := ParseFrame(b)
					if err != nil {
						t.Fatalf("%v compressed=%v len=%d: ParseFrame: %v", f, c, len(p), err)
					}
					if !bytes.Equal(got.Payload, p) || got.Dir != dir {
						t.Errorf("%v compressed=%v: payload or direction differs", f, c)
					}
					want := Frame{Header: h, Dir: dir, Payload: got.Payload}
					want.Compressed = c && len(p) >= 100 // these payloads shrink, short ones do not
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%v compressed=%v len=%d: header %+v, want %+v", f, c, len(p), got.Header, want.Header)
					}
					if again := AppendFrame(nil, got.Header, got.Dir, got.Payload); !bytes.Equal(again, b) {
						t.Errorf("%v compressed=%v len=%d: re-encoding differs", f, c, len(p))
					}
					// A message type outside the lobby's is the framing layer's
					// business only: Parse refuses it.
					if _, err := Parse(b); err != ErrUnknownType {
						t.Errorf("Parse of a game frame = %v, want ErrUnknownType", err)
					}
				}
			}
		}
	}
}

func TestFramePayloadAliasesInput(t *testing.T) {
	b := AppendFrame(nil, Header{Type: 0x04}, ClientToServer, []byte{9, 9})
	f, err := ParseFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	if &f.Payload[0] != &b[CompactHeaderLen] {
		t.Error("uncompressed payload was copied")
	}
	if cap(f.Payload) != len(f.Payload) {
		t.Error("payload's capacity reaches into the CRC: an append would overwrite it")
	}
}

func TestAppendFrameGolden(t *testing.T) {
	b := AppendFrame(nil, Header{Type: JoinRoom, Seq: 2}, ClientToServer, []byte{0, 0, 0, 1})
	if h := hex.EncodeToString(b); h != golden[3].hex {
		t.Errorf("AppendFrame(JOIN) = %s, want %s", h, golden[3].hex)
	}
}

func TestAppendFramePanics(t *testing.T) {
	tests := []struct {
		name    string
		h       Header
		dir     Direction
		payload []byte
		want    string
	}{
		{"direction 0", Header{}, 0, nil, "direction"},
		{"direction 3", Header{}, 3, nil, "direction"},
		{"payload too long", Header{}, ClientToServer, make([]byte, MaxPayload+1), "MaxPayload"},
		{"unknown framing", Header{Framing: 9}, ClientToServer, nil, "framing"},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tt.want) {
					t.Errorf("%s: panic %v, want one mentioning %q", tt.name, r, tt.want)
				}
			}()
			AppendFrame(nil, tt.h, tt.dir, tt.payload)
		}()
	}
}

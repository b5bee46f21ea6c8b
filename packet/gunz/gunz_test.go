package gunz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// The seed's request, byte for byte. Its checksum 0x0073 is right.
const hexSeedRequest = "6400 0b00 7300 0500 419c 00"

// The seed's response, byte for byte. It claims checksum 0x021d, but its
// bytes give 0x021f: the example was edited by hand.
const hexSeedResponse = `
	6400 2600 1d02 2000 429c 00 17000000 0f000000
	01000000 00000000 70170000 01 f401 0200 04 01`

// seedServer is what the seed's response describes.
var seedServer = Server{
	Addr: netip.MustParseAddr("0.0.0.0"), Port: 6000, ID: 1,
	MaxPlayers: 500, Players: 2, Type: Quest, Status: Online,
}

// withChecksum returns a copy of b with its checksum field set to sum.
func withChecksum(b []byte, sum uint16) []byte {
	c := bytes.Clone(b)
	binary.LittleEndian.PutUint16(c[4:], sum)
	return c
}

// resealed returns a copy of b with the checksum its bytes call for, so a
// malformed case fails on the field it is about, not on the checksum.
func resealed(b []byte) []byte {
	return withChecksum(b, Checksum(b))
}

func TestRequestGolden(t *testing.T) {
	wire := wiretest.Hex(t, hexSeedRequest)
	if got := Checksum(wire); got != 0x0073 {
		t.Fatalf("Checksum = %#04x, want 0x0073", got)
	}
	r, err := ParseRequest(wire)
	if err != nil || r != (Request{}) {
		t.Fatalf("ParseRequest = %+v, %v", r, err)
	}
	if out := (Request{}).Append(nil); !bytes.Equal(out, wire) {
		t.Fatalf("Append = % x, want % x", out, wire)
	}
	if !IsRequest(wire) {
		t.Fatal("IsRequest(seed request) = false")
	}
	// Logs and callers read the error text: it names package, message and offset.
	if _, err := ParseRequest(wire[:3]); err == nil || err.Error() != "gunz: request: truncated (at offset 3)" {
		t.Fatalf("ParseRequest(3 bytes) = %v", err)
	}
}

func TestSeedResponseChecksum(t *testing.T) {
	wire := wiretest.Hex(t, hexSeedResponse)
	if got := Checksum(wire); got != 0x021f {
		t.Fatalf("Checksum = %#04x, want 0x021f", got)
	}
	if claimed := binary.LittleEndian.Uint16(wire[4:]); claimed != 0x021d {
		t.Fatalf("seed claims %#04x", claimed)
	}
	if _, err := ParseResponse(wire); !errors.Is(err, ErrChecksum) {
		t.Fatalf("ParseResponse(seed) = %v, want checksum mismatch", err)
	}
	// Everything but the checksum is consistent: corrected, it is golden.
	fixed := withChecksum(wire, 0x021f)
	r, err := ParseResponse(fixed)
	if err != nil {
		t.Fatal(err)
	}
	want := Response{Servers: []Server{seedServer}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("parsed %+v, want %+v", r, want)
	}
	out, err := want.Append(nil)
	if err != nil || !bytes.Equal(out, fixed) {
		t.Fatalf("Append = % x, %v\nwant     % x", out, err, fixed)
	}
	if IsRequest(fixed) {
		t.Fatal("IsRequest(response) = true")
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 3, MaxServers} {
		r := benchResponse(n)
		r.Serial = 9
		wire, err := r.Append([]byte{0xaa})
		if err != nil {
			t.Fatal(err)
		}
		wire = wire[1:]
		if len(wire) != responseFixed+n*ServerLen || len(wire) > MaxDatagram {
			t.Fatalf("%d servers: %d bytes", n, len(wire))
		}
		got, err := ParseResponse(wire)
		if err != nil || got.Serial != 9 || len(got.Servers) != n || n > 0 && got.Servers[n-1] != r.Servers[n-1] {
			t.Fatalf("%d servers: %+v, %v", n, got.Servers[:min(3, len(got.Servers))], err)
		}
	}
}

func TestRequestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", wiretest.Hex(t, "6400 0b00 7300 0500 41"), ErrTruncated},
		{"msgId", resealed(wiretest.Hex(t, "6500 0b00 0000 0500 419c 00")), ErrMsgID},
		{"packet size", resealed(wiretest.Hex(t, "6400 0c00 0000 0500 419c 00")), ErrSize},
		{"checksum", wiretest.Hex(t, "6400 0b00 7400 0500 419c 00"), ErrChecksum},
		{"command size", resealed(wiretest.Hex(t, "6400 0b00 0000 0600 419c 00")), ErrSize},
		{"command id", resealed(wiretest.Hex(t, "6400 0b00 0000 0500 429c 00")), ErrCommand},
		{"parameters", resealed(wiretest.Hex(t, "6400 0c00 0000 0600 419c 00 00")), ErrSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseRequest(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestResponseMalformed(t *testing.T) {
	seed := withChecksum(wiretest.Hex(t, hexSeedResponse), 0x021f)
	edit := func(off int, v ...byte) []byte {
		b := bytes.Clone(seed)
		copy(b[off:], v)
		return resealed(b)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"request id", edit(8, 0x41, 0x9c), ErrCommand},
		{"no blob", resealed(wiretest.Hex(t, "6400 0b00 0000 0500 429c 00")), ErrTruncated},
		{"blobBytes", edit(11, 0x18), ErrSize},
		{"oneBlobSize", edit(15, 0x10), ErrBlobSize},
		{"count high", edit(19, 0x02), ErrSize},
		{"count zero", edit(19, 0x00), ErrSize},
		{"count huge", edit(19, 0xff, 0xff, 0xff, 0xff), ErrSize},
		{"type 0", edit(36, 0), ErrServerType},
		{"type 7", edit(36, 7), ErrServerType},
		{"status 2", edit(37, 2), ErrStatus},
		{"packet size", edit(2, 0x25), ErrSize},
		{"checksum", withChecksum(seed, 0x021d), ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseResponse(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	wiretest.EveryPrefixFails(t, wiretest.Hex(t, hexSeedRequest), ParseRequest)
	resp, _ := benchResponse(2).Append(nil)
	wiretest.EveryPrefixFails(t, resp, ParseResponse)
	// Even with the size fields and checksum made to agree with the
	// shorter length, a cut server entry fails. The count stays 2, so the
	// entries never add up.
	for n := responseFixed; n < len(resp); n++ {
		cut := bytes.Clone(resp[:n])
		binary.LittleEndian.PutUint16(cut[2:], uint16(n))
		binary.LittleEndian.PutUint16(cut[6:], uint16(n-HeaderLen))
		binary.LittleEndian.PutUint32(cut[11:], uint32(n-HeaderLen-CommandHeaderLen-4))
		if r, err := ParseResponse(resealed(cut)); err == nil {
			t.Fatalf("resized prefix %d parsed: %+v", n, r)
		}
	}
}

func TestResponseAppendRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Response)
		want   error
	}{
		{"too many", func(r *Response) { r.Servers = make([]Server, MaxServers+1) }, ErrTooMany},
		{"ipv6", func(r *Response) { r.Servers[0].Addr = netip.IPv6Loopback() }, ErrAddr},
		{"zero addr", func(r *Response) { r.Servers[0].Addr = netip.Addr{} }, ErrAddr},
		{"type", func(r *Response) { r.Servers[0].Type = 0 }, ErrServerType},
		{"status", func(r *Response) { r.Servers[0].Status = 2 }, ErrStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := benchResponse(1)
			tc.mutate(&r)
			if out, err := r.Append(nil); !errors.Is(err, tc.want) || len(out) != 0 {
				t.Fatalf("Append = % x, %v; want nothing, %v", out, err, tc.want)
			}
		})
	}
}

func TestServerTypeString(t *testing.T) {
	if Match.String() != "match" || Test.String() != "test" || ServerType(9).String() != "type(9)" {
		t.Fatal(Match, Test, ServerType(9))
	}
}

// fuzzBoth runs check on the input as it is and, since random bytes
// almost never carry a right checksum, once more with the checksum the
// bytes call for, so the fuzzer reaches the fields behind it.
func fuzzBoth(t *testing.T, b []byte, check func(*testing.T, []byte)) {
	check(t, b)
	if len(b) >= HeaderLen {
		check(t, resealed(b))
	}
}

func FuzzRequest(f *testing.F) {
	f.Add(wiretest.Hex(f, hexSeedRequest))
	f.Add(Request{Serial: 7}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBoth(t, b, func(t *testing.T, b []byte) {
			r, err := ParseRequest(b)
			if err != nil {
				return
			}
			if !IsRequest(b) {
				t.Fatalf("IsRequest false for a valid request % x", b)
			}
			if !sockfilter.Keeps([]sockfilter.Shape{RequestShape()}, b) {
				t.Fatalf("the socket filter drops a valid request % x", b)
			}
			if out := r.Append(nil); !bytes.Equal(out, b) {
				t.Fatalf("round trip: % x -> % x", b, out)
			}
		})
	})
}

func FuzzResponse(f *testing.F) {
	f.Add(withChecksum(wiretest.Hex(f, hexSeedResponse), 0x021f))
	for _, n := range []int{0, 2} {
		b, _ := benchResponse(n).Append(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBoth(t, b, func(t *testing.T, b []byte) {
			wiretest.RoundTrip(t, b, ParseResponse, func(r Response) ([]byte, error) { return r.Append(nil) })
		})
	})
}

// benchResponse lists n match servers on loopback.
func benchResponse(n int) Response {
	r := Response{}
	for i := range n {
		r.Servers = append(r.Servers, Server{
			Addr: netip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: uint32(30000 + i), ID: uint8(i),
			MaxPlayers: 16, Players: uint16(i % 16), Type: Match, Status: Status(i % 2),
		})
	}
	return r
}

func BenchmarkRequest(b *testing.B) {
	wire := wiretest.Hex(b, hexSeedRequest)
	b.Run("parse", func(b *testing.B) { wiretest.BenchParse(b, wire, ParseRequest) })
	b.Run("append", func(b *testing.B) { wiretest.BenchAppend(b, RequestLen, Request{}.Append) })
}

func BenchmarkResponse(b *testing.B) {
	for _, n := range []int{1, 100} {
		r := benchResponse(n)
		wire, _ := r.Append(nil)
		b.Run(fmt.Sprint("parse/", n), func(b *testing.B) {
			wiretest.BenchParse(b, wire, ParseResponse)
		})
		b.Run(fmt.Sprint("append/", n), func(b *testing.B) {
			buf := make([]byte, 0, len(wire))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = r.Append(buf[:0])
			}
		})
	}
}

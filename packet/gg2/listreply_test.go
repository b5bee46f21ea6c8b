package gg2

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

const (
	hexListServer1 = "0000002b" + // block length 43: 35 fixed + 8 table
		"00" + // TCP
		"1770 7f000001" + // 127.0.0.1:6000
		"0000 00000000000000000000000000000000" + // no IPv6 endpoint
		"0010 0002 0000 0000" + // 16 slots, 2 players, no bots, no flags
		"0001 04 6e616d65 0001 41" // name = A
	hexListServer2 = "00000023" + // block length 35: no table
		"01" + // UDP
		"0000 00000000" + // no IPv4 endpoint
		"1771 00000000000000000000000000000001" + // [::1]:6001
		"0008 0008 0002 0001" + // 8 slots, 8 players, 2 bots, password
		"0000"
	hexListReply = "00000002" + hexListServer1 + hexListServer2
)

func goldenListReply() ListReply {
	return ListReply{Servers: []ListServer{
		{
			Transport: TCP,
			V4:        netip.MustParseAddrPort("127.0.0.1:6000"),
			V6:        netip.AddrPortFrom(netip.IPv6Unspecified(), 0),
			Slots:     16, Players: 2,
			KeyValues: KeyValues{{"name", []byte("A")}},
		},
		{
			Transport: UDP,
			V4:        netip.AddrPortFrom(netip.IPv4Unspecified(), 0),
			V6:        netip.MustParseAddrPort("[::1]:6001"),
			Slots:     8, Players: 8, Bots: 2, Flags: FlagPassword,
		},
	}}
}

func TestListReplyGolden(t *testing.T) {
	wire := wiretest.Hex(t, hexListReply)
	got, err := ParseListReply(wire)
	if err != nil {
		t.Fatal(err)
	}
	want := goldenListReply()
	if len(got.Servers) != 2 {
		t.Fatalf("%d servers", len(got.Servers))
	}
	for i := range want.Servers {
		g, w := got.Servers[i], want.Servers[i]
		if !g.KeyValues.Equal(w.KeyValues) {
			t.Errorf("server %d table %v, want %v", i, g.KeyValues, w.KeyValues)
		}
		g.KeyValues, w.KeyValues = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("server %d = %+v\nwant %+v", i, g, w)
		}
	}
	out, err := want.Append(nil)
	if err != nil || !bytes.Equal(out, wire) {
		t.Fatalf("Append = % x, %v\nwant     % x", out, err, wire)
	}
	// The zero AddrPort encodes as an all-zero endpoint.
	want.Servers[0].V6 = netip.AddrPort{}
	want.Servers[1].V4 = netip.AddrPort{}
	if out, err := want.Append(nil); err != nil || !bytes.Equal(out, wire) {
		t.Fatalf("zero endpoints: % x, %v", out, err)
	}
}

func TestListReplyEmpty(t *testing.T) {
	out, err := ListReply{}.Append(nil)
	if err != nil || !bytes.Equal(out, []byte{0, 0, 0, 0}) {
		t.Fatalf("% x, %v", out, err)
	}
	l, err := ParseListReply(out)
	if err != nil || len(l.Servers) != 0 {
		t.Fatalf("%+v, %v", l, err)
	}
}

func TestListReplyMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		want error
	}{
		{"no count", "0000", ErrTruncated},
		{"count beyond bytes", "00000003" + hexListServer1 + hexListServer2, ErrTruncated},
		{"huge count", "ffffffff" + hexListServer1, ErrTruncated},
		{"block shorter than fixed", "00000001" + "00000022" + hexListServer2[8:], ErrLength},
		{"block past end", "00000001" + "0000002c" + hexListServer1[8:], ErrTruncated},
		{"table short of block", "00000001" + "00000024" + hexListServer2[8:] + "00", ErrLength},
		{"bytes after blocks", hexListReply + "00", ErrLength},
		{"transport 2", "00000001" + "00000023" + "02" + hexListServer2[10:], ErrTransport},
		{"table past block", "00000001" + "00000023" + hexListServer2[8:len(hexListServer2)-4] + "0001" + "04 6e616d65 0001 41", ErrTruncated},
		{"duplicate key", "00000001" + "0000002d" + hexListServer2[8:len(hexListServer2)-4] + "0002" + "01 61 0001 41 01 61 0001 42", ErrDuplicateKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseListReply(wiretest.Hex(t, tc.hex))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestListReplyTruncated(t *testing.T) {
	wiretest.EveryPrefixFails(t, wiretest.Hex(t, hexListReply), ParseListReply)
}

func TestListReplyAppendRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*ListServer)
		want   error
	}{
		{"transport", func(s *ListServer) { s.Transport = 2 }, ErrTransport},
		{"v6 in v4", func(s *ListServer) { s.V4 = netip.MustParseAddrPort("[::1]:1") }, ErrAddr},
		{"v4 in v6", func(s *ListServer) { s.V6 = netip.MustParseAddrPort("1.2.3.4:1") }, ErrAddr},
		{"empty key", func(s *ListServer) { s.KeyValues = KeyValues{{"", nil}} }, ErrKey},
		{"count", func(s *ListServer) { s.KeyValues = make(KeyValues, 1<<16) }, ErrCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := goldenListReply()
			tc.mutate(&l.Servers[1])
			out, err := l.Append([]byte{1})
			if !errors.Is(err, tc.want) || !bytes.Equal(out, []byte{1}) {
				t.Fatalf("Append = % x, %v; want [01], %v", out, err, tc.want)
			}
		})
	}
}

func FuzzListReply(f *testing.F) {
	f.Add(wiretest.Hex(f, hexListReply))
	f.Add(wiretest.Hex(f, "00000001"+hexListServer2))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.RoundTrip(t, b, ParseListReply, func(l ListReply) ([]byte, error) { return l.Append(nil) })
	})
}

// benchListReply is a reply of n servers, each with three keys.
func benchListReply(n int) ListReply {
	var l ListReply
	for i := range n {
		l.Servers = append(l.Servers, ListServer{
			Transport: UDP,
			V4:        netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(30000+i)),
			Slots:     8, Players: uint16(i % 8),
			KeyValues: KeyValues{{"name", []byte("Room")}, {"game", []byte("Foyer")}, {"map", []byte("arena")}},
		})
	}
	return l
}

func BenchmarkListReply(b *testing.B) {
	for _, n := range []int{1, 100} {
		l := benchListReply(n)
		wire, err := l.Append(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint("append/", n), func(b *testing.B) {
			buf := make([]byte, 0, len(wire))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = l.Append(buf[:0])
			}
		})
		b.Run(fmt.Sprint("parse/", n), func(b *testing.B) {
			wiretest.BenchParse(b, wire, ParseListReply)
		})
	}
}

// WireLen is a block's size as Append writes it.
func TestListServerWireLen(t *testing.T) {
	servers := []ListServer{
		{Transport: TCP, V4: netip.MustParseAddrPort("192.0.2.1:8190")},
		{Transport: TCP, V4: netip.MustParseAddrPort("192.0.2.1:8191"),
			KeyValues: KeyValues{{Key: "name", Value: []byte("Bacon Town 24/7")}, {Key: "map", Value: []byte("ctf_truefort")}}},
	}
	for _, s := range servers {
		one, err := ListReply{Servers: []ListServer{s}}.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.WireLen(), len(one)-4; got != want {
			t.Errorf("WireLen %d, Append wrote %d", got, want)
		}
	}
}

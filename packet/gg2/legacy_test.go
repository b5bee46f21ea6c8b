package gg2

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"testing"

	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// Golden legacy messages, written field by field from the layout.
const (
	hexLegacyMagic = "04 08 0f 10 17 2a"
	// info "[ctf_truefort] Bacon [5/10]", 27 bytes
	hexLegacyInfo = "5b 6374665f74727565666f7274 5d 20 4261636f6e 20 5b 35 2f 3130 5d"
	// version 1, port 27015, the info
	hexLegacyRegShort = hexLegacyMagic + "01" + "8769" + "1b" + hexLegacyInfo
	// version 128: the protocol id itself, here LegacyBaseUUID + 2
	hexLegacyBase2   = "dea41970 4cea a588 df40 62faef6f173a"
	hexLegacyRegLong = hexLegacyMagic + "80" + hexLegacyBase2 + "8769" + "1b" + hexLegacyInfo
	// two servers: 192.0.2.1:27015 "A [1/8]", 198.51.100.7:8190 "!private!B [0+2/6]"
	hexLegacyReply = "02" +
		"07 41205b312f385d" + "c0000201" + "8769" +
		"12 2170726976617465214220 5b302b322f365d" + "c6336407" + "fe1f"
)

func TestLegacyVersionArithmetic(t *testing.T) {
	for _, tc := range []struct {
		v    uint8
		want string
	}{
		{0, "dea41970-4cea-a588-df40-62faef6f1738"},
		{1, "dea41970-4cea-a588-df40-62faef6f1739"},
		{0xc8, "dea41970-4cea-a588-df40-62faef6f1800"}, // the carry into the next byte
		{0xff, "dea41970-4cea-a588-df40-62faef6f1837"},
	} {
		v := ShortLegacyVersion(tc.v)
		if v.ID.String() != tc.want || v.Long || v.Len() != 1 {
			t.Errorf("version %d = %v (long %v, len %d), want %s", tc.v, v.ID, v.Long, v.Len(), tc.want)
		}
		if got := LegacyVersionOf(v.ID); got != v {
			t.Errorf("LegacyVersionOf(%v) = %+v", v.ID, got)
		}
	}
	// 128 has no one-byte form: it announces the long form.
	if v := ShortLegacyVersion(128); !v.Long || v.Len() != 17 || v.ID.String() != "dea41970-4cea-a588-df40-62faef6f17b8" {
		t.Errorf("version 128 = %+v", v)
	}
	// Ids below the base, or 256 and more above it, have no one-byte form.
	for _, s := range []string{"dea41970-4cea-a588-df40-62faef6f1737", "dea41970-4cea-a588-df40-62faef6f1838",
		"dea41970-4cea-a588-df41-62faef6f1739", "00000000-0000-0000-0000-000000000001"} {
		if v := LegacyVersionOf(MustParseUUID(s)); !v.Long {
			t.Errorf("%s has a short form", s)
		}
	}
}

func TestLegacyRegistrationGolden(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		version   LegacyVersion
	}{
		{"short", hexLegacyRegShort, ShortLegacyVersion(1)},
		{"long", hexLegacyRegLong, LegacyVersion{ID: MustParseUUID("dea41970-4cea-a588-df40-62faef6f173a"), Long: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := wiretest.Hex(t, tc.hex)
			got, err := ParseLegacyRegistration(wire)
			if err != nil {
				t.Fatal(err)
			}
			want := LegacyRegistration{Version: tc.version, Port: 27015, Info: []byte("[ctf_truefort] Bacon [5/10]")}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("parsed %+v\nwant   %+v", got, want)
			}
			out, err := want.Append([]byte{0xee})
			if err != nil || !bytes.Equal(out[1:], wire) || out[0] != 0xee {
				t.Fatalf("append = % x, %v\nwant      % x", out, err, wire)
			}
			wiretest.EveryPrefixFails(t, wire, ParseLegacyRegistration)
			if _, err := ParseLegacyRegistration(append(wire, 0)); !errors.Is(err, ErrLength) {
				t.Errorf("a byte after the info: %v", err)
			}
		})
	}
}

func TestLegacyRegistrationMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		want      error
	}{
		{"empty", "", ErrTruncated},
		{"wrong magic", "04 08 0f 10 17 2b 01 8769 00", ErrMessageType},
		{"new-style registration", hexRegCounted, ErrMessageType},
		{"port 0", hexLegacyMagic + "01 0000 00", ErrPort},
		{"long version cut", hexLegacyMagic + "80 dea41970", ErrTruncated},
		{"info longer than said", hexLegacyMagic + "01 8769 01 4142", ErrLength},
		{"info shorter than said", hexLegacyMagic + "01 8769 03 4142", ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLegacyRegistration(wiretest.Hex(t, tc.hex))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	r := LegacyRegistration{Version: ShortLegacyVersion(1), Port: 1, Info: make([]byte, 256)}
	if _, err := r.Append(nil); !errors.Is(err, ErrValue) {
		t.Errorf("256-byte info: %v", err)
	}
	r = LegacyRegistration{Version: ShortLegacyVersion(1)}
	if _, err := r.Append(nil); !errors.Is(err, ErrPort) {
		t.Errorf("port 0: %v", err)
	}
}

func TestLegacyQuery(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want LegacyVersion
	}{
		{"01", ShortLegacyVersion(1)},
		{"00", ShortLegacyVersion(0)},
		{"80" + hexLegacyBase2, LegacyVersion{ID: ShortLegacyVersion(2).ID, Long: true}},
	} {
		wire := wiretest.Hex(t, tc.hex)
		got, err := ParseLegacyQuery(wire)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v", tc.hex, got, err)
		}
		if out := got.Append(nil); !bytes.Equal(out, wire) {
			t.Errorf("%s: append % x", tc.hex, out)
		}
		if n := LegacyVersionLen(wire[0]); n != len(wire) {
			t.Errorf("%s: LegacyVersionLen %d", tc.hex, n)
		}
		wiretest.EveryPrefixFails(t, wire, ParseLegacyQuery)
		if _, err := ParseLegacyQuery(append(wire, 1)); !errors.Is(err, ErrLength) {
			t.Errorf("%s with a byte more: %v", tc.hex, err)
		}
	}
}

var goldenLegacyReply = LegacyReply{Servers: []LegacyServer{
	{Info: []byte("A [1/8]"), Addr: netip.MustParseAddrPort("192.0.2.1:27015")},
	{Info: []byte("!private!B [0+2/6]"), Addr: netip.MustParseAddrPort("198.51.100.7:8190")},
}}

func TestLegacyReplyGolden(t *testing.T) {
	wire := wiretest.Hex(t, hexLegacyReply)
	got, err := ParseLegacyReply(wire)
	if err != nil || !reflect.DeepEqual(got, goldenLegacyReply) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	out, err := goldenLegacyReply.Append(nil)
	if err != nil || !bytes.Equal(out, wire) {
		t.Fatalf("append % x, %v", out, err)
	}
	wiretest.EveryPrefixFails(t, wire, ParseLegacyReply)
	if _, err := ParseLegacyReply(append(wire, 0)); !errors.Is(err, ErrLength) {
		t.Errorf("a byte after the last server: %v", err)
	}
	if l, err := ParseLegacyReply([]byte{0}); err != nil || len(l.Servers) != 0 {
		t.Errorf("empty reply: %+v, %v", l, err)
	}
	// A count the bytes cannot hold reserves nothing.
	if _, err := ParseLegacyReply([]byte{0xff, 0, 0}); !errors.Is(err, ErrTruncated) {
		t.Errorf("count 255 in 3 bytes: %v", err)
	}
}

func TestLegacyReplyAppendRefuses(t *testing.T) {
	v4 := netip.MustParseAddrPort("192.0.2.1:1")
	for _, tc := range []struct {
		name string
		l    LegacyReply
		want error
	}{
		{"256 servers", LegacyReply{Servers: make([]LegacyServer, 256)}, ErrCount},
		{"long info", LegacyReply{Servers: []LegacyServer{{Info: make([]byte, 256), Addr: v4}}}, ErrValue},
		{"IPv6", LegacyReply{Servers: []LegacyServer{{Addr: netip.MustParseAddrPort("[2001:db8::1]:1")}}}, ErrAddr},
		{"no address", LegacyReply{Servers: []LegacyServer{{}}}, ErrAddr},
	} {
		out, err := tc.l.Append([]byte{1})
		if !errors.Is(err, tc.want) || !bytes.Equal(out, []byte{1}) {
			t.Errorf("%s: % x, %v", tc.name, out, err)
		}
	}
}

func TestParseLegacyInfo(t *testing.T) {
	type info struct {
		private bool
		mapName string // "-" for none
		name    string
		counts  string // "-" for none
		mod     string // "-" for none
		rebuilt string // Append of the reading; "" for the input itself
	}
	for _, tc := range []struct {
		in   string
		want info
	}{
		{"[ctf_truefort] Bacon [5/10]", info{mapName: "ctf_truefort", name: "Bacon", counts: "5/10", mod: "-"}},
		{"!private![arena] My server [0/8] - OHU", info{private: true, mapName: "arena", name: "My server", counts: "0/8", mod: "OHU"}},
		{"Just a name", info{mapName: "-", name: "Just a name", counts: "-", mod: "-"}},
		{"", info{mapName: "-", counts: "-", mod: "-"}},
		{"  padded  ", info{mapName: "-", name: "padded", counts: "-", mod: "-", rebuilt: "padded"}},
		{"A - B - C", info{mapName: "-", name: "A", counts: "-", mod: "B - C"}},
		{"[] x", info{mapName: "", name: "x", counts: "-", mod: "-"}},
		{"[open x", info{mapName: "-", name: "[open x", counts: "-", mod: "-"}},
		{"n [1/2] extra", info{mapName: "-", name: "n [1/2] extra", counts: "-", mod: "-"}},
		{"n[1/2]", info{mapName: "-", name: "n", counts: "1/2", mod: "-", rebuilt: "n [1/2]"}},
		{"n [1/2] - ", info{mapName: "-", name: "n", counts: "1/2", mod: ""}},
		{"n\t- m", info{mapName: "-", name: "n\t- m", counts: "-", mod: "-"}},
		{"n \t - m", info{mapName: "-", name: "n", counts: "-", mod: "m", rebuilt: "n - m"}},
		{"n [99999/70000]", info{mapName: "-", name: "n", counts: "65535/65535", mod: "-", rebuilt: "n [65535/65535]"}},
		{"x!private!", info{mapName: "-", name: "x!private!", counts: "-", mod: "-"}},
	} {
		got := ParseLegacyInfo([]byte(tc.in))
		opt := func(has bool, v []byte) string {
			if !has {
				return "-"
			}
			return string(v)
		}
		counts := "-"
		if got.HasCounts {
			counts = fmt.Sprintf("%d/%d", got.Players, got.Slots)
		}
		g := info{private: got.Private, mapName: opt(got.HasMap, got.Map), name: string(got.Name), counts: counts, mod: opt(got.HasMod, got.Mod)}
		g.rebuilt = string(got.Append(nil))
		if g.rebuilt == tc.in {
			g.rebuilt = ""
		}
		if g != tc.want {
			t.Errorf("%q read as %+v, want %+v", tc.in, g, tc.want)
		}
	}
}

func TestLegacyInfoAppend(t *testing.T) {
	in := LegacyInfo{Private: true, HasMap: true, Map: []byte("m"), Name: []byte("n"), HasCounts: true, Players: 3, Bots: 2, Slots: 8}
	if got := string(in.Append([]byte("x"))); got != "x!private![m] n [3+2/8]" {
		t.Errorf("got %q", got)
	}
	// Cut to 255 bytes, never inside a UTF-8 character.
	long := LegacyInfo{Name: bytes.Repeat([]byte("é"), 200)} // 400 bytes
	if out := long.Append(nil); len(out) != 254 || !bytes.Equal(out, bytes.Repeat([]byte("é"), 127)) {
		t.Errorf("cut to %d bytes", len(out))
	}
	raw := LegacyInfo{Name: bytes.Repeat([]byte{0xe9}, 300)} // not UTF-8: cut at 255
	if out := raw.Append(nil); len(out) != 255 {
		t.Errorf("cut raw bytes to %d", len(out))
	}
}

func FuzzLegacyRegistration(f *testing.F) {
	f.Add(wiretest.Hex(f, hexLegacyRegShort))
	f.Add(wiretest.Hex(f, hexLegacyRegLong))
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.RoundTrip(t, b, ParseLegacyRegistration, func(r LegacyRegistration) ([]byte, error) { return r.Append(nil) })
		if _, err := ParseLegacyRegistration(b); err == nil && !sockfilter.Keeps(LegacyShapes(), b) {
			t.Fatalf("the socket filter drops a valid legacy registration % x", b)
		}
	})
}

func FuzzLegacyQuery(f *testing.F) {
	f.Add([]byte{1})
	f.Add(wiretest.Hex(f, "80"+hexLegacyBase2))
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.RoundTrip(t, b, ParseLegacyQuery, func(v LegacyVersion) ([]byte, error) { return v.Append(nil), nil })
	})
}

func FuzzLegacyReply(f *testing.F) {
	f.Add(wiretest.Hex(f, hexLegacyReply))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.RoundTrip(t, b, ParseLegacyReply, func(l LegacyReply) ([]byte, error) { return l.Append(nil) })
	})
}

// legacyInfoPattern is the reference lobby's pattern for info strings,
// with Python's \s for bytes spelled out (Go's \s lacks \v). Go's regexp
// picks the submatches a backtracking engine would, so it reads a string
// the way the reference lobby does.
var legacyInfoPattern = regexp.MustCompile(`(?s)\A(!private!)?(?:\[([^\]]*)\])?[\t\n\v\f\r ]*(.*?)[\t\n\v\f\r ]*(?:\[(\d+)/(\d+)\])?(?: - (.*))?\z`)

// FuzzLegacyInfo checks ParseLegacyInfo against the reference pattern, and
// that every reading rebuilds to at most 255 bytes.
func FuzzLegacyInfo(f *testing.F) {
	for _, s := range []string{"[ctf_truefort] Bacon [5/10]", "!private![a] b [1/2] - OHU", "A - B - C", " [x] y", "n\t- m"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := ParseLegacyInfo(b)
		m := legacyInfoPattern.FindSubmatchIndex(b)
		if m == nil {
			t.Fatalf("the pattern does not match %q", b)
		}
		group := func(i int) ([]byte, bool) {
			if m[2*i] < 0 {
				return nil, false
			}
			return b[m[2*i]:m[2*i+1]], true
		}
		_, private := group(1)
		mapName, hasMap := group(2)
		name, _ := group(3)
		players, hasCounts := group(4)
		slots, _ := group(5)
		mod, hasMod := group(6)
		number := func(d []byte) uint16 { v, _ := digits(d, 0); return v }
		if in.Private != private || in.HasMap != hasMap || !bytes.Equal(in.Map, mapName) || !bytes.Equal(in.Name, name) ||
			in.HasCounts != hasCounts || hasCounts && (in.Players != number(players) || in.Slots != number(slots)) ||
			in.HasMod != hasMod || !bytes.Equal(in.Mod, mod) {
			t.Fatalf("%q read as %+v; the pattern reads %v", b, in, m)
		}
		if out := in.Append(nil); len(out) > MaxLegacyInfo {
			t.Fatalf("rebuilt to %d bytes", len(out))
		}
	})
}

func BenchmarkLegacy(b *testing.B) {
	reg := wiretest.Hex(b, hexLegacyRegShort)
	b.Run("parse registration", func(b *testing.B) { wiretest.BenchParse(b, reg, ParseLegacyRegistration) })
	text := []byte("!private![ctf_truefort] Bacon's 24/7 server [5/10] - OHU")
	info := ParseLegacyInfo(text)
	b.Run("parse info", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			info = ParseLegacyInfo(text)
		}
	})
	b.Run("append info", func(b *testing.B) { wiretest.BenchAppend(b, MaxLegacyInfo, info.Append) })
	addr := netip.MustParseAddrPort("192.0.2.1:27015")
	b.Run("append reply 255", func(b *testing.B) {
		wiretest.BenchAppend(b, 1+MaxLegacyServers*(legacyEntryFixed+64), func(buf []byte) []byte {
			buf = append(buf, MaxLegacyServers)
			for range MaxLegacyServers {
				buf, _ = AppendLegacyServer(buf, 0, []byte("[ctf_truefort] Bacon [5/10]"), addr)
			}
			return buf
		})
	})
}

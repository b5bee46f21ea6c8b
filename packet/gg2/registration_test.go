package gg2

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/foyerlobby/foyer/internal/sockfilter"
	"github.com/foyerlobby/foyer/packet/internal/wiretest"
)

// Golden registrations, written field by field from the layout.
const (
	hexRegHead = hexRegisterUUID + hexServerID + hexGG2Lobby +
		"00" + // transport TCP
		"1770" + // port 6000
		"000a" + // 10 slots
		"0003" + // 3 players
		"0001" + // 1 bot
		"0001" // flags: password
	hexRegTable = "04 6e616d65 0005 4261636f6e" + // name = Bacon
		"03 6d6170 0004 63746631" // map = ctf1
	hexRegCounted = hexRegHead + "0002" + hexRegTable
	hexRegLegacy  = hexRegHead + hexRegTable
)

func goldenRegistration(f Form) Registration {
	return Registration{
		Form:      f,
		ServerID:  testServerID,
		LobbyID:   GG2LobbyUUID,
		Transport: TCP,
		Port:      6000,
		Slots:     10,
		Players:   3,
		Bots:      1,
		Flags:     FlagPassword,
		KeyValues: KeyValues{{"name", []byte("Bacon")}, {"map", []byte("ctf1")}},
	}
}

func TestRegistrationGolden(t *testing.T) {
	for _, tc := range []struct {
		form Form
		hex  string
	}{{Counted, hexRegCounted}, {Legacy, hexRegLegacy}} {
		t.Run(tc.form.String(), func(t *testing.T) {
			wire := wiretest.Hex(t, tc.hex)
			got, err := ParseRegistration(wire)
			if err != nil {
				t.Fatal(err)
			}
			want := goldenRegistration(tc.form)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("parsed %+v\nwant   %+v", got, want)
			}
			if !got.Password() || got.KeyValues.Name() != "Bacon" {
				t.Errorf("password %v, name %q", got.Password(), got.KeyValues.Name())
			}
			out, err := want.Append([]byte{0xee})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out[1:], wire) || out[0] != 0xee {
				t.Fatalf("Append = % x\nwant     % x", out[1:], wire)
			}
			if want.Len() != len(wire) {
				t.Errorf("Len() = %d, want %d", want.Len(), len(wire))
			}
		})
	}
}

// A legacy datagram whose bytes 59-60 happen to read as a count that does
// not consume it exactly must still parse as legacy.
func TestRegistrationLegacyFallback(t *testing.T) {
	// Legacy table: "x-a" = "" then name. As a counted form, 03 78 is a
	// count of 888 entries from offset 61, which runs out of bytes.
	wire := wiretest.Hex(t, hexRegHead+"03 782d61 0000"+"04 6e616d65 0001 4e")
	r, err := ParseRegistration(wire)
	if err != nil {
		t.Fatal(err)
	}
	if r.Form != Legacy || len(r.KeyValues) != 2 || r.KeyValues.Name() != "N" {
		t.Fatalf("got %+v", r)
	}
}

func TestRegistrationMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		want error
	}{
		{"short", hexRegisterUUID + hexServerID, ErrTruncated},
		{"wrong uuid", hexUnregisterUUID + hexServerID + hexGG2Lobby + "00 1770 000a 0003 0001 0001" + "0000", ErrMessageType},
		{"transport 2", hexRegisterUUID + hexServerID + hexGG2Lobby + "02 1770 000a 0003 0001 0001" + "0002" + hexRegTable, ErrTransport},
		{"port 0", hexRegisterUUID + hexServerID + hexGG2Lobby + "01 0000 000a 0003 0001 0001" + "0002" + hexRegTable, ErrPort},
		{"no name counted", hexRegHead + "0001" + "03 6d6170 0004 63746631", ErrNoName},
		{"no name empty", hexRegHead + "0000", ErrNoName},
		{"no table", hexRegHead, ErrNoName},
		{"duplicate key", hexRegHead + "04 6e616d65 0001 41" + "04 6e616d65 0001 42", ErrDuplicateKey},
		{"empty key", hexRegHead + "00 0001 41", ErrKey},
		{"value past end", hexRegHead + "04 6e616d65 0009 41", ErrTruncated},
		{"key past end", hexRegHead + "09 6e616d65", ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRegistration(wiretest.Hex(t, tc.hex))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Msg != "registration" {
				t.Fatalf("err %v carries no registration context", err)
			}
		})
	}
}

func TestRegistrationAppendRefuses(t *testing.T) {
	long := make([]byte, 256)
	for _, tc := range []struct {
		name   string
		mutate func(*Registration)
		want   error
	}{
		{"transport", func(r *Registration) { r.Transport = 7 }, ErrTransport},
		{"port", func(r *Registration) { r.Port = 0 }, ErrPort},
		{"no name", func(r *Registration) { r.KeyValues = r.KeyValues[1:] }, ErrNoName},
		{"empty key", func(r *Registration) { r.KeyValues = append(r.KeyValues, KeyValue{"", nil}) }, ErrKey},
		{"long key", func(r *Registration) { r.KeyValues = append(r.KeyValues, KeyValue{string(long), nil}) }, ErrKey},
		{"long value", func(r *Registration) { r.KeyValues = append(r.KeyValues, KeyValue{"x-big", make([]byte, 1<<16)}) }, ErrValue},
		{"duplicate", func(r *Registration) { r.KeyValues = append(r.KeyValues, KeyValue{"map", nil}) }, ErrDuplicateKey},
		{"count", func(r *Registration) { r.KeyValues = make(KeyValues, 1<<16) }, ErrCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := goldenRegistration(Counted)
			tc.mutate(&r)
			out, err := r.Append(nil)
			if !errors.Is(err, tc.want) || len(out) != 0 {
				t.Fatalf("Append = %x, %v; want nothing, %v", out, err, tc.want)
			}
		})
	}
}

// Every prefix of the counted form fails. A legacy table runs to the end
// of the datagram, so a legacy prefix that ends on an entry boundary after
// "name" is itself a valid registration of the leading entries; every other
// prefix fails.
func TestRegistrationTruncated(t *testing.T) {
	wiretest.EveryPrefixFails(t, wiretest.Hex(t, hexRegCounted), ParseRegistration)
	legacy := wiretest.Hex(t, hexRegLegacy)
	nameEnd := regFixedLen + 1 + 4 + 2 + 5
	for n := range len(legacy) {
		r, err := ParseRegistration(legacy[:n])
		if n == nameEnd {
			if err != nil || r.Form != Legacy || len(r.KeyValues) != 1 {
				t.Fatalf("legacy prefix at entry boundary: %+v, %v", r, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("legacy prefix %d parsed: %+v", n, r)
		}
	}
}

// A table of thousands of distinct keys costs linear time and parses.
func TestRegistrationManyKeys(t *testing.T) {
	r := goldenRegistration(Counted)
	for i := range 5000 {
		r.KeyValues = append(r.KeyValues, KeyValue{Key: "x-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)), Value: nil})
	}
	wire, err := r.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRegistration(wire)
	if err != nil || len(got.KeyValues) != len(r.KeyValues) {
		t.Fatalf("%d entries, %v", len(got.KeyValues), err)
	}
}

func FuzzRegistration(f *testing.F) {
	f.Add(wiretest.Hex(f, hexRegCounted))
	f.Add(wiretest.Hex(f, hexRegLegacy))
	// The encoding is canonical for a given form.
	f.Fuzz(func(t *testing.T, b []byte) {
		wiretest.RoundTrip(t, b, ParseRegistration, func(r Registration) ([]byte, error) { return r.Append(nil) })
		if _, err := ParseRegistration(b); err == nil && !sockfilter.Keeps(DatagramShapes(), b) {
			t.Fatalf("the socket filter drops a valid registration % x", b)
		}
	})
}

func BenchmarkParseRegistration(b *testing.B) {
	for _, f := range []Form{Counted, Legacy} {
		wire, _ := func() ([]byte, error) { r := goldenRegistration(f); return r.Append(nil) }()
		b.Run(f.String(), func(b *testing.B) {
			wiretest.BenchParse(b, wire, ParseRegistration)
		})
	}
}

func BenchmarkAppendRegistration(b *testing.B) {
	r := goldenRegistration(Counted)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = r.Append(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

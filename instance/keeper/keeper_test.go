package keeper

import (
	"net/netip"
	"slices"
	"testing"
)

func TestArgsRoundTrip(t *testing.T) {
	for _, c := range []Config{
		{Probe: ProbeTeeworlds, Command: []string{"/usr/games/DDNet-Server", "sv_port {port}", "--", "-x"}},
		{Probe: ProbeNone, Data: "/var/lib/foyer/data/x", Command: []string{"--data", "/srv"}},
	} {
		got, err := Parse(Args(c))
		if err != nil || got.Probe != c.Probe || got.Data != c.Data || !slices.Equal(got.Command, c.Command) {
			t.Fatalf("Parse(Args(%+v)) = %+v, %v", c, got, err)
		}
	}
	for _, bad := range [][]string{
		nil,
		{"--probe", "teeworlds", "--"},
		{"--probe", "ping", "--", "server"},
		{"--probe", "none", "server"},
		{"--probe", "none", "--", ""},
		{"--probe", "none", "--data", "relative", "--", "server"},
		{"--probe", "none", "--data", "/d", "server"},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestExpandArgs(t *testing.T) {
	got := expandArgs([]string{"srv", "sv_port {port}; sv_name Room {room_id}", "{max_players}/{bind}"}, 42, 30001, 6, "::1")
	if want := []string{"srv", "sv_port 30001; sv_name Room 42", "6/::1"}; !slices.Equal(got, want) {
		t.Fatalf("expandArgs = %q, want %q", got, want)
	}
}

func TestProbeAddrs(t *testing.T) {
	v4, v6 := netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()
	other := netip.MustParseAddr("127.0.0.9")
	for _, tc := range []struct {
		bind    netip.Addr
		command string
		want    []netip.Addr
	}{
		{netip.Addr{}, "bindaddr {bind}", []netip.Addr{v4, v6}},
		{netip.IPv6Unspecified(), "", []netip.Addr{v4, v6}},
		{other, "bindaddr {bind}", []netip.Addr{other}},
		{other, "bindaddr ::1", []netip.Addr{other, v4, v6}},
		{v6, "", []netip.Addr{v6, v4}},
	} {
		if got := probeAddrs(tc.bind, []string{"server", tc.command}); !slices.Equal(got, tc.want) {
			t.Errorf("bind %v, command %q: probing %v, want %v", tc.bind, tc.command, got, tc.want)
		}
	}
}

func TestOutputKeepsTheLastLines(t *testing.T) {
	o := newOutput()
	if got := o.last(); got != "; it printed nothing" {
		t.Fatalf("empty: %q", got)
	}
	for _, l := range []string{"1", "2", "3", "4", "5", "6", `"7"`} {
		o.add(l)
	}
	if got, want := o.last(), `; its last lines: "3" | "4" | "5" | "6" | "\"7\""`; got != want {
		t.Fatalf("last = %s, want %s", got, want)
	}
}

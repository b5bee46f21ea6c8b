package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/packet/gg2"
)

// The documented file must say exactly what the binary does without it.
func TestRepositoryFileIsTheDefaults(t *testing.T) {
	got, err := Load("../../config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if want := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("config.toml differs from DefaultConfig():\n got %+v\nwant %+v", got, want)
	}
}

func TestParseOverrides(t *testing.T) {
	c, err := Parse("x.toml", `
[lobby]
listen = ["127.0.0.1:7001", "[::1]:7002"]
readers = 3
socket_filter = false
rate = 2.5
reflection_limit = 65536
[supervisor]
ports = "40000-40009"
max_instances = 4
bind = "::"
id_file = "ids"
command = ["/bin/sh", "-x"]
probe = "none"
warm = 2
state_dir = "/var/lib/foyer"
data_dir = "/var/lib/foyer-data"
room_users = ""
reattach_grace = "3s"
reconnect_grace = "45s"
memory_max = "256MiB"
cpu_max = 0.5
pids_max = 64
[room]
countdown = "0s"
[log]
level = "debug"
format = "json"
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:7001"), netip.MustParseAddrPort("[::1]:7002")}
	if !reflect.DeepEqual(c.Lobby.Listen, want) {
		t.Errorf("listen = %v", c.Lobby.Listen)
	}
	if c.Lobby.Readers != 3 || c.Lobby.Filter || c.GG2.Server.Filter || c.Gunz.Locator.Filter || c.Limits.Rate != 2.5 || c.Limits.ReflectionLimit != 65536 || c.Limits.Burst != 40 {
		t.Errorf("lobby = %+v", c.Lobby)
	}
	s := c.Supervisor
	if s.Bind != netip.IPv6Unspecified() || s.IDFile != "ids" || s.StateDir != "/var/lib/foyer" || s.ReattachGrace != 3*time.Second ||
		s.DataDir != "/var/lib/foyer-data" || s.ReconnectGrace != 45*time.Second {
		t.Errorf("bind %v, id_file %q, state_dir %q, reattach_grace %v, reconnect_grace %v, data_dir %q", s.Bind, s.IDFile, s.StateDir, s.ReattachGrace, s.ReconnectGrace, s.DataDir)
	}
	if s.FirstPort != 40000 || s.LastPort != 40009 || s.MaxInstances != 4 || s.Probe != "none" || s.Warm != 2 || len(s.Command) != 2 {
		t.Errorf("supervisor = %+v", s)
	}
	if l := s.Limits; l.MemoryMax != 256<<20 || l.CPUMax != 0.5 || l.PidsMax != 64 {
		t.Errorf("limits = %+v", l)
	}
	if c.Room.Countdown != 0 || s.Room["countdown"] != "0s" || s.Room["min_players"] != "2" || s.Room["match_duration"] != "2m0s" {
		t.Errorf("room = %+v, settings %v", c.Room, s.Room)
	}
	if c.Log.Level != zerolog.DebugLevel || c.Log.Format != "json" {
		t.Errorf("log = %+v", c.Log)
	}
}

// A single port is a pool of one.
func TestDenyList(t *testing.T) {
	c, err := Parse("x.toml", "[lobby]\ndeny = [\"203.0.113.7\", \"198.51.100.9/24\", \"::ffff:192.0.2.1\", \"2001:db8::/32\"]\nunverified_reply_limit = \"64KiB\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("203.0.113.7/32"), netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("2001:db8::/32")}
	if !slices.Equal(c.Limits.Deny, want) || c.Limits.UnverifiedReplyLimit != 64<<10 {
		t.Errorf("deny %v, unverified %d; want %v, 65536", c.Limits.Deny, c.Limits.UnverifiedReplyLimit, want)
	}
}

func TestAdminToken(t *testing.T) {
	const token = "0123456789abcdef-0123456789abcdef-from-file"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("  "+token+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	c, err := Parse("x.toml", "[admin]\nlisten = \"0.0.0.0:9477\"\ntoken_file = \""+file+"\"\nhosts = [\"admin.example.net\"]\nsession = \"1h\"\n")
	if err != nil || c.Admin.Token != token || !slices.Equal(c.Admin.Hosts, []string{"admin.example.net"}) || c.Admin.Session != time.Hour {
		t.Fatalf("token from file: %q, hosts %q, session %v, %v", c.Admin.Token, c.Admin.Hosts, c.Admin.Session, err)
	}
	// A token file others can read, or write, is no secret; nor is a
	// config holding the token that every user can read.
	for _, mode := range []os.FileMode{0o644, 0o660, 0o602} {
		os.Chmod(file, mode)
		_, err := Parse("x.toml", "[admin]\ntoken_file = \""+file+"\"\n")
		want := fmt.Sprintf("x.toml:2: [admin] token_file %q: %s is readable by every user or writable by its group or others (mode %04o): chmod o-rw,g-w %s", file, file, mode, file)
		if err == nil || err.Error() != want {
			t.Errorf("token_file of mode %v: %v\nwant %s", mode, err, want)
		}
	}
	conf := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(conf, []byte("[admin]\n\ntoken = \""+token+"\"\n"), 0o644)
	want := fmt.Sprintf("%s:3: [admin] token %q: %s is readable by every user (mode 0644) and holds the token: chmod o-r %s, or move the token to token_file", conf, token, conf, conf)
	if _, err := Load(conf); err == nil || err.Error() != want {
		t.Errorf("a token in a config every user reads: %v\nwant %s", err, want)
	}
	os.Chmod(conf, 0o640)
	if c, err := Load(conf); err != nil || c.Admin.Token != token {
		t.Errorf("a token in a config of mode 0640: %q, %v", c.Admin.Token, err)
	}
}

func TestSinglePort(t *testing.T) {
	c, err := Parse("x.toml", "[supervisor]\nports = \"40000\"\nmax_instances = 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Supervisor; s.FirstPort != 40000 || s.LastPort != 40000 {
		t.Errorf("ports %d-%d", s.FirstPort, s.LastPort)
	}
}

func TestParseNeighbours(t *testing.T) {
	c, err := Parse("x.toml", `
[gg2]
enabled = true
listen = "[::1]:29945"
lobby = "0AD2E3A4-0000-1111-2222-333344445555"
public_addr = "192.0.2.7"
game = "gg2"
ttl = "2s"
max_servers_per_ip = 3
announce = "localhost:29944"
announce_interval = "200ms"
legacy_listen = ""
protocol_id = "dea41970-4cea-a588-df40-62faef6f1739"
max_kv_bytes = "2KiB"
max_players = 16
max_list_conns_per_ip = 2
max_servers_per_network = 5
udp_transport = true
min_read_rate = "1KiB"
max_list_conns_per_network = 3
max_list_bytes = "64KiB"
[web]
listen = "[::]:29950"
title = "Ann's lobby"
[gunz]
enabled = true
listen = "127.0.0.1:8901"
public_addr = "::ffff:192.0.2.8"
`)
	if err != nil {
		t.Fatal(err)
	}
	g := c.GG2
	lobbyID := gg2.MustParseUUID("0ad2e3a4-0000-1111-2222-333344445555")
	if !g.Enabled || g.Server.Listen != netip.MustParseAddrPort("[::1]:29945") || g.Server.Lobby != lobbyID ||
		g.Server.PublicAddr != netip.MustParseAddr("192.0.2.7") || g.Server.Game != "gg2" ||
		g.Server.TTL != 2*time.Second || g.Server.MaxServersPerIP != 3 || g.Server.MaxServers != 4096 ||
		g.Server.LegacyListen.IsValid() || g.Server.ProtocolID != gg2.ShortLegacyVersion(1).ID ||
		g.Server.MaxKVBytes != 2048 || g.Server.MaxPlayers != 16 || g.Server.MaxListConnsPerIP != 2 ||
		g.Server.MaxServersPerNetwork != 5 || !g.Server.UDPTransport || g.Server.MinReadRate != 1024 ||
		g.Server.MaxListConnsPerNetwork != 3 || g.Server.MaxListBytes != 64<<10 {
		t.Errorf("gg2 server = %+v", g.Server)
	}
	if c.Web.Listen != netip.MustParseAddrPort("[::]:29950") || c.Web.Title != "Ann's lobby" {
		t.Errorf("web = %+v", c.Web)
	}
	// The lobby ID and game are the announcer's too.
	if a := g.Announce; a.Upstream != "localhost:29944" || a.Interval != 200*time.Millisecond || a.Lobby != lobbyID || a.Game != "gg2" {
		t.Errorf("announce = %+v", a)
	}
	if z := c.Gunz; !z.Enabled || z.Locator.Listen != netip.MustParseAddrPort("127.0.0.1:8901") ||
		z.Locator.PublicAddr != netip.MustParseAddr("192.0.2.8") {
		t.Errorf("gunz = %+v", z)
	}
	// Off by default: an operator opens these ports on purpose.
	if d := DefaultConfig(); d.GG2.Enabled || d.Gunz.Enabled || d.GG2.Announce.Upstream != "" || d.Web.Listen.IsValid() {
		t.Errorf("defaults open ports: %+v %+v", d.GG2, d.Gunz)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"256KiB": 256 << 10, "1MiB": 1 << 20, "64kB": 64000, "512B": 512, "4096": 4096, " 2 KiB ": 2048} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "-1B", "1.5MiB", "1 TB", "99999999999999GiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// Every refusal names the file, the key's line and the reason.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"ports reversed", "[lobby]\nrate = 20\n\n# pool\n[supervisor]\nmax_instances = 4\nports = \"9-3\"\n",
			`bad.toml:7: [supervisor] ports "9-3": first port above last`},
		{"port zero", "[supervisor]\nports = \"0-10\"\n", `bad.toml:2: [supervisor] ports "0-10": port 0 outside 1-65535`},
		{"port too big", "[supervisor]\n\nports = \"30000-70000\"\n", `bad.toml:3: [supervisor] ports "30000-70000": port 70000 outside 1-65535`},
		{"ports garbage", "[supervisor]\nports = \"a-b\"\n", `bad.toml:2: [supervisor] ports "a-b": want "FIRST-LAST"`},
		{"ports wrong type", "[supervisor]\nports = 30000\n", `bad.toml:2: [supervisor] ports 30000: want a string`},
		{"listen host name", "[lobby]\nlisten = \"localhost:7777\"\n", `bad.toml:2: [lobby] listen "localhost:7777": "localhost:7777" is not IP:port`},
		{"listen no port", "[lobby]\nlisten = [\"127.0.0.1:1\",\n  \"::1\"]\n", `bad.toml:2: [lobby] listen ["127.0.0.1:1", "::1"]: "::1" is not IP:port`},
		{"listen empty", "[lobby]\nlisten = []\n", `bad.toml:2: [lobby] listen []: want at least one address`},
		{"listen wrong type", "[lobby]\nlisten = 7777\n", `bad.toml:2: [lobby] listen 7777: want a string or an array of strings`},
		{"rate zero", "[lobby]\nrate = 0\n", `bad.toml:2: [lobby] rate 0: must be above 0`},
		{"admin off loopback without token", "[admin]\nlisten = \"[::]:9477\"\n", `bad.toml:2: [admin] listen "[::]:9477": an admin address other than loopback needs token or token_file`},
		{"admin token short", "[admin]\nlisten = \"0.0.0.0:9477\"\ntoken = \"secret\"\n", "bad.toml:3: [admin] token \"secret\": a token of 6 characters is too short (at least 32): `foyer token` makes one"},
		{"admin hosts address", "[admin]\nhosts = [\"127.0.0.2\"]\n", `bad.toml:2: [admin] hosts ["127.0.0.2"]: "127.0.0.2" is an address: the listener answers to its own addresses anyway; list names only`},
		{"admin hosts wildcard", "[admin]\nhosts = [\"*\"]\n", `bad.toml:2: [admin] hosts ["*"]: "*" is not a host name`},
		{"admin session zero", "[admin]\nsession = \"0s\"\n", `bad.toml:2: [admin] session "0s": `},
		{"admin token file missing", "[admin]\ntoken_file = \"/nonexistent/token\"\n", `bad.toml:2: [admin] token_file "/nonexistent/token": open /nonexistent/token: no such file or directory`},
		{"deny garbage", "[lobby]\n\ndeny = [\"10.0.0.0/8\", \"evil.example\"]\n", `bad.toml:3: [lobby] deny ["10.0.0.0/8", "evil.example"]: "evil.example" is neither an address nor a network`},
		{"deny string", "[lobby]\ndeny = \"10.0.0.1\"\n", `bad.toml:2: [lobby] deny "10.0.0.1": want an array of addresses and networks`},
		{"unverified small", "[lobby]\nunverified_reply_limit = 10\n", `bad.toml:2: [lobby] unverified_reply_limit 10: must be between 1024`},
		{"rate negative", "[lobby]\ncreate_rate = -1.5\n", `bad.toml:2: [lobby] create_rate -1.5: must be above 0`},
		{"rate string", "[lobby]\nrate = \"fast\"\n", `bad.toml:2: [lobby] rate "fast": want a number`},
		{"burst zero", "[lobby]\nburst = 0\n", `bad.toml:2: [lobby] burst 0: must be at least 1`},
		{"readers zero", "[lobby]\nreaders = 0\n", `bad.toml:2: [lobby] readers 0: must be at least 1`},
		{"readers neither auto nor a count", "[lobby]\nreaders = \"all\"\n", `bad.toml:2: [lobby] readers "all": want "auto" or an integer`},
		{"socket_filter not a boolean", "[lobby]\nsocket_filter = \"yes\"\n", `bad.toml:2: [lobby] socket_filter "yes": want true or false`},
		{"burst float", "[lobby]\nburst = 1.5\n", `bad.toml:2: [lobby] burst 1.5: want an integer`},
		{"reflection small", "[lobby]\nreflection_limit = \"1B\"\n", `bad.toml:2: [lobby] reflection_limit "1B": must be between 1024`},
		{"reflection garbage", "[lobby]\nreflection_limit = \"lots\"\n", `bad.toml:2: [lobby] reflection_limit "lots": not a size`},
		{"negative duration", "[supervisor]\nstop_grace = \"-5s\"\n", `bad.toml:2: [supervisor] stop_grace "-5s": must be at least 1ms`},
		{"zero duration", "[supervisor]\nspawn_timeout = \"0s\"\n", `bad.toml:2: [supervisor] spawn_timeout "0s": must be at least 1ms`},
		{"duration garbage", "[room]\ncountdown = \"soon\"\n", `bad.toml:2: [room] countdown "soon": not a duration`},
		{"duration number", "[room]\ncountdown = 3\n", `bad.toml:2: [room] countdown 3: want a duration string`},
		{"max_instances zero", "[supervisor]\nmax_instances = 0\n", `bad.toml:2: [supervisor] max_instances 0: must be at least 1`},
		{"seats per address zero", "[supervisor]\nseats_per_address = 0\n", `bad.toml:2: [supervisor] seats_per_address 0: must be at least 1`},
		{"reconnect_grace zero", "[supervisor]\nreconnect_grace = \"0s\"\n", `bad.toml:2: [supervisor] reconnect_grace "0s": must be at least 1ms`},
		{"rooms per network zero", "[supervisor]\nrooms_per_network = 0\n", `bad.toml:2: [supervisor] rooms_per_network 0: must be at least 1`},
		{"max waiting short", "[supervisor]\nmax_waiting = \"10ms\"\n", `bad.toml:2: [supervisor] max_waiting "10ms": must be at least 1s`},
		{"max_players too big", "[supervisor]\nmax_players = 70000\n", `bad.toml:2: [supervisor] max_players 70000: must be at most 65535`},
		{"warm above max", "[supervisor]\nmax_instances = 2\nwarm = 3\n", `bad.toml:3: [supervisor] warm 3: must be at most 2`},
		{"probe without command", "[supervisor]\nprobe = \"teeworlds\"\n", `bad.toml:2: [supervisor] probe "teeworlds": needs a command`},
		{"bind not an IP", "[supervisor]\nbind = \"localhost\"\n", `bad.toml:2: [supervisor] bind "localhost": not an IP address`},
		{"probe unknown", "[supervisor]\ncommand = [\"x\"]\nprobe = \"ping\"\n", `bad.toml:3: [supervisor] probe "ping": want one of ["", "teeworlds", "endpoint", "none"]`},
		{"command not strings", "[supervisor]\ncommand = [\"x\", 1]\n", `bad.toml:2: [supervisor] command ["x", 1]: want strings`},
		{"min_players above max", "[supervisor]\nmax_players = 4\n[room]\nmin_players = 5\n", `bad.toml:4: [room] min_players 5: must be at most 4`},
		{"web title empty", "[web]\ntitle = \"\"\n", `bad.toml:2: [web] title "": must be 1 to 100 bytes`},
		{"web title two lines", "[web]\ntitle = \"a\\nb\"\n", `bad.toml:2: [web] title "a\nb": must be text on one line`},
		{"gg2 enabled string", "[gg2]\nenabled = \"yes\"\n", `bad.toml:2: [gg2] enabled "yes": want true or false`},
		{"gg2 listen host name", "[gg2]\nlisten = \"localhost:29944\"\n", `bad.toml:2: [gg2] listen "localhost:29944": not IP:port`},
		{"gg2 listen no port", "[gg2]\n\nlisten = \"0.0.0.0\"\n", `bad.toml:3: [gg2] listen "0.0.0.0": not IP:port`},
		{"gg2 lobby short", "[gg2]\nlobby = \"1ccf16b1-436d-856f-504d\"\n", `bad.toml:2: [gg2] lobby "1ccf16b1-436d-856f-504d": not a UUID`},
		{"gg2 lobby not hex", "[gg2]\nlobby = \"1ccf16b1-436d-856f-504d-cc1af306aaaz\"\n", `bad.toml:2: [gg2] lobby "1ccf16b1-436d-856f-504d-cc1af306aaaz": not a UUID`},
		{"gg2 public_addr", "[gg2]\npublic_addr = \"example.org\"\n", `bad.toml:2: [gg2] public_addr "example.org": not an IP address`},
		{"gg2 game empty", "[gg2]\ngame = \"\"\n", `bad.toml:2: [gg2] game "": must not be empty`},
		{"gg2 ttl garbage", "[gg2]\nttl = \"long\"\n", `bad.toml:2: [gg2] ttl "long": not a duration`},
		{"gg2 ttl short", "[gg2]\nttl = \"10ms\"\n", `bad.toml:2: [gg2] ttl "10ms": must be at least 1s`},
		{"gg2 per-ip above max", "[gg2]\nmax_servers = 10\nmax_servers_per_ip = 11\n", `bad.toml:3: [gg2] max_servers_per_ip 11: must be at most 10`},
		{"gg2 announce no port", "[gg2]\nannounce = \"lobby.example.org\"\n", `bad.toml:2: [gg2] announce "lobby.example.org": want "host:port"`},
		{"gg2 announce no host", "[gg2]\nannounce = \":29944\"\n", `bad.toml:2: [gg2] announce ":29944": want "host:port"`},
		{"gg2 announce port", "[gg2]\nannounce = \"127.0.0.1:70000\"\n", `bad.toml:2: [gg2] announce "127.0.0.1:70000": port 70000 outside 1-65535`},
		{"gg2 announce interval", "[gg2]\nannounce_interval = \"-1s\"\n", `bad.toml:2: [gg2] announce_interval "-1s": must be at least 100ms`},
		{"gg2 legacy_listen", "[gg2]\nlegacy_listen = \"29942\"\n", `bad.toml:2: [gg2] legacy_listen "29942": not IP:port`},
		{"gg2 protocol_id", "[gg2]\nprotocol_id = \"1\"\n", `bad.toml:2: [gg2] protocol_id "1": not a UUID`},
		{"gg2 max_kv_bytes small", "[gg2]\nmax_kv_bytes = 100\n", `bad.toml:2: [gg2] max_kv_bytes 100: must be between 262 and`},
		{"gg2 max_kv_bytes large", "[gg2]\nmax_kv_bytes = \"1MiB\"\n", `bad.toml:2: [gg2] max_kv_bytes "1MiB": must be at most 65536 bytes`},
		{"gg2 max_players", "[gg2]\nmax_players = 0\n", `bad.toml:2: [gg2] max_players 0: must be at least 1`},
		{"gg2 per-ip conns above max", "[gg2]\nmax_list_conns = 4\nmax_list_conns_per_ip = 5\n", `bad.toml:3: [gg2] max_list_conns_per_ip 5: must be at most 4`},
		{"gg2 per-network conns above max", "[gg2]\nmax_list_conns = 4\nmax_list_conns_per_network = 5\n", `bad.toml:3: [gg2] max_list_conns_per_network 5: must be at most 4`},
		{"gg2 per-network servers above max", "[gg2]\nmax_servers = 10\nmax_servers_per_network = 11\n", `bad.toml:3: [gg2] max_servers_per_network 11: must be at most 10`},
		{"gg2 udp_transport string", "[gg2]\nudp_transport = \"no\"\n", `bad.toml:2: [gg2] udp_transport "no": want true or false`},
		{"gg2 min_read_rate small", "[gg2]\nmin_read_rate = 10\n", `bad.toml:2: [gg2] min_read_rate 10: must be between 256 and`},
		{"gg2 max_list_bytes small", "[gg2]\nmax_list_bytes = \"1KiB\"\n", `bad.toml:2: [gg2] max_list_bytes "1KiB": must be between 16384 and`},
		{"web listen", "[web]\nlisten = \"localhost:29950\"\n", `bad.toml:2: [web] listen "localhost:29950": not IP:port`},
		{"gg2 unknown key", "[gg2]\nenabled = true\nrate = 5\n", `bad.toml:3: [gg2] rate: unknown key`},
		{"gunz listen IPv6", "[gunz]\nlisten = \"[::]:8900\"\n", `bad.toml:2: [gunz] listen "[::]:8900": must be an IPv4 address`},
		{"gunz listen garbage", "[gunz]\nlisten = \"8900\"\n", `bad.toml:2: [gunz] listen "8900": not IPv4:port`},
		{"gunz public_addr IPv6", "[gunz]\npublic_addr = \"2001:db8::1\"\n", `bad.toml:2: [gunz] public_addr "2001:db8::1": must be an IPv4 address`},
		{"gunz enabled number", "[gunz]\nenabled = 1\n", `bad.toml:2: [gunz] enabled 1: want true or false`},
		{"level unknown", "[log]\nlevel = \"loud\"\n", `bad.toml:2: [log] level "loud": want one of ["trace", "debug", "info", "warn", "error"]`},
		{"format unknown", "[log]\nformat = \"xml\"\n", `bad.toml:2: [log] format "xml": want one of ["console", "json"]`},
		{"unknown key", "[lobby]\nrate = 20\nratee = 20\n", `bad.toml:3: [lobby] ratee: unknown key (did you mean rate?)`},
		{"misspelt key", "[supervisor]\nmax_player = 3\n", `bad.toml:2: [supervisor] max_player: unknown key (did you mean max_players?)`},
		{"key of another section", "[room]\nempty_timeout = \"5s\"\n", `bad.toml:2: [room] empty_timeout: unknown key (did you mean [supervisor] empty_timeout?)`},
		{"nothing near", "[log]\nxyzzy = 1\n", "bad.toml:2: [log] xyzzy: unknown key"},
		{"unknown dotted key", "[lobby]\n\nextra.deep = 1\n", `bad.toml:3: [lobby] extra.deep: unknown key`},
		{"unknown section", "[lobby]\n\n[lobyy]\nrate = 1\n", `bad.toml:3: unknown section [lobyy] (did you mean [lobby]?)`},
		{"top-level key of a section", "max_instances = 4\n", `bad.toml:1: max_instances: unknown key (did you mean max_instances in [supervisor]?)`},
		{"unknown top-level key", "debug = true\n", `bad.toml:1: debug: unknown key (keys belong in a section`},
		{"section not a table", "lobby = 3\n", `bad.toml:1: lobby must be a table [lobby]`},
		{"syntax", "[lobby]\nrate = \n", `bad.toml:2: `},
		{"duplicate key", "[lobby]\nrate = 1\nrate = 2\n", `bad.toml:3: `},
		// The lexer has counted the line when it finds the newline that
		// leaves the table name open; the error is on the line before.
		{"syntax at a newline", "[lobby\nrate = 1\n", `bad.toml:1: expected '.' or ']' to end table name`},
		{"section an array of tables", "[[log]]\nlevel = \"info\"\n", `bad.toml:1: log must be a table [log]`},
		{"value a table", "[log]\nlevel = {a = 1}\n", `bad.toml:2: [log] level {...}: want one of`},
		{"unknown quoted key", "[log]\n\"le.vel\" = 1\n", `bad.toml:2: [log] "le.vel": unknown key`},
		{"unknown nested table", "[log]\n\n[log.file]\npath = \"x\"\n", `bad.toml:3: [log] file: unknown key`},
		{"command a string", "[supervisor]\ncommand = \"game -p {port}\"\n", `bad.toml:2: [supervisor] command "game -p {port}": want an array of strings`},
		{"command no program", "[supervisor]\ncommand = [\"\", \"x\"]\n", `bad.toml:2: [supervisor] command ["", "x"]: the program (the first string) is empty`},
		{"command missing", "[supervisor]\ncommand = [\"/nonexistent/game\"]\n",
			`bad.toml:2: [supervisor] command ["/nonexistent/game"]: command "/nonexistent/game": stat /nonexistent/game: no such file or directory`},
		{"command not on PATH", "[supervisor]\ncommand = [\"no-such-game\", \"{port}\"]\nprobe = \"none\"\n",
			`bad.toml:2: [supervisor] command ["no-such-game", "{port}"]: command "no-such-game": not found on PATH`},
		{"data_dir relative", "[supervisor]\ndata_dir = \"data\"\n", `bad.toml:2: [supervisor] data_dir "data": not an absolute path`},
		{"data_dir without probe", "[supervisor]\ndata_dir = \"/srv/data\"\n", `bad.toml:2: [supervisor] data_dir "/srv/data": keeps a foreign server's files (probe set)`},
		{"state_dir relative", "[supervisor]\nstate_dir = \"var/foyer\"\n", `bad.toml:2: [supervisor] state_dir "var/foyer": not an absolute path`},
		{"state_dir too long", "[supervisor]\nstate_dir = \"/" + strings.Repeat("d", 80) + "\"\n", `bad.toml:2: [supervisor] state_dir "/ddd`},
		{"reattach_grace short", "[supervisor]\nreattach_grace = \"10ms\"\n", `bad.toml:2: [supervisor] reattach_grace "10ms": must be at least 500ms`},
		{"memory_max small", "[supervisor]\nmemory_max = \"1MiB\"\n", `bad.toml:2: [supervisor] memory_max "1MiB": must be at least 33554432 bytes (32 MiB), or "" for no limit`},
		{"memory_max no size", "[supervisor]\nmemory_max = \"lots\"\n", `bad.toml:2: [supervisor] memory_max "lots": not a size`},
		{"cpu_max zero", "[supervisor]\ncpu_max = 0\n", `bad.toml:2: [supervisor] cpu_max 0: must be between 0.01 and 1024, or "" for no limit`},
		{"cpu_max a word", "[supervisor]\ncpu_max = \"half\"\n", `bad.toml:2: [supervisor] cpu_max "half": want a number such as 0.5`},
		{"pids_max small", "[supervisor]\npids_max = 4\n", `bad.toml:2: [supervisor] pids_max 4: must be at least 16, or "" for no limit`},
		{"pids_max a float", "[supervisor]\npids_max = 64.5\n", `bad.toml:2: [supervisor] pids_max 64.5: want an integer`},
		{"command relative with probe", "[supervisor]\ncommand = [\"bin/game\"]\nprobe = \"none\"\n",
			`bad.toml:2: [supervisor] command ["bin/game"]: "bin/game" is relative to the room's fresh working directory`},
		{"max_players above the built-in room", "[supervisor]\nmax_players = 256\n", `bad.toml:2: [supervisor] max_players 256: the built-in room seats at most 255`},
		{"health_timeout below the reports", "[supervisor]\nhealth_timeout = \"1500ms\"\n", `bad.toml:2: [supervisor] health_timeout "1500ms": must be at least 2s`},
		{"gg2 public_addr unspecified", "[gg2]\npublic_addr = \"::\"\n", `bad.toml:2: [gg2] public_addr "::": clients cannot reach an unspecified address`},
		{"gunz public_addr unspecified", "[gunz]\npublic_addr = \"0.0.0.0\"\n", `bad.toml:2: [gunz] public_addr "0.0.0.0": clients cannot reach`},
		// Between values: reported at the one written last.
		{"pool below max_instances", "[supervisor]\nports = \"30000-30009\"\nmax_instances = 11\n",
			`bad.toml:3: [supervisor] max_instances 11: only 10 ports (30000-30009) for max_instances 11 (each instance binds one`},
		{"pool below max_instances plus warm", "[supervisor]\nmax_instances = 10\nwarm = 1\nports = \"30000-30009\"\n",
			`bad.toml:4: [supervisor] ports "30000-30009": only 10 ports (30000-30009) for max_instances 10 plus warm 1 (`},
		{"lobby port in the pool", "[supervisor]\nports = \"7000-7999\"\n[lobby]\nlisten = \"0.0.0.0:7100\"\n",
			`bad.toml:4: [lobby] listen "0.0.0.0:7100": UDP port 7100 collides with [supervisor] ports 7000-7999`},
		{"pool over the default lobby port", "[supervisor]\n\nports = \"7000-7999\"\n",
			`bad.toml:3: [supervisor] ports "7000-7999": UDP port 7777 collides with [lobby] listen 0.0.0.0:7777`},
		{"pool bound where the lobby is", "[lobby]\nlisten = \"127.0.0.1:30000\"\n[supervisor]\nbind = \"127.0.0.1\"\nports = \"30000-30099\"\n",
			`bad.toml:5: [supervisor] ports "30000-30099": UDP port 30000 collides with [lobby] listen 127.0.0.1:30000`},
		{"lobby address twice", "[lobby]\nlisten = [\"0.0.0.0:7000\", \"127.0.0.1:7000\"]\n",
			`bad.toml:2: [lobby] listen ["0.0.0.0:7000", "127.0.0.1:7000"]: UDP port 7000 collides with [lobby] listen 0.0.0.0:7000`},
		{"gg2 on the lobby port", "[gg2]\nenabled = true\nlisten = \"[::]:7777\"\n",
			`bad.toml:3: [gg2] listen "[::]:7777": UDP port 7777 collides with [lobby] listen 0.0.0.0:7777`},
		{"gunz on the gg2 port", "[gg2]\nenabled = true\nlisten = \"127.0.0.1:8000\"\n[gunz]\nenabled = true\nlisten = \"127.0.0.1:8000\"\n",
			`bad.toml:6: [gunz] listen "127.0.0.1:8000": UDP port 8000 collides with [gg2] listen 127.0.0.1:8000`},
		{"admin on the gg2 list port", "[admin]\nlisten = \"127.0.0.1:29944\"\n[gg2]\nenabled = true\n",
			`bad.toml:2: [admin] listen "127.0.0.1:29944": TCP port 29944 collides with [gg2] listen 0.0.0.0:29944`},
		// A client is sent to its room at the address it reached the
		// lobby at: the rooms must answer there.
		{"IPv6 lobby, rooms on loopback", "[lobby]\nlisten = \"[::1]:7777\"\n[supervisor]\nbind = \"127.0.0.1\"\n",
			`bad.toml:4: [supervisor] bind "127.0.0.1": clients reaching the lobby at ::1 would be sent to rooms bound to 127.0.0.1 only`},
		{"IPv6 lobby, rooms on IPv4", "[supervisor]\nbind = \"0.0.0.0\"\n[lobby]\nlisten = [\"0.0.0.0:7777\", \"[::]:7777\"]\n",
			`bad.toml:4: [lobby] listen ["0.0.0.0:7777", "[::]:7777"]: clients reaching the lobby over IPv6 (::) would be sent to rooms bound to IPv4 only`},
		{"every address, rooms on loopback", "[supervisor]\nbind = \"127.0.0.1\"\n",
			`bad.toml:2: [supervisor] bind "127.0.0.1": clients reaching the lobby at 0.0.0.0 would be sent to rooms bound to 127.0.0.1 only`},
		{"idle timeout too short", "[room]\nidle_timeout = \"10ms\"\n", `bad.toml:2: [room] idle_timeout "10ms": must be at least 1s`},
		{"empty timeout too short", "[supervisor]\nempty_timeout = \"0s\"\n", `bad.toml:2: [supervisor] empty_timeout "0s": must be at least 1s`},
		{"max lifetime negative", "[supervisor]\nmax_lifetime = \"-1h\"\n", `bad.toml:2: [supervisor] max_lifetime "-1h": must be at least 0s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.toml", tc.text)
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %q\nwant %q...", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") { // one mistake, one report
				t.Errorf("more than one problem: %q", err)
			}
		})
	}
}

// All problems are reported at once, in file order.
func TestRefusalsAllReportedInOrder(t *testing.T) {
	_, err := Parse("bad.toml", "[log]\nlevel = \"x\"\n[lobby]\nrate = 0\nnope = 1\n")
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "bad.toml:2:") || !strings.HasPrefix(lines[1], "bad.toml:4:") || !strings.HasPrefix(lines[2], "bad.toml:5:") {
		t.Errorf("got %q", err)
	}
}

// Each key is read on its own: every bad value of a section is reported,
// with the unknown keys, in file order.
func TestEveryProblemReported(t *testing.T) {
	_, err := Parse("bad.toml", `[supervisor]
warm = -1
ports = 1
nope = true
[lobby]
listen = {a = 1}
rate = "x"
[log]
level = "x"
format = "x"
`)
	want := []string{
		`bad.toml:2: [supervisor] warm -1: must be at least 0`,
		`bad.toml:3: [supervisor] ports 1: want a string`,
		`bad.toml:4: [supervisor] nope: unknown key`,
		`bad.toml:6: [lobby] listen {...}: want a string or an array of strings`,
		`bad.toml:7: [lobby] rate "x": want a number`,
		`bad.toml:9: [log] level "x": want one of ["trace", "debug", "info", "warn", "error"]`,
		`bad.toml:10: [log] format "x": want one of ["console", "json"]`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

// The checks between values wait for every value to be good: a refused
// value keeps its default, which they would judge instead.
func TestChecksBetweenValuesWaitForGoodValues(t *testing.T) {
	_, err := Parse("bad.toml", "[supervisor]\nports = \"7000-7999\"\nmax_instances = \"many\"\n")
	if want := `bad.toml:3: [supervisor] max_instances "many": want an integer`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// What binds without colliding loads.
func TestSocketsThatDoNotCollide(t *testing.T) {
	for name, text := range map[string]string{
		// The lobby binds udp4 and udp6 apart.
		"lobby on both families":    "[lobby]\nlisten = [\"0.0.0.0:7777\", \"[::]:7777\"]\n",
		"gunz beside an IPv6 lobby": "[lobby]\nlisten = \"[::]:8900\"\n[gunz]\nenabled = true\n",
		// TCP never meets the UDP pool.
		"admin inside the pool": "[admin]\nlisten = \"127.0.0.1:30500\"\n",
		// Rooms bound on every address answer wherever the lobby does.
		"IPv6 lobby, rooms on every address": "[supervisor]\nbind = \"::\"\n[lobby]\nlisten = [\"0.0.0.0:7777\", \"[::]:7777\"]\n",
		"IPv4 lobby, rooms on IPv4":          "[supervisor]\nbind = \"0.0.0.0\"\n[lobby]\nlisten = \"192.0.2.1:7777\"\n",
		"disabled edges":                     "[gg2]\nlisten = \"0.0.0.0:7777\"\n[gunz]\nlisten = \"0.0.0.0:7777\"\n",
		"any free port":                      "[lobby]\nlisten = [\"127.0.0.1:0\", \"0.0.0.0:0\"]\n[admin]\nlisten = \"0.0.0.0:0\"\ntoken = \"0123456789abcdef0123456789abcdef\"\n[gg2]\nenabled = true\nlisten = \"[::]:0\"\n",
	} {
		if _, err := Parse("ok.toml", text); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Doubts that do not stop the start come back as warnings, with their
// line.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		// The pool sets the limit when max_instances is the built-in one.
		{"narrow pool", "[supervisor]\n\nports = \"30000-30019\"\n",
			`ok.toml:3: [supervisor] ports "30000-30019": only 20 ports (30000-30019) for max_instances 64 (each instance binds one`},
		{"narrow pool with warm", "[supervisor]\nports = \"30000-30099\"\nwarm = 40\n",
			`ok.toml:3: [supervisor] warm 40: only 100 ports (30000-30099) for max_instances 64 plus warm 40 (`},
		{"grace without state_dir", "[supervisor]\nreattach_grace = \"5s\"\n",
			`ok.toml:2: [supervisor] reattach_grace "5s": has no effect without state_dir: rooms die with the lobby`},
	} {
		c, err := Parse("ok.toml", tc.text)
		if err != nil || len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], tc.want) {
			t.Errorf("%s: warnings %q, error %v; want %q...", tc.name, c.Warnings, err, tc.want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load("does-not-exist.toml"); err == nil {
		t.Error("a missing file was accepted")
	}
}

// [room] reaches every instance as settings the built-in room reads back.
func TestRoomSettings(t *testing.T) {
	c, err := Parse("x.toml", "[room]\nmin_players = 3\ncountdown = \"1500ms\"\nmatch_duration = \"60s\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"min_players": "3", "countdown": "1.5s", "match_duration": "1m0s", "silence_timeout": "10s"}
	if got := c.Supervisor.Room; !reflect.DeepEqual(got, want) {
		t.Errorf("settings = %v", got)
	}
	if got, err := refroom.ParseSettings(c.Supervisor.Room, c.Supervisor.MaxPlayers); err != nil || got != c.Room {
		t.Errorf("ParseSettings = %+v, %v; want %+v", got, err, c.Room)
	}
}

// TestRoomLifetimes: empty_timeout and max_lifetime reach the
// supervisor, max_lifetime "0s" sets no limit, and the reference room's
// idle_timeout of earlier versions sets empty_timeout with a warning,
// unless empty_timeout is given too.
func TestRoomLifetimes(t *testing.T) {
	c, err := Parse("x.toml", "[supervisor]\nempty_timeout = \"90s\"\nmax_lifetime = \"0s\"\n")
	if err != nil || c.Supervisor.EmptyTimeout != 90*time.Second || c.Supervisor.MaxLifetime != 0 || len(c.Warnings) != 0 {
		t.Fatalf("empty_timeout %v, max_lifetime %v, warnings %q, %v", c.Supervisor.EmptyTimeout, c.Supervisor.MaxLifetime, c.Warnings, err)
	}
	c, err = Parse("x.toml", "[room]\nidle_timeout = \"30s\"\n")
	want := `x.toml:2: [room] idle_timeout "30s": is [supervisor] empty_timeout now`
	if err != nil || c.Supervisor.EmptyTimeout != 30*time.Second || len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], want) {
		t.Fatalf("empty_timeout %v, warnings %q, %v; want 30s and %q", c.Supervisor.EmptyTimeout, c.Warnings, err, want)
	}
	if _, ok := c.Supervisor.Room["idle_timeout"]; ok {
		t.Error("the rooms were handed idle_timeout")
	}
	c, err = Parse("x.toml", "[supervisor]\nempty_timeout = \"90s\"\n[room]\nidle_timeout = \"30s\"\n")
	if err != nil || c.Supervisor.EmptyTimeout != 90*time.Second || len(c.Warnings) != 1 {
		t.Fatalf("both given: empty_timeout %v, warnings %q, %v; want 90s", c.Supervisor.EmptyTimeout, c.Warnings, err)
	}
}

// TestReadersAuto: "auto", the default, is one reader per core the
// process may use.
func TestReadersAuto(t *testing.T) {
	for _, text := range []string{"", "[lobby]\nreaders = \"auto\"\n"} {
		c, err := Parse("x.toml", text)
		if err != nil || c.Lobby.Readers != runtime.GOMAXPROCS(0) {
			t.Errorf("%q: readers %d, %v; want %d", text, c.Lobby.Readers, err, runtime.GOMAXPROCS(0))
		}
	}
}

// TestRoomsPerNetworkFollowsMaxInstances: left out, a network's share is
// a quarter of the max_instances the file sets, at least 1; given, it is
// what the file says.
func TestRoomsPerNetworkFollowsMaxInstances(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"[supervisor]\nmax_instances = 8\n", 2},
		{"[supervisor]\nmax_instances = 3\n", 1},
		{"", 16},
		{"[supervisor]\nmax_instances = 8\nrooms_per_network = 8\n", 8},
	} {
		c, err := Parse("t.toml", tc.text)
		if err != nil || c.Supervisor.RoomsPerNetwork != tc.want {
			t.Errorf("%q: rooms_per_network %d, %v; want %d", tc.text, c.Supervisor.RoomsPerNetwork, err, tc.want)
		}
	}
}

// Rooms run as users of their own share no files: as root, data_dir
// with room_users is refused, at the later of the two lines.
func TestDataDirNeedsRoomsOfOneUser(t *testing.T) {
	requiretest.Root(t)
	text := "[supervisor]\ncommand = [\"/bin/sh\"]\nprobe = \"none\"\nroom_users = \"1879048192-1879113727\"\ndata_dir = \"/srv/data\"\n"
	_, err := Parse("bad.toml", text)
	if want := `bad.toml:5: [supervisor] data_dir "/srv/data": data_dir /srv/data: rooms run as users of their own (room_users) share no files`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if _, err := Parse("ok.toml", strings.Replace(text, `"1879048192-1879113727"`, `""`, 1)); err != nil {
		t.Fatal(err)
	}
}

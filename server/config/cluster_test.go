package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestCluster: the [cluster] keys, and what the cluster takes from the
// other sections.
func TestCluster(t *testing.T) {
	c, err := Parse("c.toml", "[lobby]\nlisten = \"10.0.0.1:7777\"\n[supervisor]\nspawn_timeout = \"7s\"\n"+
		"[cluster]\nnats = \"nats://10.0.0.10:4222, tls://10.0.0.11:4222\"\nhost = \"edge-1.example\"\n")
	if err != nil {
		t.Fatal(err)
	}
	cc := c.Cluster
	if !cc.Enabled() || len(cc.NATS) != 2 || cc.NATS[1] != "tls://10.0.0.11:4222" || cc.Host != "edge-1.example" {
		t.Errorf("cluster %+v", cc)
	}
	listen := netip.MustParseAddr("10.0.0.1")
	if cc.PublicAddr != listen || c.GG2.Server.PublicAddr != listen || c.Gunz.Locator.PublicAddr != listen {
		t.Errorf("public addresses %v, gg2 %v, gunz %v; want the lobby's listen address for all",
			cc.PublicAddr, c.GG2.Server.PublicAddr, c.Gunz.Locator.PublicAddr)
	}
	if cc.CreateTimeout != 12*time.Second {
		t.Errorf("create timeout %v, want spawn_timeout + 5s", cc.CreateTimeout)
	}
	c, err = Parse("c.toml", "[supervisor]\nstate_dir = \"/var/lib/foyer\"\n[gg2]\npublic_addr = \"192.0.2.1\"\n[cluster]\nembedded = \"0.0.0.0:4222\"\npublic_addr = \"203.0.113.10\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.PublicAddr != netip.MustParseAddr("203.0.113.10") || c.GG2.Server.PublicAddr != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("public %v, gg2 %v: [gg2] public_addr, when set, stays", c.Cluster.PublicAddr, c.GG2.Server.PublicAddr)
	}
	if c.Cluster.StoreDir != "/var/lib/foyer/nats" || c.Cluster.KeysDir != "/var/lib/foyer/cluster" {
		t.Errorf("embedded store %q, keys %q; want state_dir/nats and state_dir/cluster", c.Cluster.StoreDir, c.Cluster.KeysDir)
	}
	if c.Cluster.MaxHostRooms != c.Supervisor.MaxInstances || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "lets in no other host: name them in members") {
		t.Errorf("max_host_rooms %d, want max_instances; warnings %q", c.Cluster.MaxHostRooms, c.Warnings)
	}
	c, err = Parse("c.toml", "[supervisor]\nstate_dir = \"/var/lib/foyer\"\n[cluster]\nembedded = \"10.0.0.1:4222\"\nmembers = [\"b\", \"c.example\"]\nmax_host_rooms = 200\npublic_addr = \"192.0.2.1\"\n")
	if err != nil || len(c.Cluster.Members) != 2 || c.Cluster.MaxHostRooms != 200 || len(c.Warnings) != 0 {
		t.Errorf("members %q, max_host_rooms %d, warnings %q: %v", c.Cluster.Members, c.Cluster.MaxHostRooms, c.Warnings, err)
	}
	if c, _ := Parse("c.toml", ""); c.Cluster.Enabled() {
		t.Error("the defaults are a cluster")
	}
}

func TestClusterRefusals(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"not a URL", "[cluster]\nnats = \"10.0.0.1:4222\"\n", `c.toml:2: [cluster] nats "10.0.0.1:4222": "10.0.0.1:4222" is not a NATS URL`},
		{"bad host", "[cluster]\nhost = \"a b\"\n", `c.toml:2: [cluster] host "a b": host name "a b"`},
		{"embedded no port", "[cluster]\nembedded = \"0.0.0.0\"\n", `c.toml:2: [cluster] embedded "0.0.0.0": want "host:port"`},
		{"public unspecified", "[cluster]\npublic_addr = \"0.0.0.0\"\n", `c.toml:2: [cluster] public_addr "0.0.0.0": clients cannot reach`},
		{"no public address", "[lobby]\nlisten = \"0.0.0.0:7777\"\n[cluster]\nnats = \"nats://10.0.0.10:4222\"\n",
			`c.toml:4: [cluster] nats "nats://10.0.0.10:4222": a host of a cluster needs public_addr`},
		{"no credentials file", "[cluster]\ncredentials = \"/nonexistent/foyer.creds\"\n", `c.toml:2: [cluster] credentials "/nonexistent/foyer.creds": stat`},
		{"cert without key", "[cluster]\ntls_cert = \"/dev/null\"\n", `c.toml:2: [cluster] tls_cert "/dev/null": tls_cert and tls_key go together`},
		{"members without embedded", "[cluster]\nnats = \"nats://10.0.0.10:4222\"\nmembers = [\"b\"]\npublic_addr = \"192.0.2.1\"\n", `c.toml:3: [cluster] members ["b"]: members are the hosts the embedded server lets in`},
		{"members without state_dir", "[cluster]\nembedded = \"10.0.0.1:4222\"\nmembers = [\"b\"]\npublic_addr = \"192.0.2.1\"\n", `c.toml:3: [cluster] members ["b"]: the members' keys are written where the other hosts' operators can copy them from, state_dir/cluster: set [supervisor] state_dir`},
		{"bad member", "[cluster]\nmembers = [\"a b\"]\n", `c.toml:2: [cluster] members ["a b"]: host name "a b"`},
		{"no nkey file", "[cluster]\nnkey = \"/nonexistent/b.nk\"\n", `c.toml:2: [cluster] nkey "/nonexistent/b.nk": open /nonexistent/b.nk: no such file or directory`},
		{"embedded with a key", "[cluster]\nembedded = \"127.0.0.1:4222\"\ncredentials = \"/dev/null\"\npublic_addr = \"192.0.2.1\"\n", `c.toml:3: [cluster] credentials "/dev/null": the host of the embedded server has a key of its own`},
		{"server cert without key", "[cluster]\nembedded = \"127.0.0.1:4222\"\nembedded_tls_cert = \"/dev/null\"\npublic_addr = \"192.0.2.1\"\n", `c.toml:3: [cluster] embedded_tls_cert "/dev/null": embedded_tls_cert and embedded_tls_key go together`},
	} {
		_, err := Parse("c.toml", tc.text)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s...", tc.name, err, tc.want)
		}
	}
}

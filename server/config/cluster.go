package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/foyerlobby/foyer/cluster"
)

// clusterKeys is the [cluster] section: several hosts, one lobby (see
// package cluster).
type clusterKeys struct {
	NATS          toml.Primitive `toml:"nats"`
	Embedded      toml.Primitive `toml:"embedded"`
	Members       toml.Primitive `toml:"members"`
	Host          toml.Primitive `toml:"host"`
	PublicAddr    toml.Primitive `toml:"public_addr"`
	NKey          toml.Primitive `toml:"nkey"`
	Credentials   toml.Primitive `toml:"credentials"`
	TLSCA         toml.Primitive `toml:"tls_ca"`
	TLSCert       toml.Primitive `toml:"tls_cert"`
	TLSKey        toml.Primitive `toml:"tls_key"`
	ServerTLSCert toml.Primitive `toml:"embedded_tls_cert"`
	ServerTLSKey  toml.Primitive `toml:"embedded_tls_key"`
	MaxHostRooms  toml.Primitive `toml:"max_host_rooms"`
}

func (k *clusterKeys) apply(r *reader, c *Config) {
	cc := &c.Cluster
	r.get(k.NATS, text(func(v string) error {
		urls, err := natsURLs(v)
		cc.NATS = urls
		return err
	}))
	r.get(k.Embedded, text(func(v string) error {
		cc.Embedded = v
		if v == "" {
			return nil
		}
		return hostPort(v)
	}))
	r.get(k.Host, text(func(v string) error {
		cc.Host = v
		if v == "" {
			return nil
		}
		return cluster.CheckHost(v)
	}))
	r.get(k.PublicAddr, ip(&cc.PublicAddr, false, true))
	r.get(k.Members, value(func(raw any) error {
		names, err := strs(raw, "a list of host names")
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := cluster.CheckHost(n); err != nil {
				return err
			}
		}
		cc.Members = names
		return nil
	}))
	r.get(k.NKey, text(func(v string) error {
		cc.NKey = v
		if v == "" {
			return nil
		}
		_, err := cluster.ReadSeed(v)
		return err
	}))
	r.get(k.MaxHostRooms, count(&cc.MaxHostRooms, 0, 1<<20))
	for _, f := range []struct {
		key toml.Primitive
		dst *string
	}{{k.Credentials, &cc.Credentials}, {k.TLSCA, &cc.TLSCA}, {k.TLSCert, &cc.TLSCert}, {k.TLSKey, &cc.TLSKey},
		{k.ServerTLSCert, &cc.ServerTLSCert}, {k.ServerTLSKey, &cc.ServerTLSKey}} {
		r.get(f.key, text(func(v string) error {
			*f.dst = v
			if v == "" {
				return nil
			}
			_, err := os.Stat(v)
			return err
		}))
	}
}

// natsURLs reads "" (none) or comma-separated NATS URLs.
func natsURLs(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
			return nil, fmt.Errorf("%q is not a NATS URL (want e.g. \"nats://10.0.0.1:4222\", comma-separated)", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// check fills what the cluster takes from other sections and refuses what
// contradicts: a host's public address defaults to the lobby's first
// listen address, which must then name one; the GG2 and GunZ front-ends
// list this host's rooms at it unless told otherwise; a placed CREATE
// may wait for a spawn; the embedded server keeps its store in state_dir.
func (k *clusterKeys) check(r *reader, c *Config) {
	cc := &c.Cluster
	if cc.TLSCert != "" && cc.TLSKey == "" || cc.TLSCert == "" && cc.TLSKey != "" {
		r.refuse("tls_cert and tls_key go together", k.TLSCert, k.TLSKey)
	}
	if cc.ServerTLSCert != "" && cc.ServerTLSKey == "" || cc.ServerTLSCert == "" && cc.ServerTLSKey != "" {
		r.refuse("embedded_tls_cert and embedded_tls_key go together", k.ServerTLSCert, k.ServerTLSKey)
	}
	if cc.NKey != "" && cc.Credentials != "" {
		r.refuse("nkey and credentials are two ways to say who this host is: set one", k.NKey, k.Credentials)
	}
	if cc.Embedded == "" {
		if len(cc.Members) > 0 {
			r.refuse("members are the hosts the embedded server lets in: set embedded too, or leave members empty", k.Members)
		}
		if cc.ServerTLSCert != "" {
			r.refuse("embedded_tls_cert is the embedded server's: set embedded too", k.ServerTLSCert)
		}
	} else if cc.NKey != "" || cc.Credentials != "" {
		r.refuse("the host of the embedded server has a key of its own, made in state_dir/cluster: nkey and credentials are for the other hosts", k.NKey, k.Credentials, k.Embedded)
	}
	if !cc.Enabled() {
		return
	}
	if cc.MaxHostRooms == 0 {
		cc.MaxHostRooms = c.Supervisor.MaxInstances
	}
	if c.Supervisor.StateDir != "" {
		cc.KeysDir = filepath.Join(c.Supervisor.StateDir, "cluster")
	}
	if len(cc.Members) > 0 && cc.Embedded != "" && cc.KeysDir == "" {
		r.refuse("the members' keys are written where the other hosts' operators can copy them from, state_dir/cluster: set [supervisor] state_dir",
			k.Members, k.Embedded)
	}
	if host, _, err := net.SplitHostPort(cc.Embedded); err == nil && len(cc.Members) == 0 {
		if a, err := netip.ParseAddr(host); err != nil || !a.IsLoopback() {
			r.warn("the embedded server listens beyond loopback but lets in no other host: name them in members", k.Embedded)
		}
	}
	if !cc.PublicAddr.IsValid() {
		a := c.Lobby.Listen[0].Addr().Unmap()
		if a.IsUnspecified() {
			r.refuse("a host of a cluster needs public_addr, the IP players reach its rooms at: the lobby listens on every address and names none",
				k.NATS, k.Embedded, k.PublicAddr)
			return
		}
		cc.PublicAddr = a
	}
	if !c.GG2.Server.PublicAddr.IsValid() {
		c.GG2.Server.PublicAddr = cc.PublicAddr
	}
	if !c.Gunz.Locator.PublicAddr.IsValid() && cc.PublicAddr.Is4() {
		c.Gunz.Locator.PublicAddr = cc.PublicAddr
	}
	cc.CreateTimeout = c.Supervisor.SpawnTimeout + 5*time.Second
	if c.Supervisor.StateDir != "" {
		cc.StoreDir = filepath.Join(c.Supervisor.StateDir, "nats")
	}
	if c.Supervisor.IDFile != "" {
		r.warn("id_file does not apply in a cluster: room ids come from the host's range, whose mark is kept in NATS", k.NATS, k.Embedded)
	}
}

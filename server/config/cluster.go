package config

import (
	"fmt"
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
	NATS        toml.Primitive `toml:"nats"`
	Embedded    toml.Primitive `toml:"embedded"`
	Host        toml.Primitive `toml:"host"`
	PublicAddr  toml.Primitive `toml:"public_addr"`
	Credentials toml.Primitive `toml:"credentials"`
	TLSCA       toml.Primitive `toml:"tls_ca"`
	TLSCert     toml.Primitive `toml:"tls_cert"`
	TLSKey      toml.Primitive `toml:"tls_key"`
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
	for _, f := range []struct {
		key toml.Primitive
		dst *string
	}{{k.Credentials, &cc.Credentials}, {k.TLSCA, &cc.TLSCA}, {k.TLSCert, &cc.TLSCert}, {k.TLSKey, &cc.TLSKey}} {
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
	if !cc.Enabled() {
		return
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

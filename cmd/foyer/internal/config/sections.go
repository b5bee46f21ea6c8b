package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/lobby/gg2"
	gg2wire "github.com/foyerlobby/foyer/packet/gg2"
)

func readLobby(s *section, c *Config) {
	l, lim := &c.Lobby, &c.Limits
	var listen []string
	if s.list("listen", &listen) {
		addrs, err := parseListen(listen)
		if err != nil {
			v, _ := s.get("listen")
			s.refuse("listen", v, err.Error())
		} else {
			l.Listen = addrs
		}
	}
	s.rate("rate", &lim.Rate)
	s.int("burst", &lim.Burst, 1, 1<<20)
	s.rate("create_rate", &lim.CreateRate)
	s.int("create_burst", &lim.CreateBurst, 1, 1<<20)
	s.int("max_sources", &lim.MaxSources, 1, 1<<24)
	s.size("reflection_limit", &lim.ReflectionLimit, 1024)
	s.int("max_prefixes", &lim.MaxPrefixes, 1, 1<<24)
	s.duration("retry_window", &l.RetryWindow, time.Second)
	s.int("retry_cache", &l.RetryCache, 1, 1<<24)
	s.int("max_creates", &l.MaxCreates, 1, 1<<16)
}

// parseListen parses UDP listen addresses. Host names are refused: the
// lobby binds exactly what it is told.
func parseListen(ss []string) ([]netip.AddrPort, error) {
	if len(ss) == 0 {
		return nil, errors.New("want at least one address")
	}
	out := make([]netip.AddrPort, 0, len(ss))
	for _, s := range ss {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not IP:port (IPv6 as [::1]:7777)", s)
		}
		out = append(out, ap)
	}
	return out, nil
}

func readGG2(s *section, c *Config) {
	g, srv, ann := &c.GG2, &c.GG2.Server, &c.GG2.Announce
	s.bool("enabled", &g.Enabled)
	s.addrPort("listen", &srv.Listen, false)
	s.text("lobby", func(v string) error {
		id, err := gg2wire.ParseUUID(v)
		if err != nil {
			return errors.New("not a UUID (want 8-4-4-4-12 hex digits)")
		}
		srv.Lobby, ann.Lobby = id, id
		return nil
	})
	s.text("legacy_listen", func(v string) error { return optionalAddrPort(v, &srv.LegacyListen) })
	s.text("protocol_id", func(v string) error {
		if v == "" {
			srv.ProtocolID = gg2wire.UUID{}
			return nil
		}
		id, err := gg2wire.ParseUUID(v)
		if err != nil {
			return errors.New(`not a UUID (want 8-4-4-4-12 hex digits), or "" for none`)
		}
		srv.ProtocolID = id
		return nil
	})
	s.ip("public_addr", &srv.PublicAddr, false)
	s.text("game", func(v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		srv.Game, ann.Game = v, v
		return nil
	})
	s.duration("ttl", &srv.TTL, time.Second)
	s.int("max_servers", &srv.MaxServers, 1, 1<<20)
	s.int("max_servers_per_ip", &srv.MaxServersPerIP, 1, srv.MaxServers)
	s.size("max_kv_bytes", &srv.MaxKVBytes, gg2.MinKVBytes)
	if srv.MaxKVBytes > maxKVBytes {
		v, _ := s.get("max_kv_bytes")
		s.refuse("max_kv_bytes", v, fmt.Sprintf("must be at most %d bytes", maxKVBytes))
	}
	s.int("max_players", &srv.MaxPlayers, 1, 1<<16-1)
	s.duration("dial_timeout", &srv.DialTimeout, 10*time.Millisecond)
	s.int("max_checks", &srv.MaxChecks, 1, 1<<10)
	s.duration("list_timeout", &srv.ListTimeout, 100*time.Millisecond)
	s.int("max_list_conns", &srv.MaxListConns, 1, 1<<16)
	s.int("max_list_conns_per_ip", &srv.MaxListConnsPerIP, 1, srv.MaxListConns)
	s.text("announce", func(v string) error {
		if v != "" {
			if err := checkHostPort(v); err != nil {
				return err
			}
		}
		ann.Upstream = v
		return nil
	})
	s.duration("announce_interval", &ann.Interval, 100*time.Millisecond)
}

// maxKVBytes bounds [gg2] max_kv_bytes: a datagram holds no more.
const maxKVBytes = 64 << 10

// optionalAddrPort parses "IP:port" into dst, or "" into the zero
// AddrPort (off).
func optionalAddrPort(v string, dst *netip.AddrPort) error {
	if v == "" {
		*dst = netip.AddrPort{}
		return nil
	}
	ap, err := netip.ParseAddrPort(v)
	if err != nil {
		return errors.New(`not IP:port (IPv6 as [::1]:29942), or "" for off`)
	}
	*dst = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	return nil
}

func readWeb(s *section, c *Config) {
	s.text("listen", func(v string) error { return optionalAddrPort(v, &c.Web.Listen) })
}

// checkHostPort accepts "host:port" with a host name or IP and a port in
// 1-65535; the name is resolved when announcing starts.
func checkHostPort(v string) error {
	const want = `want "host:port", e.g. "lobby.example.org:29944"`
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		return errors.New(want)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return errors.New(want)
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("port %d outside 1-65535", n)
	}
	return nil
}

func readGunz(s *section, c *Config) {
	g := &c.Gunz
	s.bool("enabled", &g.Enabled)
	// The protocol carries IPv4 addresses only.
	s.addrPort("listen", &g.Locator.Listen, true)
	s.ip("public_addr", &g.Locator.PublicAddr, true)
}

func readSupervisor(s *section, c *Config) {
	sc := &c.Supervisor
	s.text("ports", func(v string) error {
		first, last, err := parsePorts(v)
		if err == nil {
			sc.FirstPort, sc.LastPort = first, last
		}
		return err
	})
	s.int("max_instances", &sc.MaxInstances, 1, 1<<16)
	s.int("max_players", &sc.MaxPlayers, 1, 1<<16-1)
	s.int("warm", &sc.Warm, 0, sc.MaxInstances) // never more than may run
	s.list("command", &sc.Command)
	s.ip("bind", &sc.Bind, false)
	s.text("id_file", func(v string) error { sc.IDFile = v; return nil })
	s.choice("probe", &sc.Probe, "", "teeworlds", "none")
	if sc.Probe != "" && len(sc.Command) == 0 {
		v, _ := s.get("probe")
		s.refuse("probe", v, "needs a command (the built-in room is probed over go-plugin)")
	}
	// The supervisor reads a zero duration as "use the default", so zero
	// is refused here rather than silently changed.
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"spawn_timeout", &sc.SpawnTimeout},
		{"health_timeout", &sc.HealthTimeout},
		{"stop_grace", &sc.StopGrace},
		{"port_cooldown", &sc.PortCooldown},
		{"port_quarantine", &sc.PortQuarantine},
		{"seat_ttl", &sc.SeatTTL},
	} {
		s.duration(d.key, d.dst, time.Millisecond)
	}
}

// parsePorts parses "FIRST-LAST" (inclusive) or a single port.
func parsePorts(v string) (first, last uint16, err error) {
	a, b, isRange := strings.Cut(v, "-")
	if !isRange {
		b = a
	}
	p := func(s string) (uint16, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, errors.New(`want "FIRST-LAST", e.g. "30000-30999"`)
		}
		if n < 1 || n > 65535 {
			return 0, fmt.Errorf("port %d outside 1-65535", n)
		}
		return uint16(n), nil
	}
	if first, err = p(a); err != nil {
		return 0, 0, err
	}
	if last, err = p(b); err != nil {
		return 0, 0, err
	}
	if first > last {
		return 0, 0, errors.New("first port above last")
	}
	return first, last, nil
}

func readRoom(s *section, c *Config) {
	r := &c.Room
	s.int("min_players", &r.MinPlayers, 1, c.Supervisor.MaxPlayers)
	s.duration("countdown", &r.Countdown, 0)
	s.duration("match_duration", &r.MatchDuration, time.Second)
	s.duration("idle_timeout", &r.IdleTimeout, time.Second)
}

func readAdmin(s *section, c *Config) {
	s.text("listen", func(v string) error {
		if v == "" { // disabled
			c.Admin.Listen = ""
			return nil
		}
		if _, err := netip.ParseAddrPort(v); err != nil {
			return errors.New(`not IP:port, e.g. "127.0.0.1:9477", or "" to disable`)
		}
		c.Admin.Listen = v
		return nil
	})
}

func readLog(s *section, c *Config) {
	level := c.Log.Level.String()
	s.choice("level", &level, "trace", "debug", "info", "warn", "error")
	c.Log.Level, _ = zerolog.ParseLevel(level)
	s.choice("format", &c.Log.Format, "console", "json")
}

package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

func readLobby(s *section, c *Config) {
	l := &c.Lobby
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
	s.rate("rate", &l.Rate)
	s.int("burst", &l.Burst, 1, 1<<20)
	s.rate("create_rate", &l.CreateRate)
	s.int("create_burst", &l.CreateBurst, 1, 1<<20)
	s.int("max_sources", &l.MaxSources, 1, 1<<24)
	s.size("reflection_limit", &l.ReflectionLimit, 1024)
	s.int("max_prefixes", &l.MaxPrefixes, 1, 1<<24)
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
	s.text("bind", func(v string) error {
		if v == "" {
			sc.Bind = netip.Addr{}
			return nil
		}
		ip, err := netip.ParseAddr(v)
		if err != nil {
			return errors.New("not an IP address")
		}
		sc.Bind = ip
		return nil
	})
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

func readLog(s *section, c *Config) {
	level := c.Log.Level.String()
	s.choice("level", &level, "trace", "debug", "info", "warn", "error")
	c.Log.Level, _ = zerolog.ParseLevel(level)
	s.choice("format", &c.Log.Format, "console", "json")
}

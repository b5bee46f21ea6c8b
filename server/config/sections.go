package config

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/packet/gg2"
	"github.com/foyerlobby/foyer/server/admin"
)

// keys is every section's keys, kept for the checks between values. Each
// section's struct names its keys; its apply method reads each in one
// line: with which reader (values.go), within which bounds, into which
// field of Config.
type keys struct {
	Lobby      lobbyKeys
	GG2        gg2Keys
	Gunz       gunzKeys
	Web        webKeys
	Supervisor supervisorKeys
	Room       roomKeys
	Admin      adminKeys
	Log        logKeys
	Cluster    clusterKeys
}

type lobbyKeys struct {
	Listen          toml.Primitive `toml:"listen"`
	Readers         toml.Primitive `toml:"readers"`
	SocketFilter    toml.Primitive `toml:"socket_filter"`
	Rate            toml.Primitive `toml:"rate"`
	Burst           toml.Primitive `toml:"burst"`
	CreateRate      toml.Primitive `toml:"create_rate"`
	CreateBurst     toml.Primitive `toml:"create_burst"`
	CreateNetRate   toml.Primitive `toml:"create_network_rate"`
	CreateNetBurst  toml.Primitive `toml:"create_network_burst"`
	UnverifiedRate  toml.Primitive `toml:"unverified_create_rate"`
	UnverifiedBurst toml.Primitive `toml:"unverified_create_burst"`
	MaxSources      toml.Primitive `toml:"max_sources"`
	AdmitRate       toml.Primitive `toml:"admit_rate"`
	AdmitBurst      toml.Primitive `toml:"admit_burst"`
	ReflectionLimit toml.Primitive `toml:"reflection_limit"`
	MaxPrefixes     toml.Primitive `toml:"max_prefixes"`
	RetryWindow     toml.Primitive `toml:"retry_window"`
	RetryCache      toml.Primitive `toml:"retry_cache"`
	MaxCreates      toml.Primitive `toml:"max_creates"`
	Unverified      toml.Primitive `toml:"unverified_reply_limit"`
	Deny            toml.Primitive `toml:"deny"`
}

func (k *lobbyKeys) apply(r *reader, c *Config) {
	l, lim := &c.Lobby, &c.Limits
	r.get(k.Listen, listen(&l.Listen))
	r.get(k.Readers, readers(&l.Readers))
	r.get(k.SocketFilter, boolean(&l.Filter))
	r.get(k.Rate, rate(&lim.Rate))
	r.get(k.Burst, count(&lim.Burst, 1, 1<<20))
	r.get(k.CreateRate, rate(&lim.CreateRate))
	r.get(k.CreateBurst, count(&lim.CreateBurst, 1, 1<<20))
	r.get(k.CreateNetRate, rate(&lim.CreateNetworkRate))
	r.get(k.CreateNetBurst, count(&lim.CreateNetworkBurst, 1, 1<<20))
	r.get(k.UnverifiedRate, rate(&lim.UnverifiedCreateRate))
	r.get(k.UnverifiedBurst, count(&lim.UnverifiedCreateBurst, 1, 1<<20))
	r.get(k.MaxSources, count(&lim.MaxSources, 1, 1<<24))
	r.get(k.AdmitRate, rate(&lim.AdmitRate))
	r.get(k.AdmitBurst, count(&lim.AdmitBurst, 1, 1<<24))
	r.get(k.ReflectionLimit, size(&lim.ReflectionLimit, 1024))
	r.get(k.MaxPrefixes, count(&lim.MaxPrefixes, 1, 1<<24))
	r.get(k.RetryWindow, duration(&l.RetryWindow, time.Second))
	r.get(k.RetryCache, count(&l.RetryCache, 1, 1<<24))
	r.get(k.MaxCreates, count(&l.MaxCreates, 1, 1<<16))
	r.get(k.Unverified, size(&lim.UnverifiedReplyLimit, 1024))
	r.get(k.Deny, networks(&lim.Deny))
}

type gg2Keys struct {
	Enabled          toml.Primitive `toml:"enabled"`
	Listen           toml.Primitive `toml:"listen"`
	Lobby            toml.Primitive `toml:"lobby"`
	PublicAddr       toml.Primitive `toml:"public_addr"`
	Game             toml.Primitive `toml:"game"`
	TTL              toml.Primitive `toml:"ttl"`
	MaxServers       toml.Primitive `toml:"max_servers"`
	MaxServersPerIP  toml.Primitive `toml:"max_servers_per_ip"`
	MaxServersPerNet toml.Primitive `toml:"max_servers_per_network"`
	UDPTransport     toml.Primitive `toml:"udp_transport"`
	DialTimeout      toml.Primitive `toml:"dial_timeout"`
	MaxChecks        toml.Primitive `toml:"max_checks"`
	ListTimeout      toml.Primitive `toml:"list_timeout"`
	MinReadRate      toml.Primitive `toml:"min_read_rate"`
	MaxListConns     toml.Primitive `toml:"max_list_conns"`
	MaxListConnsIP   toml.Primitive `toml:"max_list_conns_per_ip"`
	MaxListConnsNet  toml.Primitive `toml:"max_list_conns_per_network"`
	MaxListBytes     toml.Primitive `toml:"max_list_bytes"`
	MaxKVBytes       toml.Primitive `toml:"max_kv_bytes"`
	MaxPlayers       toml.Primitive `toml:"max_players"`
	LegacyListen     toml.Primitive `toml:"legacy_listen"`
	ProtocolID       toml.Primitive `toml:"protocol_id"`
	Announce         toml.Primitive `toml:"announce"`
	AnnounceInterval toml.Primitive `toml:"announce_interval"`
}

func (k *gg2Keys) apply(r *reader, c *Config) {
	srv, ann := &c.GG2.Server, &c.GG2.Announce
	r.get(k.Enabled, boolean(&c.GG2.Enabled))
	r.get(k.Listen, addrPort(&srv.Listen, false))
	// The lobby ID and game are the announcer's too.
	r.get(k.Lobby, text(func(v string) error {
		id, err := gg2.ParseUUID(v)
		if err != nil {
			return errors.New("not a UUID (want 8-4-4-4-12 hex digits)")
		}
		srv.Lobby, ann.Lobby = id, id
		return nil
	}))
	r.get(k.PublicAddr, ip(&srv.PublicAddr, false, true))
	r.get(k.Game, text(func(v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		srv.Game, ann.Game = v, v
		return nil
	}))
	r.get(k.TTL, duration(&srv.TTL, time.Second))
	r.get(k.MaxServers, count(&srv.MaxServers, 1, 1<<20))
	r.get(k.MaxServersPerIP, count(&srv.MaxServersPerIP, 1, srv.MaxServers))
	r.get(k.MaxServersPerNet, count(&srv.MaxServersPerNetwork, 1, srv.MaxServers))
	r.get(k.UDPTransport, boolean(&srv.UDPTransport))
	r.get(k.DialTimeout, duration(&srv.DialTimeout, 10*time.Millisecond))
	r.get(k.MaxChecks, count(&srv.MaxChecks, 1, 1<<12))
	r.get(k.ListTimeout, duration(&srv.ListTimeout, 100*time.Millisecond))
	r.get(k.MinReadRate, size(&srv.MinReadRate, minReadRate))
	r.get(k.MaxListConns, count(&srv.MaxListConns, 1, 1<<16))
	r.get(k.MaxListConnsIP, count(&srv.MaxListConnsPerIP, 1, srv.MaxListConns))
	r.get(k.MaxListConnsNet, count(&srv.MaxListConnsPerNetwork, 1, srv.MaxListConns))
	r.get(k.MaxListBytes, size(&srv.MaxListBytes, gg2server.MinListBytes))
	r.get(k.MaxKVBytes, size(&srv.MaxKVBytes, gg2server.MinKVBytes))
	if srv.MaxKVBytes > maxKVBytes {
		r.refuse(fmt.Sprintf("must be at most %d bytes", maxKVBytes), k.MaxKVBytes)
	}
	r.get(k.MaxPlayers, count(&srv.MaxPlayers, 1, 1<<16-1))
	r.get(k.LegacyListen, addrPortOrOff(&srv.LegacyListen))
	r.get(k.ProtocolID, text(func(v string) error {
		if v == "" {
			srv.ProtocolID = gg2.UUID{}
			return nil
		}
		id, err := gg2.ParseUUID(v)
		if err != nil {
			return errors.New(`not a UUID (want 8-4-4-4-12 hex digits), or "" for none`)
		}
		srv.ProtocolID = id
		return nil
	}))
	r.get(k.Announce, text(func(v string) error {
		ann.Upstream = v
		if v == "" {
			return nil
		}
		return hostPort(v)
	}))
	r.get(k.AnnounceInterval, duration(&ann.Interval, 100*time.Millisecond))
}

type gunzKeys struct {
	Enabled    toml.Primitive `toml:"enabled"`
	Listen     toml.Primitive `toml:"listen"`
	PublicAddr toml.Primitive `toml:"public_addr"`
}

func (k *gunzKeys) apply(r *reader, c *Config) {
	g := &c.Gunz
	r.get(k.Enabled, boolean(&g.Enabled))
	// The protocol carries IPv4 addresses only.
	r.get(k.Listen, addrPort(&g.Locator.Listen, true))
	r.get(k.PublicAddr, ip(&g.Locator.PublicAddr, true, true))
}

type supervisorKeys struct {
	Ports          toml.Primitive `toml:"ports"`
	Bind           toml.Primitive `toml:"bind"`
	MaxInstances   toml.Primitive `toml:"max_instances"`
	MaxPlayers     toml.Primitive `toml:"max_players"`
	Warm           toml.Primitive `toml:"warm"`
	Command        toml.Primitive `toml:"command"`
	Probe          toml.Primitive `toml:"probe"`
	PassSocket     toml.Primitive `toml:"pass_socket"`
	SpawnTimeout   toml.Primitive `toml:"spawn_timeout"`
	HealthTimeout  toml.Primitive `toml:"health_timeout"`
	StopGrace      toml.Primitive `toml:"stop_grace"`
	PortCooldown   toml.Primitive `toml:"port_cooldown"`
	PortQuarantine toml.Primitive `toml:"port_quarantine"`
	SeatTTL        toml.Primitive `toml:"seat_ttl"`
	ReconnectGrace toml.Primitive `toml:"reconnect_grace"`
	SeatsPerAddr   toml.Primitive `toml:"seats_per_address"`
	RoomsPerNet    toml.Primitive `toml:"rooms_per_network"`
	MaxWaiting     toml.Primitive `toml:"max_waiting"`
	EmptyTimeout   toml.Primitive `toml:"empty_timeout"`
	MaxLifetime    toml.Primitive `toml:"max_lifetime"`
	IDFile         toml.Primitive `toml:"id_file"`
	StateDir       toml.Primitive `toml:"state_dir"`
	DataDir        toml.Primitive `toml:"data_dir"`
	ReattachGrace  toml.Primitive `toml:"reattach_grace"`
	MemoryMax      toml.Primitive `toml:"memory_max"`
	CPUMax         toml.Primitive `toml:"cpu_max"`
	PidsMax        toml.Primitive `toml:"pids_max"`
	RoomUsers      toml.Primitive `toml:"room_users"`
	PassEnv        toml.Primitive `toml:"pass_env"`
}

// minHealthTimeout is the shortest health_timeout that lets a healthy
// room live: an instance speaking Foyer's protocol reports at least every
// 2 s (instance.HeartbeatInterval), the teeworlds probe asks every second.
const minHealthTimeout = 2 * time.Second

func (k *supervisorKeys) apply(r *reader, c *Config) {
	sc := &c.Supervisor
	r.get(k.Ports, text(func(v string) (err error) {
		sc.FirstPort, sc.LastPort, err = parsePorts(v)
		return err
	}))
	r.get(k.Bind, ip(&sc.Bind, false, false))
	r.get(k.MaxInstances, count(&sc.MaxInstances, 1, 1<<16))
	r.get(k.MaxPlayers, count(&sc.MaxPlayers, 1, 1<<16-1))
	r.get(k.Warm, count(&sc.Warm, 0, sc.MaxInstances)) // never more than may run
	r.get(k.Command, command(&sc.Command))
	r.get(k.Probe, oneOf(&sc.Probe, "", "teeworlds", "endpoint", "none"))
	r.get(k.PassSocket, boolean(&sc.PassSocket))
	// The supervisor refuses a zero duration (it means nothing); it is
	// refused here, with its line.
	r.get(k.SpawnTimeout, duration(&sc.SpawnTimeout, time.Millisecond))
	r.get(k.HealthTimeout, duration(&sc.HealthTimeout, minHealthTimeout))
	r.get(k.StopGrace, duration(&sc.StopGrace, time.Millisecond))
	r.get(k.PortCooldown, duration(&sc.PortCooldown, time.Millisecond))
	r.get(k.PortQuarantine, duration(&sc.PortQuarantine, time.Millisecond))
	r.get(k.SeatTTL, duration(&sc.SeatTTL, time.Millisecond))
	r.get(k.ReconnectGrace, duration(&sc.ReconnectGrace, time.Millisecond))
	r.get(k.SeatsPerAddr, count(&sc.SeatsPerAddress, 1, 1<<16-1))
	// A file that sizes max_instances sizes the networks' share with it.
	sc.RoomsPerNetwork = max(sc.MaxInstances/4, 1)
	r.get(k.RoomsPerNet, count(&sc.RoomsPerNetwork, 1, 1<<16)) // max_instances and above: no quota
	r.get(k.MaxWaiting, duration(&sc.MaxWaiting, time.Second))
	r.get(k.EmptyTimeout, duration(&sc.EmptyTimeout, time.Second))
	r.get(k.MaxLifetime, duration(&sc.MaxLifetime, 0)) // 0: no limit
	r.get(k.IDFile, text(func(v string) error { sc.IDFile = v; return nil }))
	r.get(k.StateDir, text(func(v string) error {
		if v != "" && !filepath.IsAbs(v) {
			return errors.New(`not an absolute path, e.g. "/var/lib/foyer", or "" to let rooms die with the lobby`)
		}
		sc.StateDir = v
		return nil
	}))
	r.get(k.DataDir, text(func(v string) error {
		if v != "" && !filepath.IsAbs(v) {
			return errors.New(`not an absolute path, e.g. "/var/lib/foyer/data", or "" for a fresh HOME in every room`)
		}
		sc.DataDir = v
		return nil
	}))
	r.get(k.ReattachGrace, duration(&sc.ReattachGrace, minReattachGrace))
	// Whether the host can enforce them is known once the lobby opens
	// its cgroups: the start refuses what it cannot.
	l := &sc.Limits
	r.get(k.MemoryMax, unlimitedOr(memory(&l.MemoryMax, minMemoryMax)))
	r.get(k.CPUMax, unlimitedOr(share(&l.CPUMax, minCPUMax, maxCPUMax)))
	r.get(k.PidsMax, unlimitedOr(count(&l.PidsMax, minPidsMax, maxPidsMax)))
	r.get(k.RoomUsers, text(func(v string) (err error) {
		sc.RoomUsers, err = roomuser.ParseRange(v)
		if err == nil && !sc.RoomUsers.IsZero() && sc.RoomUsers.Len() < sc.MaxInstances {
			err = fmt.Errorf("%d users for max_instances %d: each room needs one", sc.RoomUsers.Len(), sc.MaxInstances)
		}
		return err
	}))
	r.get(k.PassEnv, envNames(&sc.PassEnv))
}

// envNames reads a list of environment variable names.
func envNames(dst *[]string) value {
	return func(raw any) error {
		names, err := strs(raw, "a list of variable names")
		if err != nil {
			return err
		}
		for _, n := range names {
			if !envName.MatchString(n) {
				return fmt.Errorf("%q is not a variable name", n)
			}
		}
		*dst = names
		return nil
	}
}

// envName is an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Bounds of the room limits: below these a room cannot start (an
// instance runs about 10 threads, which count as processes, and holds
// about 15 MiB), or the kernel has no such setting.
const (
	minMemoryMax = 32 << 20
	minCPUMax    = 0.01 // the kernel's smallest quota: 1 ms per 100 ms
	maxCPUMax    = 1024
	minPidsMax   = 16
	maxPidsMax   = 1 << 22 // the kernel's most processes
)

// minReattachGrace is the shortest grace an orphaned room gets: enough
// for a lobby restarted at once to find it.
const minReattachGrace = 500 * time.Millisecond

type roomKeys struct {
	MinPlayers    toml.Primitive `toml:"min_players"`
	Countdown     toml.Primitive `toml:"countdown"`
	MatchDuration toml.Primitive `toml:"match_duration"`
	// IdleTimeout is the reference room's own idle limit of earlier
	// versions: every room now ends by [supervisor] empty_timeout, which
	// it sets when that key is not given, with a warning.
	IdleTimeout toml.Primitive `toml:"idle_timeout"`
}

func (k *roomKeys) apply(r *reader, c *Config) {
	rc := &c.Room
	r.get(k.MinPlayers, count(&rc.MinPlayers, 1, c.Supervisor.MaxPlayers))
	r.get(k.Countdown, duration(&rc.Countdown, 0))
	r.get(k.MatchDuration, duration(&rc.MatchDuration, time.Second))
	if r.line(k.IdleTimeout) > 0 {
		idle := c.Supervisor.EmptyTimeout
		r.get(k.IdleTimeout, duration(&idle, time.Second))
		r.warn("is [supervisor] empty_timeout now, which ends every room nobody is in, whatever its game", k.IdleTimeout)
		if !r.given("supervisor", "empty_timeout") {
			c.Supervisor.EmptyTimeout = idle
		}
	}
}

// maxKVBytes bounds [gg2] max_kv_bytes: a datagram holds no more.
const maxKVBytes = 64 << 10

// minReadRate is the least [gg2] min_read_rate: a slower floor would keep
// a list connection for minutes.
const minReadRate = 256

type webKeys struct {
	Listen toml.Primitive `toml:"listen"`
	Title  toml.Primitive `toml:"title"`
}

func (k *webKeys) apply(r *reader, c *Config) {
	r.get(k.Listen, addrPortOrOff(&c.Web.Listen))
	r.get(k.Title, text(func(v string) error {
		switch {
		case v == "" || len(v) > web.MaxTitle:
			return fmt.Errorf("must be 1 to %d bytes", web.MaxTitle)
		case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
			return errors.New("must be text on one line, without control characters")
		}
		c.Web.Title = v
		return nil
	}))
}

type adminKeys struct {
	Listen    toml.Primitive `toml:"listen"`
	Token     toml.Primitive `toml:"token"`
	TokenFile toml.Primitive `toml:"token_file"`
	Hosts     toml.Primitive `toml:"hosts"`
	Session   toml.Primitive `toml:"session"`
}

func (k *adminKeys) apply(r *reader, c *Config) {
	r.get(k.Listen, text(func(v string) error {
		if _, err := netip.ParseAddrPort(v); v != "" && err != nil {
			return errors.New(`not IP:port, e.g. "127.0.0.1:9477", or "" to disable`)
		}
		c.Admin.Listen = v
		return nil
	}))
	r.get(k.Token, text(func(v string) error {
		if err := setToken(&c.Admin.Token, v); err != nil || v == "" {
			return err
		}
		// The file holds the token: every user who can read it can
		// read the rooms (and, where rooms run as the lobby's user,
		// every room's game server).
		if fi, err := os.Stat(r.name); err == nil && fi.Mode().Perm()&0o004 != 0 {
			return fmt.Errorf("%s is readable by every user (mode %04o) and holds the token: chmod o-r %s, or move the token to token_file",
				r.name, uint32(fi.Mode().Perm()), r.name)
		}
		return nil
	}))
	r.get(k.TokenFile, text(func(v string) error {
		if v == "" {
			return nil
		}
		f, err := os.Open(v)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := private(f, v); err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(f, 4096))
		if err != nil {
			return err
		}
		return setToken(&c.Admin.Token, strings.TrimSpace(string(b)))
	}))
	r.get(k.Hosts, hostNames(&c.Admin.Hosts))
	r.get(k.Session, duration(&c.Admin.Session, time.Second))
}

// private says why the secret in f (named path) is not kept from other
// users: others may read it, or its group or others may write it, with
// the command that fixes it; nil if it is kept.
func private(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o026 != 0 {
		return fmt.Errorf("%s is readable by every user or writable by its group or others (mode %04o): chmod o-rw,g-w %s",
			path, uint32(perm), path)
	}
	return nil
}

// hostNames reads a list of host names, e.g. ["admin.example.net"].
func hostNames(dst *[]string) value {
	return func(raw any) error {
		names, err := strs(raw, "a list of host names")
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, err := netip.ParseAddr(n); err == nil {
				return fmt.Errorf("%q is an address: the listener answers to its own addresses anyway; list names only", n)
			}
			if !hostName.MatchString(n) {
				return fmt.Errorf("%q is not a host name (letters, digits, '-' and dots)", n)
			}
		}
		*dst = names
		return nil
	}
}

// hostName is a DNS name as a Host header carries it.
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)

// minToken is the shortest bearer token accepted: one worth guessing at
// over the network is no protection. `foyer token` makes one of 43.
const minToken = admin.MinToken

func setToken(dst *string, v string) error {
	if v != "" && len(v) < minToken {
		return fmt.Errorf("a token of %d characters is too short (at least %d): `foyer token` makes one", len(v), minToken)
	}
	if v != "" {
		*dst = v
	}
	return nil
}

type logKeys struct {
	Level  toml.Primitive `toml:"level"`
	Format toml.Primitive `toml:"format"`
}

func (k *logKeys) apply(r *reader, c *Config) {
	level := c.Log.Level.String()
	r.get(k.Level, oneOf(&level, "trace", "debug", "info", "warn", "error"))
	c.Log.Level, _ = zerolog.ParseLevel(level)
	r.get(k.Format, oneOf(&c.Log.Format, "console", "json"))
}

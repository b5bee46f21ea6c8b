// Package config loads config.toml: it applies the built-in defaults,
// decodes the file, validates every key and refuses the start with the
// file, line and reason of each problem, for example
//
//	config.toml:7: [supervisor] ports "9-3": first port above last
//
// Each section is one function that reads its keys through a section
// value (see section.go); adding a section means adding one such function
// to the sections table.
package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/announce"
	"github.com/foyerlobby/foyer/lobby/gg2"
	"github.com/foyerlobby/foyer/lobby/gunz"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/supervisor"
)

// Config is the whole of config.toml, ready to hand to the packages it
// configures.
type Config struct {
	Lobby      lobby.Config
	Limits     limit.Config // the rate limits of [lobby], shared by every edge
	GG2        GG2
	Gunz       Gunz
	Web        web.Config // [web]; the command gives it [gg2]'s lobby, game and public_addr
	Supervisor supervisor.Config
	Room       Room
	Admin      Admin
	Log        Log
}

// GG2 is the [gg2] section: the GG2-style front-end and the announcer
// that registers this Foyer's rooms with an upstream lobby. Each is on by
// itself: Enabled serves the port, a non-empty Announce.Upstream
// announces. Rate limits are [lobby]'s, shared by every edge.
type GG2 struct {
	Enabled  bool
	Server   gg2.Config
	Announce announce.Config
}

// Gunz is the [gunz] section: the GunZ locator front-end. Rate limits and
// the reply budget are [lobby]'s, shared by every edge.
type Gunz struct {
	Enabled bool
	Locator gunz.Config
}

// Room is the [room] section: the settings every reference room gets.
type Room struct {
	MinPlayers    int
	Countdown     time.Duration
	MatchDuration time.Duration
	IdleTimeout   time.Duration
}

// Settings returns the room settings in the form instances receive them.
func (r Room) Settings() map[string]string {
	return map[string]string{
		"min_players":    strconv.Itoa(r.MinPlayers),
		"countdown":      r.Countdown.String(),
		"match_duration": r.MatchDuration.String(),
		"idle_timeout":   r.IdleTimeout.String(),
	}
}

// Admin is the [admin] section: the admin HTTP listener.
type Admin struct {
	Listen string // "IP:port"; empty disables the listener
}

// Log is the [log] section.
type Log struct {
	Level  zerolog.Level
	Format string // "console" or "json"
}

// Default returns the configuration used when no file is given; config.toml
// at the repository root documents the same values.
func Default() Config {
	c := Config{
		Lobby:      lobby.DefaultConfig(),
		Limits:     limit.DefaultConfig(),
		GG2:        GG2{Server: gg2.DefaultConfig(), Announce: announce.DefaultConfig()},
		Gunz:       Gunz{Locator: gunz.DefaultConfig()},
		Web:        web.DefaultConfig(),
		Supervisor: supervisor.Defaults(),
		Room: Room{
			MinPlayers:    2,
			Countdown:     3 * time.Second,
			MatchDuration: 120 * time.Second,
			IdleTimeout:   60 * time.Second,
		},
		Admin: Admin{Listen: "127.0.0.1:9477"},
		Log:   Log{Level: zerolog.InfoLevel, Format: "console"},
	}
	c.Supervisor.Room = c.Room.Settings()
	return c
}

// sections reads each known section; the order is the order of checks
// between sections (a later section may look at an earlier one's values).
var sections = []struct {
	name string
	read func(*section, *Config)
}{
	{"lobby", readLobby},
	{"gg2", readGG2},
	{"gunz", readGunz},
	{"web", readWeb},
	{"supervisor", readSupervisor},
	{"room", readRoom},
	{"admin", readAdmin},
	{"log", readLog},
}

// Load reads the file at path over the defaults. A missing file is an
// error: a path given on purpose must exist.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return Parse(path, string(b))
}

// Parse decodes text, named name in error messages, over the defaults.
// Every problem found is reported, one per line, ordered by line.
func Parse(name, text string) (Config, error) {
	c := Default()
	var raw map[string]any
	md, err := toml.Decode(text, &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Config{}, &Error{File: name, Line: pe.Position.Line, Msg: pe.Message}
		}
		return Config{}, &Error{File: name, Msg: err.Error()}
	}
	l := &loader{name: name, text: text, raw: raw,
		used: map[string]bool{}, tables: map[string]bool{}, reported: map[string]bool{}}
	for _, s := range sections {
		if sec := l.section(s.name); sec != nil {
			s.read(sec, &c)
		}
	}
	l.refuseUnknown(md.Keys())
	c.Supervisor.Room = c.Room.Settings()
	if len(l.errs) == 0 {
		return c, nil
	}
	sort.SliceStable(l.errs, func(i, j int) bool { return l.errs[i].Line < l.errs[j].Line })
	errs := make([]error, len(l.errs))
	for i, e := range l.errs {
		errs[i] = e
	}
	return Config{}, errors.Join(errs...)
}

// Error is one refused key: where it is and why.
type Error struct {
	File string
	Line int // 0 when the position is unknown
	Msg  string
}

// Error formats as file:line: reason, the form editors jump to.
func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

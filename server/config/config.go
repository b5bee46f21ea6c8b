// Package config loads config.toml: it applies the built-in defaults,
// decodes the file, validates every key and refuses the start with the
// file, line and reason of each problem, for example
//
//	config.toml:7: [supervisor] ports "9-3": first port above last
//
// Each section is a struct of its keys (sections.go) whose apply method
// says, one line per key, how the key is read and where it goes; values.go
// has the readers, checks.go what no single value shows.
package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/cluster"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/announce"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/server/admin"
	"github.com/foyerlobby/foyer/supervisor"
)

// Config is the whole of config.toml, ready to hand to the packages it
// configures.
type Config struct {
	Lobby      lobby.Config
	Limits     limit.Config // the rate limits of [lobby], shared by every edge
	GG2        GG2
	Gunz       Gunz
	Web        web.Config        // [web]; the command gives it [gg2]'s lobby, game and public_addr
	Supervisor supervisor.Config // Room holds the [room] settings
	Room       refroom.Config
	Admin      Admin
	Log        Log
	Cluster    cluster.Config
	// Warnings are doubts about the file that do not stop the start, in
	// the file:line: reason form, to be logged.
	Warnings []string
}

// GG2 is the [gg2] section: the GG2-style front-end and the announcer
// that registers this Foyer's rooms with an upstream lobby. Each is on by
// itself: Enabled serves the port, a non-empty Announce.Upstream
// announces. Rate limits are [lobby]'s, shared by every edge.
type GG2 struct {
	Enabled  bool
	Server   gg2server.Config
	Announce announce.Config
}

// Gunz is the [gunz] section: the GunZ locator front-end. Rate limits and
// the reply budget are [lobby]'s, shared by every edge.
type Gunz struct {
	Enabled bool
	Locator gunzserver.Config
}

// Admin is the [admin] section: the admin HTTP listener.
type Admin struct {
	Listen string // "IP:port"; empty disables the listener
	// Token is the bearer token every request must carry, read from the
	// file token_file names or given as token; empty: none (loopback
	// only).
	Token string
	// Hosts are the names requests may give as their Host, besides the
	// listener's own addresses and localhost.
	Hosts []string
	// Session is how long the board's sign-in lasts.
	Session time.Duration
}

// Log is the [log] section.
type Log struct {
	Level  zerolog.Level
	Format string // "console" or "json"
}

// DefaultConfig returns the configuration used when no file is given; config.toml
// at the repository root documents the same values.
func DefaultConfig() Config {
	c := Config{
		Lobby:      lobby.DefaultConfig(),
		Limits:     limit.DefaultConfig(),
		GG2:        GG2{Server: gg2server.DefaultConfig(), Announce: announce.DefaultConfig()},
		Gunz:       Gunz{Locator: gunzserver.DefaultConfig()},
		Web:        web.DefaultConfig(),
		Supervisor: supervisor.DefaultConfig(),
		Room:       refroom.DefaultConfig(),
		Admin:      Admin{Listen: "127.0.0.1:9477", Session: admin.DefaultSession},
		Log:        Log{Level: zerolog.InfoLevel, Format: "console"},
		Cluster:    cluster.DefaultConfig(),
	}
	c.Supervisor.Room = c.Room.Settings()
	// foyer serve gives each room a user of its own where it can (root).
	c.Supervisor.RoomUsers = roomuser.Range{First: roomuser.DefaultFirst, Last: roomuser.DefaultLast}
	return c
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

// file is config.toml's sections, each kept raw so that a section that is
// not a table is refused without stopping the others.
type file struct {
	Lobby      toml.Primitive `toml:"lobby"`
	GG2        toml.Primitive `toml:"gg2"`
	Gunz       toml.Primitive `toml:"gunz"`
	Web        toml.Primitive `toml:"web"`
	Supervisor toml.Primitive `toml:"supervisor"`
	Room       toml.Primitive `toml:"room"`
	Admin      toml.Primitive `toml:"admin"`
	Log        toml.Primitive `toml:"log"`
	Cluster    toml.Primitive `toml:"cluster"`
}

// Parse decodes text, named name in error messages, over the defaults.
// Every bad value and unknown key is reported, one per line, ordered by
// line; the checks between values (checks.go) run once every value is
// good, since a refused value leaves its default in place.
func Parse(name, text string) (Config, error) {
	var f file
	md, err := toml.Decode(text, &f)
	if err != nil {
		return Config{}, syntaxError(name, text, err)
	}
	r := &reader{name: name, text: text, md: md, hidden: map[string]bool{}}
	c := DefaultConfig()
	var k keys
	// In this order: [room] reads the [supervisor] values it is bounded by.
	for _, s := range []struct {
		raw  toml.Primitive
		keys section
	}{
		{f.Lobby, &k.Lobby}, {f.GG2, &k.GG2}, {f.Gunz, &k.Gunz}, {f.Web, &k.Web}, {f.Supervisor, &k.Supervisor},
		{f.Room, &k.Room}, {f.Admin, &k.Admin}, {f.Log, &k.Log}, {f.Cluster, &k.Cluster},
	} {
		if r.table(s.raw, s.keys) {
			s.keys.apply(r, &c)
		}
	}
	c.Supervisor.Room = c.Room.Settings()
	// [lobby] socket_filter is every UDP edge's.
	c.GG2.Server.Filter, c.Gunz.Locator.Filter = c.Lobby.Filter, c.Lobby.Filter
	if len(r.errs) == 0 {
		k.check(r, &c)
		k.Cluster.check(r, &c)
	}
	r.unknown()
	if len(r.errs) > 0 {
		slices.SortStableFunc(r.errs, func(a, b *Error) int { return a.Line - b.Line })
		errs := make([]error, len(r.errs))
		for i, e := range r.errs {
			errs[i] = e
		}
		return Config{}, errors.Join(errs...)
	}
	for _, w := range r.warns {
		c.Warnings = append(c.Warnings, w.Error())
	}
	return c, nil
}

// syntaxError places a TOML syntax error. The lexer counts a line once it
// has read its newline, so an error found at a newline (an unclosed
// [table) is reported on the next line; the byte offset is exact.
func syntaxError(name, text string, err error) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: name, Msg: err.Error()}
	}
	line := pe.Position.Line
	if s := pe.Position.Start; s < len(text) {
		line = 1 + strings.Count(text[:s], "\n")
	}
	return &Error{File: name, Line: line, Msg: pe.Message}
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

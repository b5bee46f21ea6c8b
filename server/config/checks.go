package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/supervisor"
)

// check refuses what no single value shows: values that contradict each
// other, and sockets that would collide at the start (where the bind would
// fail with no line to point at, or worse, a room would take the lobby's
// port). It warns where the start would work but not as the file
// suggests.
func (k *keys) check(r *reader, c *Config) {
	sc, ks := &c.Supervisor, &k.Supervisor
	if sc.Probe != "" && len(sc.Command) == 0 {
		r.refuse("needs a command (the built-in room is probed over go-plugin)", ks.Probe)
	}
	// With probe set the server runs in a fresh private directory.
	if sc.Probe != "" && len(sc.Command) > 0 && strings.Contains(sc.Command[0], "/") && !filepath.IsAbs(sc.Command[0]) {
		r.refuse(fmt.Sprintf("%q is relative to the room's fresh working directory: give an absolute path", sc.Command[0]), ks.Command)
	}
	// A command that cannot run would fail every CREATE: the start is the
	// place to say so.
	if len(sc.Command) > 0 && (sc.Probe == "" || filepath.IsAbs(sc.Command[0]) || !strings.Contains(sc.Command[0], "/")) {
		if err := supervisor.Runnable(sc.Command[0]); err != nil {
			r.refuse(err.Error(), ks.Command)
		}
	}
	if sc.DataDir != "" && sc.Probe == "" {
		r.refuse("keeps a foreign server's files (probe set); a game built on Foyer's SDK keeps its own", ks.DataDir)
	}
	if err := sc.CheckRoomUsers(); err != nil {
		r.refuse(err.Error(), ks.Command, ks.RoomUsers, ks.StateDir, ks.DataDir)
	}
	if !sc.RoomUsers.IsZero() && roomuser.Active() {
		passwd, _ := os.ReadFile("/etc/passwd")
		group, _ := os.ReadFile("/etc/group")
		if err := sc.RoomUsers.Clashes(passwd, group); err != nil {
			r.refuse(err.Error(), ks.RoomUsers)
		}
	}
	if sc.StateDir != "" {
		if err := supervisor.CheckStateDir(sc.StateDir); err != nil {
			r.refuse(err.Error(), ks.StateDir)
		}
	} else if sc.ReattachGrace != supervisor.DefaultConfig().ReattachGrace {
		// config.toml shows the default: only a grace chosen on purpose
		// is one that goes unused.
		r.warn("has no effect without state_dir: rooms die with the lobby", ks.ReattachGrace)
	}
	if len(sc.Command) == 0 && sc.MaxPlayers > refroom.MaxPlayers {
		r.refuse(fmt.Sprintf("the built-in room seats at most %d (set command to run another game)", refroom.MaxPlayers), ks.MaxPlayers)
	}
	// Every instance, warm ones included, binds a port of the pool, and a
	// freed port rests port_cooldown while the warm pool refills at once:
	// max_instances plus warm ports keep warm rooms from waiting. A file
	// that writes max_instances contradicts itself; with the built-in one
	// the written pool sets the limit and the start works, so refusing
	// would be wrong: a warning.
	if pool := int(sc.LastPort) - int(sc.FirstPort) + 1; pool < sc.MaxInstances+sc.Warm {
		why := fmt.Sprintf("only %d ports (%d-%d) for max_instances %d", pool, sc.FirstPort, sc.LastPort, sc.MaxInstances)
		if sc.Warm > 0 {
			why += fmt.Sprintf(" plus warm %d", sc.Warm)
		}
		why += " (each instance binds one, and a freed port rests port_cooldown)"
		if r.line(ks.MaxInstances) > 0 {
			r.refuse(why, ks.Ports, ks.MaxInstances, ks.Warm)
		} else {
			r.warn(why, ks.Ports, ks.Warm)
		}
	}
	// The admin pages are for whoever runs the host (the rooms' processes,
	// the lobby's counters): off loopback, only to who holds the token.
	if ap, err := netip.ParseAddrPort(c.Admin.Listen); err == nil && !ap.Addr().Unmap().IsLoopback() && c.Admin.Token == "" {
		r.refuse("an admin address other than loopback needs token or token_file: the pages show the rooms' processes and the lobby's counters", k.Admin.Listen)
	}
	for _, ap := range c.Lobby.Listen {
		if why := unreachableRooms(ap.Addr(), sc.Bind); why != "" {
			r.refuse(why, k.Lobby.Listen, ks.Bind)
			break
		}
	}
	sockets := k.sockets(c)
	for i, a := range sockets {
		for _, b := range sockets[i+1:] {
			if port, ok := a.collides(b); ok {
				first, last := a, b
				if r.line(a.key) > r.line(b.key) {
					first, last = b, a
				}
				r.refuse(fmt.Sprintf("%s port %d collides with %s", last.proto(), port, first.name), last.key)
			}
		}
	}
}

// unreachableRooms says why a client that reached the lobby at lobby
// could not reach its room, whose port is bound on bind ("" when it
// can): a client is sent to its room by port, at the address it reached
// the lobby at.
func unreachableRooms(lobby, bind netip.Addr) string {
	lobby, bind = lobby.Unmap(), bind.Unmap()
	switch {
	case !bind.IsValid(), bind == netip.IPv6Unspecified():
		return "" // every address, of both families
	case bind == netip.IPv4Unspecified() && lobby.Is6():
		return fmt.Sprintf("clients reaching the lobby over IPv6 (%v) would be sent to rooms bound to IPv4 only (bind %v): "+
			`set bind = "" (every address) or "::"`, lobby, bind)
	case bind.IsUnspecified() || lobby == bind:
		return ""
	}
	return fmt.Sprintf("clients reaching the lobby at %v would be sent to rooms bound to %v only: "+
		`listen on %v, or set bind = "" (every address)`, lobby, bind, bind)
}

// A socket is what a part of Foyer binds, for the collision check.
type socket struct {
	key         toml.Primitive // the key that sets it
	name        string         // for messages: "[lobby] listen 0.0.0.0:7777"
	udp         bool           // else TCP
	addr        netip.Addr     // unspecified: every address of its family...
	dual        bool           // ...or of both
	first, last uint16         // port 0 (any free port) collides with nothing
}

// sockets lists what the start binds. A wildcard bound with Go's "udp" or
// "tcp" network is one IPv6 socket that takes IPv4 too (the GG2 edge, the
// admin pages, the instances); the lobby binds udp4 or udp6 as its address
// says and the GunZ locator udp4, so theirs covers one family: a lobby on
// both 0.0.0.0:7777 and [::]:7777 is fine. Foreign servers are assumed to
// bind {bind}, or every address when it is empty. TCP and UDP never
// collide: the admin pages may sit on a port of the (UDP) pool.
func (k *keys) sockets(c *Config) []socket {
	var out []socket
	add := func(key toml.Primitive, section string, udp bool, ap netip.AddrPort, dual bool) {
		a := ap.Addr().Unmap()
		out = append(out, socket{key, fmt.Sprintf("[%s] listen %v", section, ap), udp, a, dual && a.IsUnspecified(), ap.Port(), ap.Port()})
	}
	for _, ap := range c.Lobby.Listen {
		add(k.Lobby.Listen, "lobby", true, ap, false)
	}
	if c.GG2.Enabled { // registrations over UDP, lists over TCP, one port
		add(k.GG2.Listen, "gg2", true, c.GG2.Server.Listen, true)
		add(k.GG2.Listen, "gg2", false, c.GG2.Server.Listen, true)
	}
	if c.Gunz.Enabled {
		add(k.Gunz.Listen, "gunz", true, c.Gunz.Locator.Listen, false)
	}
	if ap, err := netip.ParseAddrPort(c.Admin.Listen); err == nil {
		add(k.Admin.Listen, "admin", false, ap, true)
	}
	sc := &c.Supervisor
	bind := sc.Bind
	if !bind.IsValid() {
		bind = netip.IPv6Unspecified()
	}
	return append(out, socket{k.Supervisor.Ports, fmt.Sprintf("[supervisor] ports %d-%d", sc.FirstPort, sc.LastPort),
		true, bind, bind.IsUnspecified(), sc.FirstPort, sc.LastPort})
}

// collides reports the first port a and b would both bind.
func (a socket) collides(b socket) (port uint16, ok bool) {
	first, last := max(a.first, b.first), min(a.last, b.last)
	if a.udp != b.udp || first == 0 || first > last {
		return 0, false
	}
	overlap := a.addr.Is4() == b.addr.Is4() && (a.addr == b.addr || a.addr.IsUnspecified() || b.addr.IsUnspecified())
	return first, overlap || a.dual || b.dual
}

func (s socket) proto() string {
	if s.udp {
		return "UDP"
	}
	return "TCP"
}

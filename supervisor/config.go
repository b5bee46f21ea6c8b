package supervisor

import (
	"net/netip"
	"time"

	"github.com/foyerlobby/foyer/internal/cgroup"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/room/roomtable"
)

// Config is the supervisor's part of config.toml. DefaultConfig has the
// defaults; New takes every field as given.
type Config struct {
	FirstPort, LastPort uint16 // ports = "30000-30999", inclusive
	MaxInstances        int    // default 64
	MaxPlayers          int    // default 4
	Warm                int    // started, Waiting instances kept ready; default 0
	// Command runs one instance; empty means the built-in reference room
	// (the "instance" subcommand of RoomProgram beside this executable,
	// or of this executable where RoomProgram is not there). For the
	// exec driver (Probe set) every argument has {port}, {room_id},
	// {max_players} and {bind} (Bind, empty for every address) replaced
	// with the room's values. Its program must exist and be executable.
	Command []string
	// Probe says how to learn a foreign server's status: "" for go-plugin
	// instances; for the exec driver, which runs Command under a keeper
	// (see Keeper) in a private directory that is also its HOME,
	// "teeworlds" (its extended server info, asked every second on its
	// port; HealthTimeout without an answer reaps it), "endpoint" (the
	// server reports to a local HTTP endpoint the keeper serves it, see
	// keeper.EnvEndpoint; HealthTimeout without a request reaps it) or
	// "none" (no status: Waiting while it runs, seats from reservations
	// only).
	Probe string
	// PassSocket (default true) has the supervisor bind each go-plugin
	// room's port (Probe empty) and pass the socket to its instance
	// (instancepb.EnvRoomSocket), which the SDK serves the game on: a
	// cold create is handed out once the process is forked and its
	// warden runs, while the instance starts, and what players send
	// meanwhile waits in the socket. Without it the instance binds the
	// port, and a cold create waits until its game is ready. A Command
	// not built with the Go SDK that binds its port itself needs it off.
	PassSocket bool
	// DataDir, when set (an absolute path), keeps a foreign server's
	// files (Probe set) from one room to the next: the rooms of one
	// Command share the directory DataDir/KEY (KEY a hash of Command) as
	// their HOME, while each keeps a fresh working directory of its own.
	// Rooms run as users of their own (RoomUsers, as root) cannot share
	// it: CheckRoomUsers refuses the two together.
	DataDir string
	// Keeper is the command of the per-room keeper that runs a foreign
	// server (Probe set), before its own arguments (keeper.Args); empty
	// means the "instance" subcommand of RoomProgram (or of this
	// executable), as for Command.
	Keeper         []string
	SpawnTimeout   time.Duration // default 5s
	HealthTimeout  time.Duration // default 6s
	StopGrace      time.Duration // default 5s
	PortCooldown   time.Duration // default 2s
	PortQuarantine time.Duration // default 30s
	// Room is handed to every instance in Start as its settings
	// (min_players, countdown, match_duration).
	Room map[string]string

	// SeatTTL is how long a seat held by Create or Join waits for its
	// player to connect; default 10s. A room whose creator does not come
	// within it, and no other player either, is stopped ("abandoned").
	SeatTTL time.Duration
	// ReconnectGrace is how long a room keeps the seat of a player it
	// lost who holds a seat token, for it to come back (a new NAT port,
	// another network); default 30s.
	ReconnectGrace time.Duration
	// SeatsPerAddress and RoomsPerNetwork are the table's quotas (see
	// roomtable.Config); default 2 and 16.
	SeatsPerAddress, RoomsPerNetwork int
	// MaxWaiting ends a room handed out this long ago whose match has
	// not begun, players or not ("max_waiting"); default 5m. Only rooms
	// that report their state (games built on the SDK) have one to end.
	MaxWaiting time.Duration
	// EmptyTimeout ends a room handed out that nobody has been in (no
	// player connected, no seat held) for this long ("idle"). Only rooms
	// that report their players have one to end: games built on the SDK
	// and servers with a probe; a server run with probe "none" cannot be
	// seen empty and ends at MaxLifetime, when it exits, or when stopped.
	// Default 60s.
	EmptyTimeout time.Duration
	// MaxLifetime ends every room handed out this long after it started,
	// whatever it is doing ("lifetime"); 0 sets no limit. Default 12h.
	MaxLifetime time.Duration
	// IDs confines the room ids to the range one host of a cluster
	// hands out (see package cluster); the zero value confines nothing.
	IDs roomtable.IDRange
	// CodeTaken, when set, reports whether another host of a cluster has
	// a room with that join code (see roomtable.Config).
	CodeTaken func(code string) bool
	// IDFile, when set, persists the room-id high-water mark so ids never
	// repeat across restarts, however fast rooms were created. Without it
	// ids start at the Unix time in seconds, which a restart repeats only
	// if the previous run created more than one room per second since its
	// start. With a StateDir and no IDFile, the mark is kept there
	// (STATE_DIR/ids).
	IDFile string
	// WarmMaxAge retires a warm instance not handed out within it: a
	// room handed out should be a fresh one. Default 30s.
	WarmMaxAge time.Duration
	// Bind is the address instances bind their game port on; the zero
	// value means every address.
	Bind netip.Addr

	// StateDir, when set, lets rooms outlive the supervisor: each room's
	// instance listens on a socket in its directory there and keeps
	// playing for ReattachGrace without a supervisor; a supervisor started
	// with the same StateDir within that time adopts every room (same id,
	// port, state, players and seats). Empty: rooms die with the
	// supervisor, and their private directories live in a temporary
	// directory of this supervisor's.
	StateDir string
	// ReattachGrace is how long an orphaned room keeps playing while it
	// waits for a supervisor; default 30s. Only with StateDir.
	ReattachGrace time.Duration

	// Limits bound what each room's processes use together: memory, a
	// share of a core, processes (see cgroup.Limits); zero fields are
	// unlimited. Every room runs in cgroups of its own where the host
	// allows it (root, or a systemd unit with Delegate=yes), and is
	// killed whole through them; New refuses limits the host cannot
	// enforce, and says why.
	Limits cgroup.Limits
	// RoomUsers are the user ids rooms run as, one per room, when this
	// process is root (see package roomuser): a room's every process
	// runs as its user, which no other room and not the lobby has, with
	// gid the same and no supplementary groups. The zero value, or a
	// lobby that is not root, runs rooms as the lobby's user (which the
	// start log says).
	RoomUsers roomuser.Range
	// Warden is the command of the rooms' wardens (RoomUsers; see
	// package roomuser), which end what a room leaves, before its own
	// arguments; empty means the "instance" subcommand of RoomProgram
	// (or of this executable), as for Command.
	Warden []string
	// PassEnv names the variables of this process's environment that
	// rooms get too. A room's environment is otherwise only PATH (this
	// process's), HOME (the room's directory) and what Foyer sets for
	// the room (see instancepb): nothing of the lobby's.
	PassEnv []string
	// NoCgroups runs rooms without cgroups even where the host has them:
	// as process groups, with this process the child subreaper of what
	// escapes them. It is for tests of that fallback; a host without
	// cgroups gets it anyway.
	NoCgroups bool
}

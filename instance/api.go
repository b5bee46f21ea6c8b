// Package instance is the SDK a game process uses to be a Foyer room, and
// the host side the supervisor uses to run one.
//
// API CONTRACT (being implemented; signatures are fixed, bodies are stubs).
package instance

import (
	"context"
	"net/netip"
	"os/exec"
	"time"

	"github.com/foyerlobby/foyer/packet"
	"github.com/rs/zerolog"
)

// Assignment is what the host hands an instance in Start.
type Assignment struct {
	RoomID     uint32
	Port       uint16
	MaxPlayers int
	Settings   map[string]string
}

// PlayerEventKind says whether a player came or went.
type PlayerEventKind uint8

const (
	NoPlayerEvent PlayerEventKind = iota
	PlayerConnected
	PlayerDisconnected
)

// Status is one report from an instance: sent on every change and as a
// heartbeat at least every 2 s.
type Status struct {
	State   packet.RoomState
	Players int
	Event   PlayerEventKind // NoPlayerEvent for heartbeats and state changes
	IP      netip.Addr      // the player's IP when Event is set
}

// Reporter is how a game tells the host about itself.
type Reporter interface {
	SetState(packet.RoomState)
	PlayerConnected(ip netip.Addr)
	PlayerDisconnected(ip netip.Addr)
}

// Game is what a game process implements.
type Game interface {
	// Start binds a.Port and starts the game; it returns once the game is
	// ready for players. The game runs until it reports Finished or ctx ends.
	Start(ctx context.Context, a Assignment, r Reporter) error
	// Stop ends the game; ctx's deadline is the grace period.
	Stop(ctx context.Context) error
}

// Serve runs g as an instance: it answers the plugin handshake and serves
// until the host stops it. Run by hand, it says what it is and exits.
func Serve(g Game) {}

// LaunchConfig says how to start one instance process.
type LaunchConfig struct {
	Cmd          *exec.Cmd     // Setpgid and Pdeathsig are set by Launch
	StartTimeout time.Duration // handshake deadline
	Log          zerolog.Logger
	// StartProcess starts cmd; the supervisor runs it on its one locked OS
	// thread so Pdeathsig outlives nothing. Nil means cmd.Start.
	StartProcess func(cmd *exec.Cmd) error
}

// Process is a running instance seen from the host.
type Process struct{}

// Launch starts the process and completes the plugin handshake.
func Launch(ctx context.Context, cfg LaunchConfig) (*Process, error) { return nil, nil }

// Start hands the instance its assignment; it returns once the game is ready.
func (p *Process) Start(ctx context.Context, a Assignment) error { return nil }

// Status delivers the instance's reports; it is closed when the stream ends.
func (p *Process) Status() <-chan Status { return nil }

// Stop asks the game to stop, then kills the process group after grace.
// Safe to call more than once.
func (p *Process) Stop(grace time.Duration) {}

// Kill sends SIGKILL to the process group at once. Idempotent.
func (p *Process) Kill() {}

// Exited is closed once the process has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return nil }

// ExitStatus is the exit code (or -1) and the signal name, if any; valid
// once Exited is closed.
func (p *Process) ExitStatus() (code int, signal string) { return 0, "" }

// PID is the process id.
func (p *Process) PID() int { return 0 }

//go:build linux

package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/buildinfo"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/lobby/gg2server"
	"github.com/foyerlobby/foyer/lobby/gunzserver"
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/server/admin"
)

// readiness tells whoever started foyer serve where it listens and when it
// stops: the service manager through sd_notify(3), and, with --ready-json,
// a test or script reading stdout.
type readiness struct {
	notify *net.UnixAddr // the service manager's socket; nil without one
	json   io.Writer     // --ready-json's stdout; nil without the flag
	log    zerolog.Logger
	// upgraded is set in the new process of an upgrade, which is not the
	// service's main process when it gets ready: the old one, which is,
	// tells the service manager (handedTo), and this one says nothing
	// until then.
	upgraded bool
}

// readyVersion numbers the ready line's format; it changes only when a
// field changes meaning or goes away.
const readyVersion = 1

// readyLine is the --ready-json line: every bound address, with the ports
// the system chose for port 0. Listeners that are off are left out.
type readyLine struct {
	Foyer   string `json:"foyer"` // always "ready": the line names itself
	Version int    `json:"version"`
	// FoyerVersion is the binary's version (foyer --version).
	FoyerVersion string           `json:"foyer_version"`
	PID          int              `json:"pid"`
	Lobby        []netip.AddrPort `json:"lobby"`
	Admin        *netip.AddrPort  `json:"admin,omitempty"`
	GG2          *netip.AddrPort  `json:"gg2,omitempty"` // UDP and TCP
	// GG2Legacy is the GG2 legacy protocol's port, UDP and TCP.
	GG2Legacy *netip.AddrPort `json:"gg2_legacy,omitempty"`
	Gunz      *netip.AddrPort `json:"gunz,omitempty"`
	Web       *netip.AddrPort `json:"web,omitempty"` // the public server list
}

// NotifySocket returns the address of the service manager's notification
// socket, and removes it from the environment: the rooms are this
// process's children and must not speak for the service. A socket that is
// neither a path nor an abstract name ("@name") is not one Foyer can use.
//
// sd_notify(3) is one datagram of "KEY=value" lines to that socket, a
// protocol systemd documents as stable; writing it here costs a dozen
// lines and no dependency.
func NotifySocket() *net.UnixAddr {
	path := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "@") {
		return nil
	}
	// Package net maps a leading "@" to Linux's abstract namespace.
	return &net.UnixAddr{Name: path, Net: "unixgram"}
}

// ready reports the listeners of a lobby that now serves.
func (r readiness) ready(l *lobby.Lobby, adm *admin.Server, edges []edge) {
	line := readyLine{Foyer: "ready", Version: readyVersion, FoyerVersion: buildinfo.Version(), PID: os.Getpid(), Lobby: l.Addrs()}
	if a := adm.Addr(); a.IsValid() {
		line.Admin = &a
	}
	for _, e := range edges {
		switch e := e.(type) {
		case *gg2server.Server:
			addrs := e.Addrs()
			line.GG2 = &addrs[0]
			if len(addrs) > 1 {
				line.GG2Legacy = &addrs[1]
			}
		case *gunzserver.Locator:
			line.Gunz = &e.Addrs()[0]
		case *web.Server:
			line.Web = &e.Addrs()[0]
		}
	}
	if !r.upgraded {
		r.send("READY=1")
	}
	if r.json != nil {
		b, _ := json.Marshal(line) // addresses and numbers: cannot fail
		r.json.Write(append(b, '\n'))
	}
	r.log.Info().Str("version", line.FoyerVersion).Bool("notified", r.notify != nil).Bool("ready_json", r.json != nil).Msg("ready")
}

// handedTo tells the service manager, from the main process, that the
// new process pid of an upgrade is the service's main process now, and
// ready; it returns once the manager has read it (BARRIER=1), or after
// barrierWait, so that the old process exits only when its successor is
// known. Only the main process speaks for the service (the unit's
// NotifyAccess=main): the rooms, and a new process before this, cannot.
func (r readiness) handedTo(pid int) {
	r.send(fmt.Sprintf("MAINPID=%d\nREADY=1", pid))
	r.barrier()
}

// barrierWait bounds the wait for the service manager to read what was
// sent before a barrier.
const barrierWait = 5 * time.Second

// barrier waits until the service manager has read every state sent
// before it, as sd_notify_barrier(3) does: it sends BARRIER=1 with the
// write end of a pipe, which the manager closes once it has read what
// came before; the read end then reads end of file.
func (r readiness) barrier() {
	if r.notify == nil {
		return
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		r.log.Warn().Err(err).Msg("sd_notify barrier")
		return
	}
	rd := os.NewFile(uintptr(p[0]), "notify barrier")
	defer rd.Close()
	// Package net has no way to send descriptors on an unconnected
	// datagram socket; x/sys/unix names the abstract "@" socket alike.
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Sendmsg(sock, []byte("BARRIER=1"), unix.UnixRights(p[1]), &unix.SockaddrUnix{Name: r.notify.Name}, 0)
		unix.Close(sock)
	}
	unix.Close(p[1])
	if err == nil {
		rd.SetReadDeadline(time.Now().Add(barrierWait))
		if _, err = rd.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			return
		}
	}
	r.log.Warn().Err(err).Str("socket", r.notify.Name).Msg("sd_notify barrier: the service manager did not confirm")
}

// stopping tells the service manager that the shutdown has begun.
func (r readiness) stopping() { r.send("STOPPING=1") }

// send writes one sd_notify state to the service manager, if there is
// one. A failure is logged and changes nothing else: the lobby serves
// whether or not its manager heard.
func (r readiness) send(state string) {
	if r.notify == nil {
		return
	}
	conn, err := net.DialUnix("unixgram", nil, r.notify)
	if err == nil {
		_, err = conn.Write([]byte(state))
		conn.Close()
	}
	if err != nil {
		r.log.Warn().Err(err).Str("state", state).Str("socket", r.notify.Name).Msg("sd_notify failed")
	}
}

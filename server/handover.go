//go:build linux

package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/sockets"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/supervisor"
)

// An upgrade (SIGHUP, systemctl reload) hands a running foyer serve's
// sockets and rooms to a new process of the binary now on disk, without a
// gap:
//
//	old                                   new (a child, same arguments)
//	starts new with the control socket
//	as fd 3, the listening sockets from
//	fd 4 on, their keys in $FOYER_UPGRADE
//	                                      reads its config; "prepared
//	                                      STATE_DIR" or "failed REASON"
//	freezes: LIST only (CREATE and JOIN
//	dropped, for the client to retry);
//	stores every room's seats in its
//	instance, lets go of the state_dir;
//	"go"
//	                                      adopts the rooms, binds the
//	                                      inherited sockets, serves (both
//	                                      read the sockets now); "serving"
//	MAINPID= and READY=1 to systemd
//	(only the main process may speak),
//	waits until systemd read them;
//	stops reading, exits 0
//
// A new process that fails before "serving" (bad config, crash, no answer
// within upgradeWait) is killed; the old one takes its rooms back and
// serves on, having logged why. One that loses its parent before "go"
// goes ahead, as a lobby restarted after a crash would.

// upgradeEnv carries the keys of the inherited sockets, ';'-separated, in
// the order of their descriptors from fd 4; its presence makes foyer
// serve the new process of an upgrade.
const upgradeEnv = "FOYER_UPGRADE"

// upgradeWait bounds each step the new process takes: its start up to
// "prepared", and its adoption of the rooms up to "serving".
const upgradeWait = 30 * time.Second

// releaseWait bounds how long the old process waits for the rooms being
// created when the upgrade begins.
const releaseWait = 10 * time.Second

// Successor is the new process's side of an upgrade: the control socket
// to the old process.
type Successor struct {
	ctl *os.File
	in  *bufio.Reader
}

// Inherited returns the successor side when this process was started by
// an upgrade, after taking the sockets it was handed; nil otherwise. It
// runs before the config is read, and before New binds anything.
func Inherited() (*Successor, error) {
	env, ok := os.LookupEnv(upgradeEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(upgradeEnv) // the rooms are no upgrade
	var keys []string
	if env != "" {
		keys = strings.Split(env, ";")
	}
	for fd := 3; fd < 4+len(keys); fd++ {
		// cli.Rooms this process starts must not inherit them in turn.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return nil, fmt.Errorf("upgrade: inherited descriptor %d: %w", fd, err)
		}
	}
	ctl := os.NewFile(3, "upgrade control")
	files := make([]*os.File, len(keys))
	for i := range keys {
		files[i] = os.NewFile(uintptr(4+i), "inherited socket")
	}
	if err := sockets.Inherit(files, keys); err != nil {
		return nil, err
	}
	return &Successor{ctl: ctl, in: bufio.NewReader(ctl)}, nil
}

// Failed tells the old process why this one cannot take over; nil does
// nothing.
func (s *Successor) Failed(err error) {
	if s != nil {
		fmt.Fprintf(s.ctl, "failed %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
}

// Prepared tells the old process that this one can take over rooms kept
// in stateDir, and waits for its go; nil does nothing. It returns early,
// and goes ahead, if the old process is gone: then nothing holds the rooms
// or the sockets.
func (s *Successor) Prepared(stateDir string) {
	if s == nil {
		return
	}
	fmt.Fprintf(s.ctl, "prepared %s\n", stateDir)
	_, _ = s.in.ReadString('\n') // "go", or the end of a dead parent's socket
}

// serving tells the old process that this one serves.
func (s *Successor) serving() {
	if s != nil {
		fmt.Fprintln(s.ctl, "serving")
		s.ctl.Close()
	}
}

// upgrade hands the sockets and rooms to a new process of the binary on
// disk, as the comment at the top says, and reports whether it did: then
// the caller stops reading its sockets and exits, leaving the rooms
// running; otherwise it serves on.
func (s *Server) upgrade() bool {
	stateDir, embedded, log := s.cfg.Supervisor.StateDir, s.cfg.Cluster.Embedded, s.log
	t0 := time.Now()
	switch {
	case stateDir == "":
		log.Warn().Msg("upgrade refused: the rooms can follow a new process only with [supervisor] state_dir; nothing changed")
		return false
	case embedded != "":
		// The NATS server binds its own port and locks its store: a
		// new process could take neither while this one runs it.
		log.Warn().Str("embedded", embedded).Msg("upgrade refused: this host runs the cluster's embedded NATS server, " +
			"which cannot be handed over; upgrades without a gap need NATS run on its own ([cluster] nats); nothing changed")
		return false
	}
	s.ready.send("RELOADING=1")
	if err := s.handOver(); err != nil {
		log.Error().Err(err).Msg("upgrade failed, serving on")
		s.ready.send("READY=1")
		return false
	}
	log.Info().Dur("took", time.Since(t0)).Msg("upgrade done: the new process serves")
	return true
}

// handOver runs the old process's side of an upgrade.
func (s *Server) handOver() error {
	stateDir, sup, l, log := s.cfg.Supervisor.StateDir, s.sup, s.lobby, s.log
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	files, keys, err := sockets.Files()
	if err != nil {
		return err
	}
	defer closeAll(files)
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "upgrade control"), os.NewFile(uintptr(pair[1]), "upgrade control")
	defer mine.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = append([]*os.File{theirs}, files...)
	cmd.Env = append(os.Environ(), upgradeEnv+"="+strings.Join(keys, ";"))
	if n := s.ready.notify; n != nil {
		cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+n.Name)
	}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	log.Info().Int("pid", cmd.Process.Pid).Str("binary", exe).Int("sockets", len(files)).Msg("upgrade: new process started")
	lines := readLines(mine)
	giveUp := func(why error) error {
		cmd.Process.Kill()
		if werr := <-exited; werr != nil {
			why = fmt.Errorf("%w (the new process: %v)", why, werr)
		}
		return why
	}

	line, err := await(lines, "prepared")
	if err != nil {
		return giveUp(err)
	}
	if dir := strings.TrimPrefix(line, "prepared "); dir != stateDir {
		return giveUp(fmt.Errorf("the new config's state_dir %q is not %q: the rooms could not follow (restart to change it)", dir, stateDir))
	}
	l.Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	err = sup.Release(ctx)
	cancel()
	if err != nil {
		l.Thaw()
		return giveUp(err)
	}
	if _, err := fmt.Fprintln(mine, "go"); err != nil {
		return resume(sup, l, giveUp(err))
	}
	if _, err := await(lines, "serving"); err != nil {
		return resume(sup, l, giveUp(err))
	}
	s.ready.handedTo(cmd.Process.Pid)
	return nil
}

// resume takes the rooms back after a handover that failed past "go".
func resume(sup *supervisor.Supervisor, l *lobby.Lobby, why error) error {
	if err := sup.Resume(); err != nil {
		why = fmt.Errorf("%w; taking the rooms back: %v", why, err)
	}
	l.Thaw()
	return why
}

// readLines delivers the lines of the control socket; the channel closes
// at its end.
func readLines(c io.Reader) <-chan string {
	ch := make(chan string, 4)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// await waits for the new process's line starting with want: it fails on
// "failed REASON", on the end of the control socket (the process exited),
// and after upgradeWait.
func await(lines <-chan string, want string) (string, error) {
	t := time.NewTimer(upgradeWait)
	defer t.Stop()
	select {
	case line, ok := <-lines:
		switch {
		case !ok:
			return "", fmt.Errorf("the new process ended before %q", want)
		case strings.HasPrefix(line, "failed "):
			return "", errors.New(strings.TrimPrefix(line, "failed "))
		case line == want || strings.HasPrefix(line, want+" "):
			return line, nil
		}
		return "", fmt.Errorf("the new process said %q, not %q", line, want)
	case <-t.C:
		return "", fmt.Errorf("no %q from the new process within %v", want, upgradeWait)
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

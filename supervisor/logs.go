package supervisor

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/room"
)

// A room writes its own log, room.log in its directory (see
// instance.Serve): its game's output, a foreign server's line by line.
// The room owns the file and may have made it anything, a link, a FIFO,
// a second name of another file: the lobby reads it only through
// openNoFollow, never blocking, a bounded tail of it. When the room is
// reaped the tail is kept in ROOT/logs/ID.log, the lobby's own (with a
// state directory, across restarts of the lobby), for the last keptLogs
// rooms.

// Bounds on the logs the lobby reads and keeps.
const (
	// logTail is the most of a log read for an answer, or kept.
	logTail = 256 << 10
	// keptLogs is how many logs of ended rooms are kept.
	keptLogs = 200
	// maxLogLine is the longest line of a log shown whole.
	maxLogLine = 4096
)

// logs is the directory of the logs of the rooms that ended.
func (d *roomDirs) logs() string { return filepath.Join(d.root, "logs") }

// logPath is room id's own log.
func (d *roomDirs) logPath(id uint32) string { return filepath.Join(d.path(id), instancepb.RoomLog) }

// keptPath is where room id's log is kept once it ended.
func (d *roomDirs) keptPath(id uint32) string {
	return filepath.Join(d.logs(), strconv.FormatUint(uint64(id), 10)+".log")
}

// keep keeps the tail of room id's log before its directory goes, and
// forgets the oldest kept logs past keptLogs. It returns the kept file,
// or "" when the room left no log it could read.
func (d *roomDirs) keep(id uint32) string {
	f, err := openNoFollow(d.logPath(id), d.owner(id))
	if err != nil {
		return ""
	}
	defer f.Close()
	tail, err := readTail(f, logTail)
	if err != nil {
		return ""
	}
	path := d.keptPath(id)
	if err := writeNew(path, tail); err != nil {
		return ""
	}
	d.prune()
	return path
}

// writeNew writes b to a file of its own at path, in a directory of the
// lobby's, replacing what was there (never through a link).
func writeNew(path string, b []byte) error {
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}

// prune removes the oldest kept logs past keptLogs.
func (d *roomDirs) prune() {
	ents, err := os.ReadDir(d.logs())
	if err != nil || len(ents) <= keptLogs {
		return
	}
	type kept struct {
		name string
		at   int64
	}
	var all []kept
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			all = append(all, kept{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b kept) int { return cmp.Compare(a.at, b.at) })
	for _, k := range all[:max(len(all)-keptLogs, 0)] {
		_ = os.Remove(filepath.Join(d.logs(), k.name))
	}
}

// RoomLog returns the last lines of room id's log, at most n: from its
// directory while it runs here, or as it was kept once it ended. Lines
// are cut at maxLogLine, and what is not text is shown as U+FFFD.
// Errors match room.ErrNoRoom when this host has no log of the room.
func (s *Supervisor) RoomLog(id uint32, n int) ([]byte, error) {
	s.mu.Lock()
	_, live := s.live[id]
	s.mu.Unlock()
	var f *os.File
	var err error = fs.ErrNotExist
	if live {
		f, err = openNoFollow(s.dirs.logPath(id), s.dirs.owner(id))
	}
	if errors.Is(err, fs.ErrNotExist) { // ended, or ending just now
		f, err = openNoFollow(s.dirs.keptPath(id), -1)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no log of room %d", room.ErrNoRoom, id)
	}
	if err != nil {
		return nil, fmt.Errorf("room %d's log: %w", id, err)
	}
	defer f.Close()
	tail, err := readTail(f, logTail)
	if err != nil {
		return nil, fmt.Errorf("room %d's log: %w", id, err)
	}
	return lastLines(tail, n), nil
}

// readTail reads the last max bytes of f, a regular file, from the start
// of a line; the file may grow meanwhile, but no more than max is read.
func readTail(f *os.File, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	from := fi.Size() - max
	if from < 0 {
		from = 0
	}
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, from, max), max))
	if err != nil {
		return nil, err
	}
	if from > 0 { // a line cut at the start is no line
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b, nil
}

// lastLines is the last n lines of b, each cut at maxLogLine and shown as
// text: invalid UTF-8 and control characters other than tab become
// U+FFFD, so that a room cannot send a terminal escapes.
func lastLines(b []byte, n int) []byte {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	lines = lines[max(len(lines)-n, 0):]
	var out strings.Builder
	for _, l := range lines {
		if len(l) > maxLogLine {
			l = l[:maxLogLine]
		}
		for _, r := range strings.ToValidUTF8(strings.TrimSuffix(l, "\r"), "\uFFFD") {
			if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				r = utf8.RuneError
			}
			out.WriteRune(r)
		}
		out.WriteByte('\n')
	}
	return []byte(out.String())
}

package roomtable

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// idBlock is how many ids one write of the high-water mark covers ahead,
// so the file is written about once per idBlock/2 rooms, not once per room.
const idBlock = 1024

// roomIDs hands out room ids: never 0, never twice, and not starting over
// when the lobby restarts.
//
// Without a state file the first id is the Unix time in seconds, so a
// restarted lobby starts above every id handed out before unless the
// previous run created more than one room per second on average since its
// start. With a state file (Config.IDFile) the first id is also above the
// persisted high-water mark, which is kept a block of ids ahead of the ids
// handed out, so even a kill -9 never lets an id come back. After 2^32-1
// ids the counter wraps, skipping 0; by then (the year 2106 for the clock
// seed) old ids are long gone from every client.
//
// The mark is written by a goroutine of its own (temporary file, fsync,
// rename, fsync of the directory), never under a lock a request waits on:
// take only reserves the next id under roomIDs' own short lock and asks
// for the next mark when half a block is left. A caller that got an id
// beyond the mark on disk (a burst of more than half a block of rooms
// within one write) can wait for it with durable.
type roomIDs struct {
	file string
	log  zerolog.Logger

	mu      sync.Mutex
	next    uint32
	written uint32        // highest id covered by the mark on disk
	wrote   chan struct{} // closed and replaced when a mark is written
	kick    chan struct{} // one token: a mark is wanted
	failed  error         // the last write's failure, nil once one succeeds
	idRange               // Config.IDs
}

// IDRange is a block of room ids, First to Last inclusive, that one host
// of a cluster alone hands out; Next is the first id to hand out.
type IDRange struct{ First, Last, Next uint32 }

// valid reports whether r is a range whose Next lies in it.
func (r IDRange) valid() bool {
	return r.First != 0 && r.Last >= r.First && r.Next >= r.First && r.Next <= r.Last
}

// idRange confines roomIDs to a range; the zero value confines nothing.
type idRange struct{ first, last uint32 }

// successor is the id after id: the next in the range, wrapping to its
// first, or without a range the next one but 0.
func (r idRange) successor(id uint32) uint32 {
	if r.last != 0 && id == r.last {
		return r.first
	}
	if id++; id == 0 {
		id = 1
	}
	return id
}

// holds reports whether id is one the range hands out.
func (r idRange) holds(id uint32) bool {
	return r.last == 0 || id >= r.first && id <= r.last
}

// newRoomIDs seeds the ids from the clock and, with a file, from the mark
// in it, and writes the first mark; the caller then runs writer. A file
// that cannot be read as a mark (empty, truncated, garbage) is reported
// and ignored: the clock still seeds above every earlier run that created
// less than a room per second. Only a mark that cannot be written is an
// error.
func newRoomIDs(now time.Time, file string, log zerolog.Logger) (*roomIDs, error) {
	ids := &roomIDs{next: uint32(now.Unix()), file: file, log: log,
		wrote: make(chan struct{}), kick: make(chan struct{}, 1)}
	if ids.next == 0 {
		ids.next = 1
	}
	if file == "" {
		return ids, nil
	}
	if hwm, err := readMark(file); err != nil {
		log.Warn().Err(err).Str("file", file).Uint32("seed", ids.next).Msg("room id mark unreadable, ids seeded from the clock")
	} else if after(hwm+1, ids.next) {
		ids.next = max(hwm+1, 1)
	}
	ids.written = ids.next - 1
	if err := ids.writeMark(ids.next + idBlock - 1); err != nil {
		return nil, err
	}
	return ids, nil
}

// after reports whether id a comes after b in the wrapping sequence of ids.
func after(a, b uint32) bool { return int32(a-b) > 0 }

// readMark reads the high-water mark in file; a file that does not exist
// holds none (0).
func readMark(file string) (uint32, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	hwm, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("id file %s: %w", file, err)
	}
	return uint32(hwm), nil
}

// take returns the next id. When a mark is in use, it asks the writer for
// the next one once half a block is left.
func (ids *roomIDs) take() uint32 {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	id := ids.next
	ids.next = ids.successor(id)
	if ids.file != "" && !after(ids.written, id+idBlock/2) {
		select {
		case ids.kick <- struct{}{}:
		default:
		}
	}
	return id
}

// confine makes the ids come from r alone, from its Next on.
func (ids *roomIDs) confine(r IDRange) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.idRange = idRange{first: r.First, last: r.Last}
	ids.next = r.Next
}

// above makes every id handed out from now on come after id: the ids of
// adopted rooms are never handed out again. With an id file the mark read
// at the start is above them already; without one the clock may not be.
// An id outside a confining range is none of the range's business.
func (ids *roomIDs) above(id uint32) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.holds(id) && !after(ids.next, id) {
		ids.next = ids.successor(id)
	}
}

// durable returns nil when id is covered by the mark on disk (or there is
// no file), else a channel closed when the next mark is written.
func (ids *roomIDs) durable(id uint32) <-chan struct{} {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.file == "" || !after(id, ids.written) {
		return nil
	}
	return ids.wrote
}

// writer writes the mark a block ahead of the ids handed out whenever take
// asks, until done; without a file it returns at once. A failed write is
// logged once per failure streak and retried on the next request.
func (ids *roomIDs) writer(done <-chan struct{}) {
	if ids.file == "" {
		return
	}
	for {
		select {
		case <-done:
			return
		case <-ids.kick:
		}
		ids.mu.Lock()
		mark := ids.next + idBlock - 1
		ids.mu.Unlock()
		err := ids.writeMark(mark)
		ids.mu.Lock()
		if err != nil && ids.failed == nil {
			ids.log.Error().Err(err).Str("file", ids.file).Msg("room id mark not persisted")
		}
		ids.failed = err
		ids.mu.Unlock()
	}
}

// writeMark makes mark the high-water mark on disk: a temporary file,
// synced, renamed over the file, and the directory synced, so a crash at
// any point leaves the old mark or the new one, never an empty file.
func (ids *roomIDs) writeMark(mark uint32) error {
	tmp, err := writeSynced(ids.file, []byte(strconv.FormatUint(uint64(mark), 10)+"\n"))
	if err == nil {
		err = os.Rename(tmp, ids.file)
	}
	if err != nil && tmp != "" {
		os.Remove(tmp)
	}
	if err == nil {
		err = syncDir(filepath.Dir(ids.file))
	}
	if err != nil {
		return fmt.Errorf("room ids: id file: %w", err)
	}
	ids.mu.Lock()
	if after(mark, ids.written) {
		ids.written = mark
	}
	close(ids.wrote)
	ids.wrote = make(chan struct{})
	ids.mu.Unlock()
	return nil
}

// writeSynced writes b to a new temporary file next to path, syncs it to
// disk and returns its name (empty if none was made). The name is unique,
// so two writers never share it.
func writeSynced(path string, b []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}

// syncDir makes the entries of dir (a rename) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

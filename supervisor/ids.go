package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// idBlock is how many ids one write of the high-water mark reserves, so the
// file is written once per idBlock rooms, not once per room.
const idBlock = 1024

// roomIDs hands out room ids: never 0, never twice, and not starting over
// when the lobby restarts.
//
// Without a state file the first id is the Unix time in seconds, so a
// restarted lobby starts above every id handed out before unless the
// previous run created more than one room per second on average since its
// start. With a state file (Config.IDFile) the first id is also above the
// persisted high-water mark, which is written a block of ids ahead, so even
// a kill -9 never lets an id come back. After 2^32-1 ids the counter wraps,
// skipping 0; by then (the year 2106 for the clock seed) old ids are long
// gone from every client.
//
// roomIDs is not safe for concurrent use; the supervisor guards it.
type roomIDs struct {
	next uint32
	left int // ids still covered by the mark in the file
	file string
}

func newRoomIDs(now time.Time, file string) (*roomIDs, error) {
	ids := &roomIDs{next: uint32(now.Unix()), file: file}
	if file == "" {
		return ids, nil
	}
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		hwm, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if perr != nil {
			return nil, fmt.Errorf("supervisor: id file %s: %w", file, perr)
		}
		if uint32(hwm) >= ids.next {
			ids.next = uint32(hwm) + 1
		}
	case !os.IsNotExist(err):
		return nil, fmt.Errorf("supervisor: id file: %w", err)
	}
	if ids.next == 0 {
		ids.next = 1
	}
	return ids, ids.reserve()
}

// reserve records the last id of the next block as the high-water mark,
// atomically (write, then rename), so a crash mid-write leaves the old mark.
func (ids *roomIDs) reserve() error {
	hwm := ids.next + idBlock - 1 // wraps with the ids
	tmp := ids.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(uint64(hwm), 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("supervisor: id file: %w", err)
	}
	if err := os.Rename(tmp, ids.file); err != nil {
		return fmt.Errorf("supervisor: id file: %w", err)
	}
	ids.left = idBlock
	if dir, err := os.Open(filepath.Dir(ids.file)); err == nil {
		dir.Sync() // best effort: make the rename durable
		dir.Close()
	}
	return nil
}

// take returns the next id. A failure to persist the mark is returned with
// the id, which is still unique within this run.
func (ids *roomIDs) take() (uint32, error) {
	var err error
	if ids.file != "" {
		if ids.left == 0 {
			err = ids.reserve() // on failure, retried by the next take
		}
		if ids.left > 0 {
			ids.left--
		}
	}
	id := ids.next
	ids.next++
	if ids.next == 0 {
		ids.next = 1
	}
	return id, err
}

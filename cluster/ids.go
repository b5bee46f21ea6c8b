package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Room ids are unique across the cluster without asking anyone per room:
// each host claims a range of 2^20 ids once, by creating its key in the
// ids bucket (a create fails if the key exists, so two hosts never hold
// one range), and keeps it under its name for ever after. Within its
// range a host starts above the high-water mark it last wrote there, or
// where the clock puts it (as a standalone host seeds its ids), and
// writes the mark a block of ids ahead of the ids it hands out, one write
// per markAhead/2 rooms.
const (
	rangeBits = 20
	rangeSize = 1 << rangeBits
	// maxRange is the last range; range 0 holds id 0, which is never a
	// room, and is left out.
	maxRange  = 1<<(32-rangeBits) - 1
	markAhead = 1024
)

// idRange is the range of ids a host holds.
type idRange struct {
	n                 int
	first, last, next uint32
	// mark is the high-water mark last written; only the publisher
	// moves it.
	mark uint32
}

// rangeRecord is the value of ranges.<n>.
type rangeRecord struct {
	Host string `json:"host"`
	Mark uint32 `json:"mark"` // every id handed out is at or below it, in the range's order
}

// ownerRecord is the value of owners.<host>.
type ownerRecord struct {
	Range int `json:"range"`
}

func rangeKey(n int) string         { return "ranges." + strconv.Itoa(n) }
func ownerKey(host string) string   { return "owners." + host }
func (r idRange) pos(id uint32) int { return int(id - r.first) }

// wrap is the id at position pos of the range, modulo its size.
func (r idRange) wrap(pos int) uint32 { return r.first + uint32(pos%rangeSize) }

// markFor returns the mark to write once id is handed out, and whether
// the one written (mark) no longer covers it with half a block to spare.
func (r idRange) markFor(id, mark uint32) (uint32, bool) {
	ahead := (r.pos(mark) - r.pos(id) + rangeSize) % rangeSize
	if ahead >= markAhead/2 && ahead < rangeSize/2 {
		return mark, false
	}
	return r.wrap(r.pos(id) + markAhead), true
}

// claimRange finds the range host holds, or claims the lowest free one,
// and writes its first mark.
func claimRange(ctx context.Context, js jetstream.JetStream, host string, now time.Time) (idRange, error) {
	kv, err := js.KeyValue(ctx, idsBucket)
	if err != nil {
		return idRange{}, err
	}
	n, rec, err := heldRange(ctx, kv, host)
	if err != nil {
		return idRange{}, err
	}
	if n == 0 {
		if n, err = newRange(ctx, kv, host); err != nil {
			return idRange{}, err
		}
	}
	r := idRange{n: n, first: uint32(n) << rangeBits}
	r.last = r.first | (rangeSize - 1)
	r.next = r.wrap(int(now.Unix() % rangeSize))
	if rec.Mark != 0 {
		r.next = r.wrap(r.pos(rec.Mark) + 1)
	}
	r.mark = r.wrap(r.pos(r.next) + markAhead - 1)
	if err := putRange(ctx, kv, n, rangeRecord{Host: host, Mark: r.mark}); err != nil {
		return idRange{}, err
	}
	return r, nil
}

// heldRange returns the range host holds and its record; 0 if none.
func heldRange(ctx context.Context, kv jetstream.KeyValue, host string) (int, rangeRecord, error) {
	e, err := kv.Get(ctx, ownerKey(host))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, rangeRecord{}, nil
	}
	if err != nil {
		return 0, rangeRecord{}, err
	}
	var o ownerRecord
	if json.Unmarshal(e.Value(), &o) != nil || o.Range < 1 || o.Range > maxRange {
		return 0, rangeRecord{}, nil // unreadable: claim anew
	}
	e, err = kv.Get(ctx, rangeKey(o.Range))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, rangeRecord{}, err
	}
	var rec rangeRecord
	if err == nil && (json.Unmarshal(e.Value(), &rec) != nil || rec.Host != host) {
		return 0, rangeRecord{}, nil // another host's now: claim anew
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// The bucket lost it (a server started afresh): claim it back.
		b, _ := json.Marshal(rangeRecord{Host: host})
		if _, err := kv.Create(ctx, rangeKey(o.Range), b); err != nil {
			return 0, rangeRecord{}, nil
		}
	}
	return o.Range, rec, nil
}

// newRange claims the lowest range no host holds.
func newRange(ctx context.Context, kv jetstream.KeyValue, host string) (int, error) {
	held := map[string]bool{}
	keys, err := kv.ListKeysFiltered(ctx, "ranges.*")
	if err != nil {
		return 0, err
	}
	for k := range keys.Keys() {
		held[k] = true
	}
	b, _ := json.Marshal(rangeRecord{Host: host}) // plain values: cannot fail
	for n := 1; n <= maxRange; n++ {
		if held[rangeKey(n)] {
			continue
		}
		_, err := kv.Create(ctx, rangeKey(n), b)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue // claimed meanwhile
		}
		if err != nil {
			return 0, err
		}
		ob, _ := json.Marshal(ownerRecord{Range: n})
		if _, err := kv.Put(ctx, ownerKey(host), ob); err != nil {
			return 0, err
		}
		return n, nil
	}
	return 0, fmt.Errorf("all %d ranges of room ids are held", maxRange)
}

func putRange(ctx context.Context, kv jetstream.KeyValue, n int, rec rangeRecord) error {
	b, _ := json.Marshal(rec) // plain values: cannot fail
	_, err := kv.Put(ctx, rangeKey(n), b)
	return err
}

// reclaim makes sure, at the start of a session, that the bucket still
// says this host holds its range: a server that lost its store has it
// written back. A range another host holds by then (it claimed it while
// the store was empty) is logged: ids may collide until one of the two
// hosts gets another name.
func (p *publisher) reclaim(ctx context.Context) error {
	c := p.c
	b, _ := json.Marshal(rangeRecord{Host: c.me, Mark: c.ids.mark}) // plain values: cannot fail
	return p.op(ctx, func(ctx context.Context) error {
		e, err := p.ids.Get(ctx, rangeKey(c.ids.n))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			if _, err := p.ids.Create(ctx, rangeKey(c.ids.n), b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				return err
			}
			ob, _ := json.Marshal(ownerRecord{Range: c.ids.n})
			_, err := p.ids.Put(ctx, ownerKey(c.me), ob)
			return err
		case err != nil:
			return err
		}
		var rec rangeRecord
		if json.Unmarshal(e.Value(), &rec) != nil || rec.Host != c.me {
			c.log.Error().Int("range", c.ids.n).Str("held_by", rec.Host).
				Msg("cluster: this host's range of room ids is held by another host too: ids may collide; give one of them another name")
		}
		return nil
	})
}

// advance writes the range's mark ahead of id, a room id just handed
// out, when id comes within half a block of it.
func (p *publisher) advance(ctx context.Context, id uint32) error {
	ids := &p.c.ids
	if id < ids.first || id > ids.last {
		return nil
	}
	mark, due := ids.markFor(id, ids.mark)
	if !due {
		return nil
	}
	if err := p.op(ctx, func(ctx context.Context) error {
		return putRange(ctx, p.ids, ids.n, rangeRecord{Host: p.c.me, Mark: mark})
	}); err != nil {
		return err
	}
	ids.mark = mark
	return nil
}

package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMarkFor(t *testing.T) {
	r := idRange{n: 1, first: 1 << 20, last: 1<<21 - 1}
	for _, tc := range []struct {
		id, mark, want uint32
		due            bool
	}{
		{r.first, r.first + 1023, r.first + 1023, false},           // a block ahead
		{r.first + 600, r.first + 1023, r.first + 1624, true},      // less than half a block left
		{r.first + 2000, r.first + 1023, r.first + 3024, true},     // past it
		{r.last - 10, r.first + 100, r.first + 1013, true},         // the mark wraps in the range
		{r.first + 5, r.last - 100, r.first + 5 + markAhead, true}, // a wrapped id is past an old mark
	} {
		mark, due := r.markFor(tc.id, tc.mark)
		if mark != tc.want || due != tc.due {
			t.Errorf("markFor(%d, %d) = %d, %v; want %d, %v", tc.id-r.first, tc.mark-r.first, mark-r.first, due, tc.want-r.first, tc.due)
		}
	}
}

// TestRangesClaimed: hosts get ranges of their own, a host gets its own
// back above the mark it wrote, and the mark keeps ahead of the ids.
func TestRangesClaimed(t *testing.T) {
	_, _, url := natsServer(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: idsBucket}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	a, err := claimRange(ctx, js, "a", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := claimRange(ctx, js, "b", now)
	if err != nil {
		t.Fatal(err)
	}
	if a.n != 1 || b.n != 2 || a.first != 1<<20 || a.last != 1<<21-1 || a.next != a.first+1700000000%rangeSize {
		t.Fatalf("ranges a %+v, b %+v; want 1 and 2, a starting where the clock puts it", a, b)
	}
	again, err := claimRange(ctx, js, "a", now)
	if err != nil || again.n != 1 || again.next != a.next+markAhead {
		t.Fatalf("a again: %+v, %v; want range 1 from %d, above the mark", again, err, a.next+markAhead)
	}

	// A host handing out ids writes the mark ahead of them.
	c, local := join(t, testConfig(url, "c", public), 0)
	first, _, next := c.IDs()
	fill(local, 700)
	kv, _ := js.KeyValue(ctx, idsBucket)
	eventually(t, "the mark ahead of 700 ids", func() bool {
		e, err := kv.Get(ctx, rangeKey(int(first>>rangeBits)))
		var rec rangeRecord
		return err == nil && json.Unmarshal(e.Value(), &rec) == nil && rec.Host == "c" && rec.Mark >= next+699+markAhead/2
	})
}

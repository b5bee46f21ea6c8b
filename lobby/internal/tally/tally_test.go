package tally

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/internal/udptest"
)

// Counts by name, by handle or by Add, add up across goroutines; a
// snapshot shows the names counted and the ones shown, zero or not.
func TestSetCountsByNameAndHandle(t *testing.T) {
	var s Set
	if got := s.Snapshot(); got == nil || len(got) != 0 {
		t.Fatalf("empty set: %v", got)
	}
	shown := s.Show("list", "join")
	hot := s.Counter("rate_limited")
	quiet := s.Counter("never")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				shown[0].Add(1)
				hot.Add(1)
				s.Add("rate_limited")
				s.Add("crc")
			}
		})
	}
	wg.Wait()
	want := map[string]uint64{"list": 4000, "join": 0, "rate_limited": 8000, "crc": 4000}
	if got := s.Snapshot(); !maps.Equal(got, want) {
		t.Errorf("snapshot %v, want %v", got, want)
	}
	if quiet.Load() != 0 || s.Counter("crc").Load() != 4000 || s.Counter("list") != shown[0] {
		t.Errorf("handles: never %d, crc %d, list %p vs %p", quiet.Load(), s.Counter("crc").Load(), s.Counter("list"), shown[0])
	}
	// Showing a name already counted keeps its count.
	s.Show("never", "crc")
	want["never"] = 0
	if got := s.Snapshot(); !maps.Equal(got, want) {
		t.Errorf("after Show: %v, want %v", got, want)
	}
}

// Names appear while other goroutines count: none of the counts made
// meanwhile is lost.
func TestSetNewNamesWhileCounting(t *testing.T) {
	var s Set
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			for range 500 {
				s.Add(n)
				s.Add("shared")
			}
		})
	}
	wg.Wait()
	got := s.Snapshot()
	for _, n := range names {
		if got[n] != 500 {
			t.Errorf("%s: %d, want 500", n, got[n])
		}
	}
	if got["shared"] != 500*uint64(len(names)) {
		t.Errorf("shared: %d", got["shared"])
	}
}

type reportLine struct {
	Level, Message string
	Interval       float64
	Dropped        map[string]uint64
	Limited        *uint64
}

func lines(t *testing.T, logs *logtest.Buffer) []reportLine {
	t.Helper()
	var out []reportLine
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if l == "" {
			continue
		}
		var r reportLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// Each report line says what grew since the one before, and a quiet
// interval says nothing.
func TestReportLinesAreDeltas(t *testing.T) {
	var logs logtest.Buffer
	log := zerolog.New(&logs)
	var drops Set
	var limited Counter
	r := newReporter([]Field{Names("dropped", &drops), Total("limited", &limited)})
	r.line(log, time.Second, "drops")
	if got := lines(t, &logs); len(got) != 0 {
		t.Fatalf("a line before anything was counted: %+v", got)
	}
	for range 1000 {
		drops.Add("crc")
	}
	drops.Add("short")
	r.line(log, time.Second, "drops")
	r.line(log, time.Second, "drops") // nothing new
	limited.Add(1)
	drops.Add("crc")
	r.line(log, time.Second, "drops")
	got := lines(t, &logs)
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(got), logs.String())
	}
	first, second := got[0], got[1]
	if first.Level != "info" || first.Message != "drops" || first.Interval != 1000 ||
		!maps.Equal(first.Dropped, map[string]uint64{"crc": 1000, "short": 1}) || first.Limited == nil || *first.Limited != 0 {
		t.Errorf("first line %+v", first)
	}
	if !maps.Equal(second.Dropped, map[string]uint64{"crc": 1}) || second.Limited == nil || *second.Limited != 1 {
		t.Errorf("second line %+v", second)
	}
}

// Report runs on its own clock and stops with its context.
func TestReportLogsUntilDone(t *testing.T) {
	var logs logtest.Buffer
	var drops Set
	for range 100 {
		drops.Add("short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Report(ctx, zerolog.New(&logs), 10*time.Millisecond, "drops", Names("dropped", &drops))
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `"short":100`); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no report line:\n%s", logs.String())
		}
	}
	cancel()
	<-done
}

// A read loop skips and counts transient errors, and ends cleanly when
// its socket is closed.
func TestReadLoopSkipsErrorsUntilClosed(t *testing.T) {
	c := udptest.Listen(t, "127.0.0.1")
	udptest.Send(t, c, c.LocalAddr().(*net.UDPAddr).AddrPort(), []byte("hi"))
	buf := make([]byte, 16)
	// A datagram, then maxReadErrors-1 failures (one short of giving
	// up), a success that starts the run again, as many failures again,
	// and the close.
	var script []string
	script = append(script, "datagram")
	for range 2 {
		for range maxReadErrors - 1 {
			script = append(script, "fail")
		}
		script = append(script, "ok")
	}
	script[len(script)-1] = "close"
	var errs Counter
	step, failed := 0, 0
	err := ReadLoop(&errs, func() error {
		do := script[step]
		step++
		switch do {
		case "datagram":
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
		case "fail":
			c.SetReadDeadline(time.Now().Add(-time.Second))
			failed++
		case "ok":
			return nil
		case "close":
			c.Close()
		}
		_, _, err := c.ReadFromUDPAddrPort(buf)
		if do == "fail" && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past its deadline: %v", err)
		}
		return err
	})
	if err != nil || step != len(script) || errs.Load() != uint64(failed) {
		t.Errorf("ReadLoop = %v after %d of %d steps, %d errors counted of %d", err, step, len(script), errs.Load(), failed)
	}
}

// A socket that only fails ends its loop with the error after
// maxReadErrors in a row.
func TestReadLoopGivesUpOnFailingSocket(t *testing.T) {
	c := udptest.Listen(t, "127.0.0.1")
	c.SetReadDeadline(time.Now().Add(-time.Second))
	var errs Counter
	buf := make([]byte, 16)
	err := ReadLoop(&errs, func() error {
		_, _, err := c.ReadFromUDPAddrPort(buf)
		return err
	})
	if !errors.Is(err, os.ErrDeadlineExceeded) || errs.Load() != maxReadErrors {
		t.Errorf("ReadLoop = %v after %d errors, want a deadline error after %d", err, errs.Load(), maxReadErrors)
	}
}

// BenchmarkCount is the cost counting adds to a datagram.
func BenchmarkCount(b *testing.B) {
	var s Set
	c := s.Counter("rate_limited")
	s.Add("crc")
	b.Run("handle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Add(1)
		}
	})
	b.Run("by-name", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Add("crc")
		}
	})
}

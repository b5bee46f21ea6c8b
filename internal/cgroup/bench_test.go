package cgroup

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/requiretest"
)

// BenchmarkRoomLifecycle is what a room's cgroup adds to its process's
// life: "process" starts /bin/true and waits for it; the others also
// create the room's cgroups with all three limits, start it in them, kill
// what is left and remove them, in each way this host allows. p50-ns is
// the median of one life.
func BenchmarkRoomLifecycle(b *testing.B) {
	var ds []time.Duration
	measure := func(b *testing.B, life func(i int)) {
		ds = ds[:0]
		i := 0
		for b.Loop() {
			t0 := time.Now()
			life(i)
			ds = append(ds, time.Since(t0))
			i++
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
	}
	b.Run("process", func(b *testing.B) {
		measure(b, func(int) {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
	for name, o := range variants(b) {
		b.Run("cgroup "+name, func(b *testing.B) {
			requiretest.Cgroups(b)
			tr := openTree(b, o)
			l := Limits{MemoryMax: 256 << 20, CPUMax: 0.5, PidsMax: 64}
			measure(b, func(i int) {
				r, err := tr.Create(fmt.Sprintf("room-%d", i), l)
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command("true")
				if err := r.Start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				if err := r.Kill(context.Background()); err != nil {
					b.Fatal(err)
				}
				if err := r.Remove(); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

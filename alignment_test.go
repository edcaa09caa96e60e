package weir_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/datagen"
)

// alignmentRun runs two generator sources of very different event-time
// speeds into one sink: slow emits timestamps 0, 1, 2, ... ms at a limited
// rate, fast 0, step, 2*step, ... as fast as it can. Both use punctuated
// watermarks (highest timestamp - 1). It returns the largest lead of a
// fast timestamp over the highest slow timestamp generated before it, while
// slow has not generated its last record (measured in the generators'
// functions, which run as the readers make each batch; after slow's end
// the group lets fast go), and the number of records of each source that
// reached the sink.
func alignmentRun(t *testing.T, align bool, slowN, fastN, step int64, maxDrift time.Duration) (lead, slowGot, fastGot int64) {
	t.Helper()
	var slowMax, maxLead atomic.Int64
	slowMax.Store(-1)
	maxLead.Store(-1 << 62)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 10 * time.Millisecond})
	strategy := func(ts func(int64) int64) weir.WatermarkStrategy[int64] {
		ws := weir.WatermarkStrategy[int64]{Timestamp: ts, Generator: weir.PunctuatedWatermarks[int64](0)}
		if align {
			ws = ws.WithWatermarkAlignment("g", maxDrift, 10*time.Millisecond)
		}
		return ws
	}
	slow := weir.FromSourceWithWatermarks[int64, datagen.Split](env, datagen.Generator[int64]{Count: slowN, RatePerSecond: float64(slowN) * 2,
		Fn: func(i int64) int64 {
			if i > slowMax.Load() {
				slowMax.Store(i)
			}
			return i
		}}, strategy(func(v int64) int64 { return v }), "slow")
	fast := weir.FromSourceWithWatermarks[int64, datagen.Split](env, datagen.Generator[int64]{Count: fastN,
		Fn: func(i int64) int64 {
			ts := i * step
			if s := slowMax.Load(); s < slowN-1 {
				if l := ts - s; l > maxLead.Load() {
					maxLead.Store(l)
				}
			}
			return -ts - 1 // fast records are negative, so the sink tells them apart
		}}, strategy(func(v int64) int64 { return -(v + 1) }), "fast")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := weir.ExecuteAndCollect(ctx, env, weir.Union(slow, fast), "alignment")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if v < 0 {
			fastGot++
		} else {
			slowGot++
		}
	}
	return maxLead.Load(), slowGot, fastGot
}

// Watermark alignment: with a group, the fast source never generates a
// record more than maxDrift + one batch check's worth (64 records of step
// ms, the built-in readers' ShouldYield granularity) ahead of the slow
// source's highest timestamp, and both finish with all their records (no
// deadlock: after slow ends, fast goes on alone). The control without
// alignment shows that the drift is otherwise large, so the bound is not
// met by accident.
func TestWatermarkAlignmentBoundsDrift(t *testing.T) {
	const slowN, fastN, step = 1000, 4000, 5
	const maxDrift = 200 * time.Millisecond
	bound := maxDrift.Milliseconds() + 64*step
	lead, slowGot, fastGot := alignmentRun(t, true, slowN, fastN, step, maxDrift)
	if slowGot != slowN || fastGot != fastN {
		t.Fatalf("aligned: %d slow and %d fast records reached the sink, want %d and %d", slowGot, fastGot, slowN, fastN)
	}
	if lead > bound {
		t.Errorf("aligned: fast generated a record %d ms ahead of slow, beyond max drift + one batch check (%d ms)", lead, bound)
	}
	t.Logf("aligned: largest lead %d ms (bound %d)", lead, bound)

	lead, slowGot, fastGot = alignmentRun(t, false, slowN, fastN, step, maxDrift)
	if slowGot != slowN || fastGot != fastN {
		t.Fatalf("control: %d slow and %d fast records reached the sink, want %d and %d", slowGot, fastGot, slowN, fastN)
	}
	if lead <= 5*bound {
		t.Errorf("control without alignment: largest lead %d ms, not far beyond the bound %d ms; the test proves nothing", lead, bound)
	}
	t.Logf("control: largest lead %d ms", lead)
}

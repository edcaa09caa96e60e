package operator

import (
	"fmt"
	"slices"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

// orderLog records elements (with their timestamps), watermarks and idle
// changes in one ordered log, and how many elements came in batches.
type orderLog struct {
	log     []string
	batched int
}

func (l *orderLog) ProcessElement(v int64, ts int64) { l.log = append(l.log, fmt.Sprint(v, "@", ts)) }
func (l *orderLog) ProcessWatermark(wm int64)        { l.log = append(l.log, fmt.Sprint("wm ", wm)) }
func (l *orderLog) ProcessBatch(vs []int64, ts int64) {
	for _, v := range vs {
		l.ProcessElement(v, ts)
	}
	l.batched += len(vs)
}

// elementsOf hides an orderLog's ProcessBatch.
type elementsOf struct{ l *orderLog }

func (e elementsOf) ProcessElement(v int64, ts int64) { e.l.ProcessElement(v, ts) }
func (e elementsOf) ProcessWatermark(wm int64)        { e.l.ProcessWatermark(wm) }

// splitOutput.CollectBatch under a bounded out-of-orderness strategy takes
// a batch's timestamps first and hands runs of equal ones on as batches.
// On random scripts of batches (runs of random lengths, out-of-order
// timestamps, two splits and the reader's own output, idleness between
// polls) the log of what reaches the chain must be the same as when the
// chain takes elements one by one.
func TestWatermarkedSourceBatchesMatchElements(t *testing.T) {
	rng := testseed.Rand(t, 3)
	batchedAny := false
	for round := range 100 {
		runLen := int64(1 + rng.IntN(20))
		jitter := rng.IntN(3) == 0
		tsOf := func(v int64) int64 {
			if jitter && v%5 == 0 {
				return v/runLen - 3 // out of order, behind the run
			}
			return v / runLen
		}
		var steps []func(out source.Output[int64])
		next := int64(0)
		for range 2 + rng.IntN(6) {
			var batches [][]int64
			var to []int
			for range rng.IntN(4) {
				vs := make([]int64, rng.IntN(70))
				for i := range vs {
					vs[i] = next
					next++
				}
				batches, to = append(batches, vs), append(to, rng.IntN(3))
			}
			steps = append(steps, func(out source.Output[int64]) {
				for i, vs := range batches {
					switch to[i] {
					case 0:
						out.CollectBatch(vs)
					case 1:
						out.ForSplit("a").CollectBatch(vs)
					default:
						out.ForSplit("b").CollectBatch(vs)
					}
				}
			})
		}
		wakeUps := make([]int, len(steps)+1)
		for i := range wakeUps {
			wakeUps[i] = 1 + rng.IntN(5)
		}
		run := func(in func(*orderLog) Input[int64]) *orderLog {
			rec := &orderLog{}
			clk := clock.NewManual(0)
			src := openScriptedSource(t, steps, SourceWatermarks[int64]{Timestamp: tsOf, Delay: 2, Interval: 10, IdleTimeout: 30},
				in(rec), func(idle bool) { rec.log = append(rec.log, fmt.Sprint("idle ", idle)) }, clk)
			for _, n := range wakeUps {
				if _, _, _, err := src.PollNext(); err != nil {
					t.Fatal(err)
				}
				for range n {
					clk.Advance(10)
					src.OnProcessingTime(clk.NowMillis())
				}
			}
			return rec
		}
		batched := run(func(l *orderLog) Input[int64] { return l })
		single := run(func(l *orderLog) Input[int64] { return elementsOf{l} })
		if !slices.Equal(batched.log, single.log) {
			t.Fatalf("round %d: with batches\n%v\none by one\n%v", round, batched.log, single.log)
		}
		batchedAny = batchedAny || batched.batched > 0
	}
	if !batchedAny {
		t.Fatal("no run of equal timestamps went out as a batch")
	}
}

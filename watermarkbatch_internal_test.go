package weir

import (
	"math"
	"testing"

	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/testseed"
)

// timedSink records every element with its timestamp, and how many
// elements came in batches.
type timedSink struct {
	got     [][2]int64
	batched int
}

func (s *timedSink) ProcessElement(v int64, ts int64) { s.got = append(s.got, [2]int64{v, ts}) }
func (s *timedSink) ProcessWatermark(int64)           {}
func (s *timedSink) ProcessBatch(vs []int64, ts int64) {
	for _, v := range vs {
		s.got = append(s.got, [2]int64{v, ts})
	}
	s.batched += len(vs)
}

// watermarkOp.ProcessBatch takes all timestamps first and emits runs of
// equal ones as batches. On random batches whose timestamps come in runs of
// random lengths (or are all distinct), what it emits must be what
// ProcessElement gives for each element in order (the element and its
// timestamp), its maximum timestamp the same, and an idle output made
// active.
func TestWatermarkBatchMatchesElements(t *testing.T) {
	rng := testseed.Rand(t, 2)
	current := 0
	batchedAny := false
	for round := range 300 {
		runLen := 1 + rng.IntN(20)
		ts := func(v int64) int64 { return v / int64(runLen) }
		if rng.IntN(4) == 0 { // out of order: any timestamp, repeats by chance
			ts = func(v int64) int64 { return (v * 7919) % 13 }
		}
		batchSink, elemSink := &timedSink{}, &timedSink{}
		mk := func(out operator.Input[int64]) *watermarkOp[int64] {
			op := &watermarkOp[int64]{ts: ts, out: out, ctx: operator.NewContext(&current, 0), max: math.MinInt64,
				watermarkEmitter: watermarkEmitter{idleTimeout: 1, idle: true}}
			op.batch = operator.AsBatch(out)
			return op
		}
		bop, eop := mk(batchSink), mk(elementsOnly{elemSink})
		if eop.batch != nil {
			t.Fatal("elementsOnly must not take batches")
		}
		next := rng.Int64N(1000)
		for range 1 + rng.IntN(5) {
			vs := make([]int64, rng.IntN(70))
			for i := range vs {
				vs[i] = next
				next += int64(rng.IntN(2))
			}
			bop.ProcessBatch(vs, NoTimestamp)
			for _, v := range vs {
				eop.ProcessElement(v, NoTimestamp)
			}
		}
		if len(batchSink.got) != len(elemSink.got) {
			t.Fatalf("round %d: %d elements emitted from batches, %d one by one", round, len(batchSink.got), len(elemSink.got))
		}
		for i := range elemSink.got {
			if batchSink.got[i] != elemSink.got[i] {
				t.Fatalf("round %d: element %d is %v from batches, %v one by one", round, i, batchSink.got[i], elemSink.got[i])
			}
		}
		if bop.max != eop.max || bop.events != eop.events || bop.idle != eop.idle {
			t.Fatalf("round %d: max %d, events %d, idle %v from batches; %d, %d, %v one by one",
				round, bop.max, bop.events, bop.idle, eop.max, eop.events, eop.idle)
		}
		batchedAny = batchedAny || batchSink.batched > 0
	}
	if !batchedAny {
		t.Fatal("no run of equal timestamps went out as a batch")
	}
}

// elementsOnly hides a sink's ProcessBatch.
type elementsOnly struct{ s *timedSink }

func (e elementsOnly) ProcessElement(v int64, ts int64) { e.s.ProcessElement(v, ts) }
func (e elementsOnly) ProcessWatermark(wm int64)        { e.s.ProcessWatermark(wm) }

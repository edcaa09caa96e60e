package weir

import (
	"testing"

	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/testseed"
)

// flatMapOp.ProcessBatch runs the function over a whole batch and hands
// what it collects on in batches of at most flatMapBatch. On random
// batches and fan-outs (none to hundreds of outputs per element) it must
// emit what the function collects, in order, with the batch's timestamp,
// never more than flatMapBatch at once, and hold no element of a pointer
// type afterwards.
func TestFlatMapBatchMatchesFunction(t *testing.T) {
	rng := testseed.Rand(t, 4)
	current := 0
	for round := range 200 {
		maxOut := []int{1, 3, 10, 600}[rng.IntN(4)]
		f := func(v *int, out Collector[*int]) {
			for i := range *v % (maxOut + 1) {
				x := *v*1000 + i
				out.Collect(&x)
			}
		}
		sink := &sizedSink{}
		ctx := operator.NewContext(&current, 0)
		op := &flatMapOp[*int, *int]{f: f, col: collector[*int]{out: sink, ctx: ctx},
			bcol: batchCollector[*int]{out: sink, ctx: ctx, clear: !operator.PointerFree[*int]()}}
		var want []int
		var wantTS []int64
		for range 1 + rng.IntN(4) {
			vs := make([]*int, rng.IntN(80))
			ts := rng.Int64N(100)
			for i := range vs {
				v := rng.IntN(100000)
				vs[i] = &v
				f(vs[i], funcCollector(func(p *int) { want, wantTS = append(want, *p), append(wantTS, ts) }))
			}
			op.ProcessBatch(vs, ts)
			for i, p := range op.bcol.buf[:cap(op.bcol.buf)] {
				if p != nil {
					t.Fatalf("round %d: buffer slot %d still references an element after the batch", round, i)
				}
			}
		}
		if len(sink.got) != len(want) {
			t.Fatalf("round %d: %d elements emitted, want %d", round, len(sink.got), len(want))
		}
		for i := range want {
			if *sink.got[i] != want[i] || sink.ts[i] != wantTS[i] {
				t.Fatalf("round %d: element %d is %d at %d, want %d at %d", round, i, *sink.got[i], sink.ts[i], want[i], wantTS[i])
			}
		}
		if sink.largest > flatMapBatch {
			t.Fatalf("round %d: a batch of %d went on, more than %d", round, sink.largest, flatMapBatch)
		}
	}
}

type funcCollector func(*int)

func (f funcCollector) Collect(v *int) { f(v) }

// sizedSink records elements, their timestamps and the largest batch.
type sizedSink struct {
	got     []*int
	ts      []int64
	largest int
}

func (s *sizedSink) ProcessElement(v *int, ts int64) {
	s.got, s.ts = append(s.got, v), append(s.ts, ts)
}
func (s *sizedSink) ProcessWatermark(int64) {}
func (s *sizedSink) ProcessBatch(vs []*int, ts int64) {
	for _, v := range vs {
		s.ProcessElement(v, ts)
	}
	s.largest = max(s.largest, len(vs))
}

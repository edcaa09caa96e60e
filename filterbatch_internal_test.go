package weir

import (
	"testing"

	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/testseed"
)

// batchSink records what a filter emits, batch by batch.
type batchSink[T any] struct{ got []T }

func (s *batchSink[T]) ProcessElement(v T, _ int64)   { s.got = append(s.got, v) }
func (s *batchSink[T]) ProcessWatermark(int64)        {}
func (s *batchSink[T]) ProcessBatch(vs []T, ts int64) { s.got = append(s.got, vs...) }

// filterOp.ProcessBatch writes every element and advances only past kept
// ones (no branch around the write). On random batches and predicates it
// must emit what the predicate keeps, in order, and afterwards hold no
// element of a pointer type in its buffer, dropped ones included.
func TestFilterBatchMatchesPredicate(t *testing.T) {
	rng := testseed.Rand(t, 1)
	current := 0
	for round := range 200 {
		keepPct := rng.IntN(101)
		keep := func(p *int) bool { return *p%100 < keepPct }
		sink := &batchSink[*int]{}
		op := &filterOp[*int]{f: keep, out: sink, batch: sink, ctx: operator.NewContext(&current, 0), clear: !operator.PointerFree[*int]()}
		var want []*int
		for range 1 + rng.IntN(4) {
			vs := make([]*int, rng.IntN(80))
			for i := range vs {
				v := rng.IntN(1000)
				vs[i] = &v
				if keep(vs[i]) {
					want = append(want, vs[i])
				}
			}
			op.ProcessBatch(vs, 0)
			for i, p := range op.buf {
				if p != nil {
					t.Fatalf("round %d: buffer slot %d still references an element after the batch", round, i)
				}
			}
		}
		if len(sink.got) != len(want) {
			t.Fatalf("round %d (keep %d%%): %d elements emitted, want %d", round, keepPct, len(sink.got), len(want))
		}
		for i := range want {
			if sink.got[i] != want[i] {
				t.Fatalf("round %d: element %d is %d, want %d", round, i, *sink.got[i], *want[i])
			}
		}
	}
}

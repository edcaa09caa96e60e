package window

import (
	"slices"
	"strconv"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// TestStacksMatchesBruteForce runs random pushes, evictions and queries and
// compares every query with the merge of the queued slices recomputed from
// scratch. The merge concatenates strings: associative, not commutative,
// so an order mistake shows.
func TestStacksMatchesBruteForce(t *testing.T) {
	r := testseed.Rand(t, 2)
	merges := 0
	q := NewStacks(func(a, b string) string { merges++; return a + "," + b })
	type ref struct {
		start int64
		v     string
	}
	var model []ref
	next := int64(0)
	ops := 0
	for i := 0; i < 200000; i++ {
		switch op := r.IntN(10); {
		case op < 5:
			next += 1 + r.Int64N(3)
			v := strconv.FormatInt(next, 10)
			q.Push(next, v)
			model = append(model, ref{next, v})
			ops++
		case op < 8:
			cut := next - r.Int64N(20)
			q.EvictBefore(cut)
			model = slices.DeleteFunc(model, func(x ref) bool { return x.start < cut })
			ops++
		case op < 9 && r.IntN(50) == 0:
			q.Reset()
			model = model[:0]
		default:
			got, ok := q.Query()
			ops++
			var want string
			for j, x := range model {
				if j > 0 {
					want += ","
				}
				want += x.v
			}
			if ok != (len(model) > 0) || got != want {
				t.Fatalf("op %d: Query = %q, %v; want %q", i, got, ok, want)
			}
		}
		if q.Len() != len(model) {
			t.Fatalf("op %d: Len %d, want %d", i, q.Len(), len(model))
		}
		if s, ok := q.Oldest(); ok != (len(model) > 0) || ok && s != model[0].start {
			t.Fatalf("op %d: Oldest %d, %v; model %v", i, s, ok, model[:min(3, len(model))])
		}
	}
	// Amortized O(1): each item is merged at most twice on push/flip, plus
	// one merge per query.
	if merges > 3*ops {
		t.Fatalf("%d merges for %d operations: not amortized constant", merges, ops)
	}
}

// BenchmarkStacksSlide measures one window firing of a sliding window of
// n slices (push the new slice, evict the oldest, query), which must not
// grow with n.
func BenchmarkStacksSlide(b *testing.B) {
	for _, n := range []int{10, 60, 3600} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			q := NewStacks(func(a, b int64) int64 { return a + b })
			for i := 0; i < n; i++ {
				q.Push(int64(i), 1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := int64(n + i)
				q.Push(s, 1)
				q.EvictBefore(s - int64(n) + 1)
				if v, _ := q.Query(); v != int64(n) {
					b.Fatalf("sum %d, want %d", v, n)
				}
			}
		})
	}
}

package weir_test

import (
	"context"
	"testing"

	"github.com/weirhq/weir/internal/benchjobs"
	"github.com/weirhq/weir/internal/cpumeter"
)

// (f) an interval join of two generators of (key, ts) within [-1s, +1s],
// 100,000 keys, parallelism 2, heap backend; b.N records per side.
func BenchmarkIntervalJoin(b *testing.B) {
	start := cpumeter.Now()
	n, err := benchjobs.IntervalJoin(context.Background(), int64(b.N), 100_000, 2, "hashmap")
	if err != nil {
		b.Fatal(err)
	}
	cpumeter.Report(b, n, start)
}

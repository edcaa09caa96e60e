package weir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/benchjobs"
	"github.com/weirhq/weir/internal/cpumeter"
)

// The engine benchmarks run one job of b.N records per benchmark round and
// report events per second per core of CPU time used by the whole process
// (all subtasks), as Nexmark does. `weir bench` runs the same jobs; compare
// with bench/baseline. Figures: docs/benchmarks.md.

// (a) generator -> map -> filter -> discard, chained into one task.
func BenchmarkChainedMapFilter(b *testing.B) {
	start := cpumeter.Now()
	if _, err := benchjobs.ChainedMapFilter(context.Background(), int64(b.N)); err != nil {
		b.Fatal(err)
	}
	cpumeter.Report(b, int64(b.N), start)
}

// (b) the same with a keyBy shuffle of (int64, int64) records at parallelism 2.
func BenchmarkShuffleInt64Pairs(b *testing.B) {
	start := cpumeter.Now()
	if _, err := benchjobs.ShuffleInt64Pairs(context.Background(), int64(b.N), 2); err != nil {
		b.Fatal(err)
	}
	cpumeter.Report(b, int64(b.N), start)
}

// (c) wordcount on a 100 MB file (4 MB with -short); one round is one run.
func BenchmarkWordcount100MB(b *testing.B) {
	size := 100 << 20
	if testing.Short() {
		size = 4 << 20
	}
	in, words, err := benchjobs.WordcountInput(os.TempDir(), size)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", p), func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "counts.txt")
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := cpumeter.Now()
			for range b.N {
				if _, err := benchjobs.Wordcount(context.Background(), in, out, words, p); err != nil {
					b.Fatal(err)
				}
			}
			cpu, _ := cpumeter.Now().Since(start)
			cpumeter.Report(b, words*int64(b.N), start)
			b.ReportMetric(float64(size)*float64(b.N)/cpu.Seconds()/1e6, "MB/s/core")
		})
	}
}

// (d) the keyed count (generator -> keyBy -> count in ValueState -> discard,
// parallelism 2) on both backends, with checkpoints every second and
// without: what checkpointing costs.
func BenchmarkKeyedCheckpointing(b *testing.B) {
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, interval := range []time.Duration{0, time.Second} {
			name := backend + "/checkpoints=none"
			if interval > 0 {
				name = backend + "/checkpoints=" + interval.String()
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				start := cpumeter.Now()
				if _, err := benchjobs.KeyedCount(context.Background(), int64(b.N), 2, backend, interval, dir); err != nil {
					b.Fatal(err)
				}
				cpumeter.Report(b, int64(b.N), start)
			})
		}
	}
}

// (d)/(e) the side-by-side report's keyed row: generator -> keyBy(i mod 10,000) -> count
// in ValueState -> discard at parallelism 2, without checkpoints, on the
// heap and the Pebble backend. `weir bench keyed` runs the same job, and
// bench/flink's keyed job is its Flink twin (scripts/bench-flink).
func BenchmarkKeyedCount(b *testing.B) {
	for _, backend := range []string{"hashmap", "pebble"} {
		b.Run("keys=10000/"+backend, func(b *testing.B) {
			start := cpumeter.Now()
			if _, err := benchjobs.KeyedCountKeys(context.Background(), int64(b.N), 10_000, 2, backend, 0, ""); err != nil {
				b.Fatal(err)
			}
			cpumeter.Report(b, int64(b.N), start)
		})
	}
}

// BenchmarkWindowSlidingRatio is the "throughput against the ratio"
// series: sliding 1 s slides with size/slide 1 (tumbling), 10, 60 and 3600,
// on 10 keys so that the emitted windows per input event stay small across
// the ratios and the series measures the operator's per-element work, not
// output volume: event time advances 1 s per million events, so each slide
// emits 10 windows per million events, and the end of input flushes
// keys*ratio windows (36,000 at 3600), under 2% of the input at
// -benchtime 2000000x. Smaller b.N is flush-dominated at 3600.
// Run: go test -run '^$' -bench 'WindowSlidingRatio' -benchtime 2000000x .
func BenchmarkWindowSlidingRatio(b *testing.B) {
	for _, ratio := range []int64{1, 10, 60, 3600} {
		b.Run(fmt.Sprintf("size/slide=%d", ratio), func(b *testing.B) {
			assigner := weir.SlidingEventTimeWindows(time.Duration(ratio)*time.Second, time.Second)
			start := cpumeter.Now()
			if _, err := benchjobs.WindowCount(context.Background(), int64(b.N), 10, 2, "hashmap", assigner); err != nil {
				b.Fatal(err)
			}
			cpumeter.Report(b, int64(b.N), start)
		})
	}
}

// (e) windows: a count per key (100,000 keys) in event-time windows at
// parallelism 2 on the heap backend: tumbling 10 s, sliding 10 s with
// size/slide 10, 60 and 3600, and sessions.
func BenchmarkWindowCount(b *testing.B) {
	for _, tc := range []struct {
		name     string
		assigner weir.WindowAssigner
	}{
		{"tumbling=10s", weir.TumblingEventTimeWindows(10 * time.Second)},
		{"sliding=10s/1s", weir.SlidingEventTimeWindows(10*time.Second, time.Second)},
		{"sliding=60s/1s", weir.SlidingEventTimeWindows(60*time.Second, time.Second)},
		{"sliding=3600s/1s", weir.SlidingEventTimeWindows(3600*time.Second, time.Second)},
		{"session=100ms", weir.EventTimeSessionWindows(100 * time.Millisecond)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			start := cpumeter.Now()
			if _, err := benchjobs.WindowCount(context.Background(), int64(b.N), 100_000, 2, "hashmap", tc.assigner); err != nil {
				b.Fatal(err)
			}
			cpumeter.Report(b, int64(b.N), start)
		})
	}
}

package weir_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/sink"
	"go.uber.org/goleak"
)

// A job whose keyed state is far larger than its Go heap runs on Pebble with
// bounded memory: every one of many distinct keys gets a counter, and the
// heap, sampled while the job runs, stays under a fixed bound. The key count
// defaults to 500 thousand; WEIR_STATE_KEYS raises it
// (the 20-million run is recorded in docs/benchmarks.md).
func TestPebbleStateMemoryBounded(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	keys := int64(500_000)
	if testing.Short() {
		keys = 300_000
	}
	if v := os.Getenv("WEIR_STATE_KEYS"); v != "" {
		keys, _ = strconv.ParseInt(v, 10, 64)
	}
	const heapBound = 400 << 20
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: "pebble"})
	src := weir.Generate(env, keys, 0, func(i int64) int64 { return i * 2654435761 % keys }) // each key once, scattered
	sums := weir.Reduce(weir.KeyBy(src, func(v int64) int64 { return v }), func(a, b int64) int64 { return a + b })
	var outputs atomic.Int64
	weir.SinkTo[int64](sums, countSink{&outputs}, "Count")

	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	_, err := env.Execute(context.Background(), "pebble-memory")
	close(done)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	if outputs.Load() != keys {
		t.Fatalf("%d updates emitted, want %d", outputs.Load(), keys)
	}
	t.Logf("%d keys in %v; peak Go heap in use %d MiB (bound %d MiB)", keys, time.Since(start).Round(time.Millisecond), peak.Load()>>20, heapBound>>20)
	if peak.Load() > heapBound {
		t.Fatalf("peak heap %d MiB exceeds %d MiB", peak.Load()>>20, heapBound>>20)
	}
}

type countSink struct{ n *atomic.Int64 }

func (c countSink) CreateWriter(sink.Context) (sink.Writer[int64], error) { return c, nil }
func (c countSink) Write(int64, int64) error                              { c.n.Add(1); return nil }
func (c countSink) Flush(bool) error                                      { return nil }
func (c countSink) Close() error                                          { return nil }

package weir_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

// A streaming keyed job whose hashmap state tables pass
// Config.HeapStateMemory fails, naming the setting, and is not restarted
// (a restart would restore the state that grew past it) although its
// restart strategy allows three; the same job under a bound that holds its
// state runs to the end. A negative bound is refused.
func TestHeapStateMemoryBound(t *testing.T) {
	type rec = tuple.T2[int64, int64]
	const keys = 200000
	in := make([]rec, keys)
	for i := range in {
		in[i] = tuple.Of2(int64(i), int64(1))
	}
	run := func(mem int64) (int, int64, error) {
		var restarts atomic.Int64
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, HeapStateMemory: mem,
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir()},
			Restart: map[string]string{"restart-strategy.type": "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
			OnRestart: func(int, int64, error) { restarts.Add(1) }})
		ks := weir.KeyBy(weir.FromSlice(env, in), func(r rec) int64 { return r.F0 })
		out, err := weir.ExecuteAndCollect(context.Background(), env, weir.Reduce(ks, func(a, b rec) rec { a.F1 += b.F1; return a }), "bounded-heap-state")
		return len(out), restarts.Load(), err
	}
	n, restarts, err := run(1 << 20)
	if err == nil || !strings.Contains(err.Error(), "Config.HeapStateMemory") || !strings.Contains(err.Error(), "--heap-state-memory") {
		t.Fatalf("%d keys under a bound of 1 MiB: %d results, %v; want a failure naming Config.HeapStateMemory", keys, n, err)
	}
	if restarts != 0 {
		t.Fatalf("the job was restarted %d times after its state passed the bound", restarts)
	}
	if n, _, err := run(256 << 20); err != nil || n != keys {
		t.Fatalf("under a bound of 256 MiB: %d results, %v; want %d", n, err, keys)
	}
	env := weir.NewEnvironment(weir.Config{HeapStateMemory: -1})
	_, err = weir.ExecuteAndCollect(context.Background(), env, weir.FromSlice(env, []int{1}), "negative-bound")
	if err == nil || !strings.Contains(err.Error(), "Config.HeapStateMemory") {
		t.Fatalf("a negative bound: %v, want an error naming Config.HeapStateMemory", err)
	}
	if got := weir.NewEnvironment(weir.Config{}).Config().HeapStateMemory; got <= 0 {
		t.Fatalf("default HeapStateMemory %d, want a positive bound", got)
	}
}

// A streaming keyed job whose accumulators are large strings (a Reduce
// that concatenates 64 KiB values) fails early, naming
// Config.HeapStateMemory and what grew, under a bound its tables alone
// would keep (today's slots of a hundred keys take a few KiB), and is
// not restarted; under a bound that holds the strings it runs to the end.
func TestHeapStateMemoryCountsStrings(t *testing.T) {
	type rec = tuple.T2[int64, string]
	const keys, size = 100, 64 << 10
	big := strings.Repeat("x", size+keys)
	in := make([]rec, 2*keys)
	for i := range in {
		in[i] = tuple.Of2(int64(i%keys), big[i%keys:][:size])
	}
	run := func(mem int64) (int, int64, error) {
		var restarts atomic.Int64
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, HeapStateMemory: mem,
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir()},
			Restart: map[string]string{"restart-strategy.type": "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
			OnRestart: func(int, int64, error) { restarts.Add(1) }})
		ks := weir.KeyBy(weir.FromSlice(env, in), func(r rec) int64 { return r.F0 })
		out, err := weir.ExecuteAndCollect(context.Background(), env, weir.Reduce(ks, func(a, b rec) rec { a.F1 += b.F1; return a }), "string-heap-state")
		return len(out), restarts.Load(), err
	}
	n, restarts, err := run(2 << 20)
	if err == nil || !strings.Contains(err.Error(), "Config.HeapStateMemory") || !strings.Contains(err.Error(), "--heap-state-memory") ||
		!strings.Contains(err.Error(), "what its values point to") {
		t.Fatalf("%d keys of %d-byte strings under a bound of 2 MiB: %d results, %v; want a failure naming Config.HeapStateMemory and the values", keys, 2*size, n, err)
	}
	if restarts != 0 {
		t.Fatalf("the job was restarted %d times after its state passed the bound", restarts)
	}
	if n, _, err := run(256 << 20); err != nil || n != len(in) {
		t.Fatalf("under a bound of 256 MiB: %d results, %v; want %d", n, err, len(in))
	}
}

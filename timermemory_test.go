package weir_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// farTimers registers, per element, an event-time timer far in the future
// at a time of its own, and emits each timer's time when it fires.
type farTimers struct{}

func (farTimers) ProcessElement(ctx weir.KeyedContext[int64], v int64, _ weir.Collector[int64]) error {
	ctx.TimerService().RegisterEventTimeTimer(1<<50 + v)
	return nil
}

func (farTimers) OnTimer(_ weir.OnTimerContext[int64], ts int64, out weir.Collector[int64]) error {
	out.Collect(ts)
	return nil
}

// A keyed job on the hashmap backend whose timers pass
// Config.HeapStateMemory fails, naming the setting, and is not restarted
// although its restart strategy allows three; under a bound that holds
// them, and on the pebble backend (whose timers this bound does not
// count), the same job fires every timer.
func TestHeapStateMemoryCountsTimers(t *testing.T) {
	const n = 100000
	in := make([]int64, n)
	for i := range in {
		in[i] = int64(i)
	}
	run := func(backend string, mem int64) (int, int64, error) {
		var restarts atomic.Int64
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, HeapStateMemory: mem,
			StateBackend: backend, StateDir: t.TempDir(),
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: t.TempDir()},
			Restart: map[string]string{"restart-strategy.type": "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
			OnRestart: func(int, int64, error) { restarts.Add(1) }})
		ks := weir.KeyBy(weir.FromSlice(env, in), func(v int64) int64 { return v % 100 })
		out, err := weir.ExecuteAndCollect(context.Background(), env,
			weir.ProcessKeyed[int64, int64, int64](ks, farTimers{}), "bounded-timers")
		return len(out), restarts.Load(), err
	}
	got, restarts, err := run("hashmap", 1<<20)
	if err == nil || !strings.Contains(err.Error(), "Config.HeapStateMemory") || !strings.Contains(err.Error(), "--heap-state-memory") ||
		!strings.Contains(err.Error(), "timers (event time)") {
		t.Fatalf("%d timers under a bound of 1 MiB: %d fired, %v; want a failure naming Config.HeapStateMemory and the timers", n, got, err)
	}
	if restarts != 0 {
		t.Fatalf("the job was restarted %d times after its timers passed the bound", restarts)
	}
	if got, _, err := run("hashmap", 256<<20); err != nil || got != n {
		t.Fatalf("under a bound of 256 MiB: %d fired, %v; want %d", got, err, n)
	}
	if got, _, err := run("pebble", 1<<20); err != nil || got != n {
		t.Fatalf("pebble backend under a heap bound of 1 MiB: %d fired, %v; want %d", got, err, n)
	}
}

package weir_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
	"github.com/weirhq/weir/tuple"
	"go.uber.org/goleak"
)

// countAtEnd counts elements per key in ValueState and emits the count when
// an event-time timer at the end of time fires (the final watermark).
type countAtEnd struct {
	count state.ValueState[int64]
	list  state.ListState[int64]
}

func (c *countAtEnd) Open(ctx weir.KeyedRuntimeContext) error {
	c.count = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "count", Codec: codec.Int64()})
	c.list = state.GetListState(ctx.State(), state.ListDescriptor[int64]{Name: "values", Codec: codec.Int64()})
	return nil
}

func (c *countAtEnd) ProcessElement(ctx weir.KeyedContext[int64], v int64, out weir.Collector[tuple.T2[int64, int64]]) error {
	n, _ := c.count.Value()
	c.count.Update(n + 1)
	c.list.Add(v)
	ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64 - 1) // deduplicated per key
	return nil
}

func (c *countAtEnd) OnTimer(ctx weir.OnTimerContext[int64], ts int64, out weir.Collector[tuple.T2[int64, int64]]) error {
	if ctx.TimeDomain() != weir.EventTime {
		return fmt.Errorf("want an event-time timer")
	}
	n, _ := c.count.Value()
	if got := int64(len(c.list.Get())); got != n {
		return fmt.Errorf("key %d: list has %d values, count is %d", ctx.CurrentKey(), got, n)
	}
	out.Collect(tuple.Of2(ctx.CurrentKey(), n))
	return nil
}

func TestKeyedStateAndEventTimersMatchReference(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	rng := rand.New(rand.NewPCG(seed(t), 5))
	n := 20000 + rng.Int64N(20000)
	keys := 1 + rng.Int64N(3000)
	mul := rng.Int64N(1000) + 1
	want := map[int64]int64{}
	for i := range n {
		want[i*mul%keys]++
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p=%d", backend, p), func(t *testing.T) {
				env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend})
				src := weir.Generate(env, n, 0, func(i int64) int64 { return i * mul % keys })
				keyed := weir.KeyBy(src, func(v int64) int64 { return v })
				out := run(t, env, weir.ProcessKeyed[int64, int64, tuple.T2[int64, int64]](keyed, &countAtEnd{}))
				if len(out) != len(want) {
					t.Fatalf("%d keys reported, want %d", len(out), len(want))
				}
				for _, kv := range out {
					if want[kv.F0] != kv.F1 {
						t.Fatalf("key %d: count %d, want %d", kv.F0, kv.F1, want[kv.F0])
					}
				}
			})
		}
	}
}

// firesOnce registers a processing-time timer per key and emits the key when it fires.
type firesOnce struct{}

func (firesOnce) ProcessElement(ctx weir.KeyedContext[string], v string, out weir.Collector[string]) error {
	ts := ctx.TimerService()
	ts.RegisterProcessingTimeTimer(ts.CurrentProcessingTime() + 20)
	ts.RegisterProcessingTimeTimer(ts.CurrentProcessingTime() + 5_000) // deleted below
	ts.DeleteProcessingTimeTimer(ts.CurrentProcessingTime() + 5_000)
	return nil
}

func (firesOnce) OnTimer(ctx weir.OnTimerContext[string], ts int64, out weir.Collector[string]) error {
	if ctx.TimeDomain() != weir.ProcessingTime {
		return fmt.Errorf("want a processing-time timer")
	}
	out.Collect(ctx.CurrentKey())
	return nil
}

func TestProcessingTimeTimersFire(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	// Unbounded: the job keeps running while the timers come due (pending
	// processing-time timers are dropped at the end of input, as in Flink).
	src := weir.Generate(env, -1, 50, func(i int64) string { return []string{"a", "b", "c"}[i%3] })
	keyed := weir.KeyBy(src, func(s string) string { return s })
	fired := weir.Collect(weir.ProcessKeyed[string, string, string](keyed, firesOnce{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "timers")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string)
	go func() {
		for v := range fired.All() {
			select {
			case seen <- v:
			case <-job.Done():
			}
		}
	}()
	got := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(got) < 3 {
		select {
		case v := <-seen:
			got[v] = true
		case <-deadline:
			t.Fatalf("timers fired only for %v", got)
		}
	}
	cancel()
	job.Wait(context.Background())
}

func TestMapWithStateRunningSum(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: "pebble"})
	src := weir.FromSlice(env, []int64{1, 2, 3, 4, 5, 6, 7, 8})
	keyed := weir.KeyBy(src, func(v int64) bool { return v%2 == 0 })
	out := run(t, env, weir.MapWithState(keyed, func(rc weir.KeyedRuntimeContext) (func(weir.KeyedContext[bool], int64) (string, error), error) {
		s := state.GetValueState(rc.State(), state.ValueDescriptor[int64]{Name: "sum", Codec: codec.Int64()})
		return func(ctx weir.KeyedContext[bool], v int64) (string, error) {
			total, _ := s.Value()
			total += v
			s.Update(total)
			return fmt.Sprintf("%t:%d", ctx.CurrentKey(), total), nil
		}, nil
	}))
	slices.Sort(out)
	want := []string{"false:1", "false:16", "false:4", "false:9", "true:12", "true:2", "true:20", "true:6"}
	if !slices.Equal(out, want) {
		t.Fatalf("got %v, want %v", out, want)
	}
}

func TestKeyedStateNeedsKeyCodec(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	src := weir.Sequence(env, 1, 10)
	keyed := weir.KeyBy(src, func(v int64) chan int { return nil })
	weir.Discard(weir.Reduce(keyed, func(a, b int64) int64 { return a + b }))
	_, err := env.Execute(context.Background(), "nocodec")
	if err == nil || !strings.Contains(err.Error(), "codec") {
		t.Fatalf("got %v", err)
	}
}

// sumPerSubtask keeps a running sum in operator list state, one per subtask.
type sumPerSubtask struct{ sums state.ListState[int64] }

func (s *sumPerSubtask) Open(ctx weir.RuntimeContext) error {
	s.sums = state.GetOperatorListState(ctx.OperatorState(), state.ListDescriptor[int64]{Name: "sum", Codec: codec.Int64()})
	return nil
}

func (s *sumPerSubtask) ProcessElement(ctx weir.Context, v int64, out weir.Collector[int64]) error {
	cur := s.sums.Get()
	total := v
	if len(cur) == 1 {
		total += cur[0]
	}
	s.sums.Update([]int64{total})
	out.Collect(total)
	return nil
}

func TestOperatorStateInProcessFunction(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	out := run(t, env, weir.Process[int64, int64](weir.Sequence(env, 1, 5), &sumPerSubtask{}))
	if !slices.Equal(out, []int64{1, 3, 6, 10, 15}) {
		t.Fatalf("got %v", out)
	}
}

// runningCount emits, per element, its key, the key's count so far and
// the element.
type runningCount struct{ count state.ValueState[int64] }

func (c *runningCount) Open(ctx weir.KeyedRuntimeContext) error {
	c.count = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "count", Codec: codec.Int64()})
	return nil
}

func (c *runningCount) ProcessElement(ctx weir.KeyedContext[int64], v int64, out weir.Collector[tuple.T3[int64, int64, int64]]) error {
	n, _ := c.count.Value()
	c.count.Update(n + 1)
	out.Collect(tuple.Of3(ctx.CurrentKey(), n+1, v))
	return nil
}

// TestKeyedProcessHeldRuns: a keyed process operator that holds elements
// back in runs (as it does on a large heap state) processes each key's
// elements in order, with its state, as one that does not.
func TestKeyedProcessHeldRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 23))
	n := 20000 + rng.Int64N(20000)
	keys := 1 + rng.Int64N(3000)
	want := map[int64][]int64{}
	counts := map[int64]int64{}
	for i := range n {
		k := i * 7919 % keys
		counts[k]++
		want[k] = append(want[k], counts[k], i)
	}
	for _, hold := range []bool{false, true} {
		restore := func() {}
		if hold {
			restore = weir.HoldWindowElements(0)
		}
		env := weir.NewEnvironment(weir.Config{Parallelism: 3})
		// One source subtask: each key's elements reach their subtask in order.
		src := weir.Generate(env, n, 0, func(i int64) int64 { return i }).SetParallelism(1)
		keyed := weir.KeyBy(src, func(v int64) int64 { return v * 7919 % keys })
		out := run(t, env, weir.ProcessKeyed[int64, int64, tuple.T3[int64, int64, int64]](keyed, &runningCount{}))
		restore()
		got := map[int64][]int64{}
		for _, r := range out {
			got[r.F0] = append(got[r.F0], r.F1, r.F2)
		}
		if len(got) != len(want) {
			t.Fatalf("hold %v: %d keys, want %d", hold, len(got), len(want))
		}
		for k, w := range want {
			if !slices.Equal(got[k], w) {
				t.Fatalf("hold %v: key %d: (count, element) %v, want %v", hold, k, got[k], w)
			}
		}
	}
}

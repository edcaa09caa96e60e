package weir_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// collectBoth runs the job and reads two Collect sinks at once (each
// backpressures the job while unread) until it ends.
func collectBoth[A, B any](t *testing.T, env *weir.Environment, a *weir.Collected[A], b *weir.Collected[B]) ([]A, []B) {
	t.Helper()
	job, err := env.ExecuteAsync(context.Background(), "two-sinks")
	if err != nil {
		t.Fatal(err)
	}
	var as []A
	var bs []B
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for v := range a.All() {
			as = append(as, v)
		}
	}()
	go func() {
		defer wg.Done()
		for v := range b.All() {
			bs = append(bs, v)
		}
	}()
	wg.Wait()
	if _, err := job.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return as, bs
}

// A process function splits a stream: even numbers to the main output, odd
// ones as strings to a side output. The side output is read chained (same
// parallelism, forward) and across the network (another parallelism).
func TestSideOutputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sidePar int
	}{{"chained", 2}, {"network", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: 2})
			odd := weir.NewOutputTag[string]("odd")
			src := weir.Sequence(env, 0, 999)
			main := weir.Process(src, weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
				if v%2 == 0 {
					out.Collect(v)
				} else {
					odd.Output(ctx, strconv.FormatInt(v, 10))
				}
				return nil
			}))
			side := weir.Map(weir.SideOutput(main, odd), func(s string) string { return "odd " + s }).SetParallelism(tc.sidePar)
			evens, odds := collectBoth(t, env, weir.Collect(main), weir.Collect(side))
			if len(evens) != 500 || len(odds) != 500 {
				t.Fatalf("%d evens and %d odds, want 500 each", len(evens), len(odds))
			}
			slices.Sort(evens)
			for i, v := range evens {
				if v != int64(2*i) {
					t.Fatalf("evens[%d] = %d", i, v)
				}
			}
			for _, s := range odds {
				n, err := strconv.Atoi(s[len("odd "):])
				if err != nil || n%2 != 1 {
					t.Fatalf("side output holds %q", s)
				}
			}
		})
	}
}

// A side output that nobody reads costs nothing and fails nothing; reading
// one tag ID as two types fails the job before it runs.
func TestSideOutputUnreadAndTypeConflict(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	tag := weir.NewOutputTag[string]("x")
	s := weir.Process(weir.Sequence(env, 0, 9), weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
		tag.Output(ctx, "ignored")
		out.Collect(v)
		return nil
	}))
	weir.Discard(s)
	if _, err := env.Execute(context.Background(), "unread"); err != nil {
		t.Fatal(err)
	}

	env = weir.NewEnvironment(weir.Config{Parallelism: 1})
	s = weir.Process(weir.Sequence(env, 0, 9), weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error { return nil }))
	weir.Discard(weir.SideOutput(s, weir.NewOutputTag[string]("x")))
	weir.Discard(weir.SideOutput(s, weir.NewOutputTag[int]("x")))
	if _, err := env.Execute(context.Background(), "conflict"); err == nil {
		t.Fatal("one tag read as string and int: want an error")
	}
}

// Watermarks reach a side output's consumers while the job runs, not only
// at the end of the input.
func TestSideOutputCarriesWatermarks(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	tag := weir.NewOutputTag[int64]("all")
	src := weir.AssignTimestampsAndWatermarks(weir.Generate(env, 2000, 4000, func(i int64) int64 { return i }),
		weir.WatermarkStrategy[int64]{Timestamp: func(v int64) int64 { return v }, Interval: 10 * time.Millisecond})
	main := weir.Process(src, weir.ProcessFunc[int64, int64](func(ctx weir.Context, v int64, out weir.Collector[int64]) error {
		tag.Output(ctx, v)
		return nil
	}))
	weir.Discard(main)
	var sawWatermark atomic.Bool
	keyed := weir.KeyBy(weir.SideOutput(main, tag), func(v int64) int64 { return v % 4 })
	weir.Discard(weir.ProcessKeyed(keyed, weir.KeyedProcessFunc[int64, int64, int64](func(ctx weir.KeyedContext[int64], v int64, out weir.Collector[int64]) error {
		if wm := ctx.TimerService().CurrentWatermark(); wm > math.MinInt64 && wm < math.MaxInt64 {
			sawWatermark.Store(true)
		}
		return nil
	})))
	if _, err := env.Execute(context.Background(), "side-watermarks"); err != nil {
		t.Fatal(err)
	}
	if !sawWatermark.Load() {
		t.Fatal("the side output's consumer never saw a watermark before the end of input")
	}
}

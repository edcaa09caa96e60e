package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// bucketCounter counts both sides of a keyed connected stream per key and
// 100 ms bucket in one MapState (left adds 1, right 1000: the state is shared
// by the sides) and emits each bucket's count when an event-time timer at
// its end fires.
type bucketCounter struct {
	counts state.MapState[int64, int64]
}

func (b *bucketCounter) Open(ctx weir.KeyedRuntimeContext) error {
	b.counts = state.GetMapState(ctx.State(), state.MapDescriptor[int64, int64]{Name: "counts", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64()})
	return nil
}

func bucketEnd(ts int64) int64 { return ts - ts%100 + 99 }

func (b *bucketCounter) add(ctx weir.KeyedContext[int64], e joinEv, by int64) error {
	if ctx.CurrentKey() != e.Key {
		return fmt.Errorf("current key %d, element key %d", ctx.CurrentKey(), e.Key)
	}
	end := bucketEnd(e.Ts)
	n, _ := b.counts.Get(end)
	b.counts.Put(end, n+by)
	ctx.TimerService().RegisterEventTimeTimer(end)
	return nil
}

func (b *bucketCounter) ProcessElement1(ctx weir.KeyedContext[int64], e joinEv, _ weir.Collector[string]) error {
	return b.add(ctx, e, 1)
}

func (b *bucketCounter) ProcessElement2(ctx weir.KeyedContext[int64], e joinEv, _ weir.Collector[string]) error {
	return b.add(ctx, e, 1000)
}

func (b *bucketCounter) OnTimer(ctx weir.OnTimerContext[int64], ts int64, out weir.Collector[string]) error {
	if ctx.TimeDomain() != weir.EventTime || ctx.Timestamp() != ts {
		return fmt.Errorf("timer %d: domain %v, timestamp %d", ts, ctx.TimeDomain(), ctx.Timestamp())
	}
	n, ok := b.counts.Get(ts)
	if !ok {
		return fmt.Errorf("key %d: timer %d fired without a bucket (fired twice?)", ctx.CurrentKey(), ts)
	}
	b.counts.Remove(ts)
	out.Collect(fmt.Sprintf("k%d end=%d n=%d", ctx.CurrentKey(), ts, n))
	return nil
}

// Keyed connected streams: both sides' elements of a key meet in one
// subtask, share its keyed state, and its event-time timers fire once the
// watermark of both inputs passes them. Reference: the per-key, per-bucket
// counts computed over the whole input.
func TestKeyedCoProcessSharesStateAndTimers(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 10))
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/p=%d", backend, p), func(t *testing.T) {
				keys, disorder := 1+rng.Int64N(40), rng.Int64N(50)
				left := orderedWithin(rng, 2000+rng.Int64N(2000), keys, 3, disorder, 0)
				right := orderedWithin(rng, 2000+rng.Int64N(2000), keys, 3, disorder, rightIDs)
				counts := map[string]int64{}
				for _, e := range left {
					counts[fmt.Sprintf("k%d end=%d", e.Key, bucketEnd(e.Ts))]++
				}
				for _, e := range right {
					counts[fmt.Sprintf("k%d end=%d", e.Key, bucketEnd(e.Ts))] += 1000
				}
				var want []string
				for k, n := range counts {
					want = append(want, fmt.Sprintf("%s n=%d", k, n))
				}
				env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend, StateDir: t.TempDir()})
				ls, rs := joinSources(env, left, right, disorder)
				got := run(t, env, withTimestamp(weir.KeyedCoProcess[int64, joinEv, joinEv, string](weir.ConnectKeyed(ls, rs), &bucketCounter{})))
				for i, g := range got { // the record carries the timer's time
					var k, end, n, rec int64
					if _, err := fmt.Sscanf(g, "k%d end=%d n=%d rec=%d", &k, &end, &n, &rec); err != nil || rec != end {
						t.Fatalf("%q: timestamp is not the timer's (%v)", g, err)
					}
					got[i] = fmt.Sprintf("k%d end=%d n=%d", k, end, n)
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("%d buckets, want %d; first difference: %s", len(got), len(want), firstDiff(got, want))
				}
			})
		}
	}
}

// CoMap and CoProcess (with a side output) over connected non-keyed
// streams: every element of both sides once, through the right function.
func TestCoMapAndCoProcessSideOutput(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 11))
	ints := make([]int64, 500+rng.IntN(500))
	strs := make([]string, 500+rng.IntN(500))
	for i := range ints {
		ints[i] = rng.Int64N(1000)
	}
	for i := range strs {
		strs[i] = strconv.Itoa(rng.IntN(1000))
	}
	var want, wantOdd []string
	for _, v := range ints {
		want = append(want, fmt.Sprintf("i%d", v))
	}
	for _, s := range strs {
		if n, _ := strconv.Atoi(s); n%2 == 1 {
			wantOdd = append(wantOdd, s)
		} else {
			want = append(want, "s"+s)
		}
	}
	slices.Sort(want)
	slices.Sort(wantOdd)
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: p})
			c := weir.Connect(weir.FromSlice(env, ints), weir.FromSlice(env, strs))
			got := run(t, env, weir.CoMap(c, func(v int64) string { return fmt.Sprintf("i%d", v) }, func(s string) string { return "s" + s }))
			slices.Sort(got)
			all := slices.Clone(want)
			for _, s := range wantOdd {
				all = append(all, "s"+s)
			}
			slices.Sort(all)
			if !slices.Equal(got, all) {
				t.Fatalf("CoMap: %d elements, want %d; %s", len(got), len(all), firstDiff(got, all))
			}

			env = weir.NewEnvironment(weir.Config{Parallelism: p})
			c = weir.Connect(weir.FromSlice(env, ints), weir.FromSlice(env, strs))
			odd := weir.NewOutputTag[string]("odd")
			res := weir.CoProcess[int64, string, string](c, coSplit{odd})
			main, side := collectBoth(t, env, weir.Collect(res), weir.Collect(weir.SideOutput(res, odd)))
			slices.Sort(main)
			slices.Sort(side)
			if !slices.Equal(main, want) || !slices.Equal(side, wantOdd) {
				t.Fatalf("CoProcess: %d main and %d side elements, want %d and %d; main %s", len(main), len(side), len(want), len(wantOdd), firstDiff(main, want))
			}
		})
	}
}

type coSplit struct{ odd weir.OutputTag[string] }

func (c coSplit) ProcessElement1(_ weir.Context, v int64, out weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("i%d", v))
	return nil
}

func (c coSplit) ProcessElement2(ctx weir.Context, s string, out weir.Collector[string]) error {
	if n, _ := strconv.Atoi(s); n%2 == 1 {
		c.odd.Output(ctx, s)
	} else {
		out.Collect("s" + s)
	}
	return nil
}

// coFiresOnce registers a processing-time timer for the key of every
// element of either side and emits the key, with its side's mark in keyed
// state, when the timer fires.
type coFiresOnce struct{ side state.ValueState[string] }

func (c *coFiresOnce) Open(ctx weir.KeyedRuntimeContext) error {
	c.side = state.GetValueState(ctx.State(), state.ValueDescriptor[string]{Name: "side", Codec: codec.String()})
	return nil
}

func (c *coFiresOnce) register(ctx weir.KeyedContext[string], side string) error {
	c.side.Update(side)
	ts := ctx.TimerService()
	ts.RegisterProcessingTimeTimer(ts.CurrentProcessingTime() + 20)
	return nil
}

func (c *coFiresOnce) ProcessElement1(ctx weir.KeyedContext[string], _ string, _ weir.Collector[string]) error {
	return c.register(ctx, "1")
}

func (c *coFiresOnce) ProcessElement2(ctx weir.KeyedContext[string], _ int64, _ weir.Collector[string]) error {
	return c.register(ctx, "2")
}

func (c *coFiresOnce) OnTimer(ctx weir.OnTimerContext[string], _ int64, out weir.Collector[string]) error {
	if ctx.TimeDomain() != weir.ProcessingTime {
		return fmt.Errorf("want a processing-time timer")
	}
	s, _ := c.side.Value()
	out.Collect(ctx.CurrentKey() + s)
	return nil
}

// Processing-time timers of a keyed co-process function fire for keys of
// both sides, with the keyed state each side wrote.
func TestKeyedCoProcessProcessingTimeTimers(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	// Unbounded: pending processing-time timers are dropped at end of input.
	a := weir.KeyBy(weir.Generate(env, -1, 50, func(i int64) string { return []string{"a", "b", "c"}[i%3] }), func(s string) string { return s })
	b := weir.KeyBy(weir.Generate(env, -1, 50, func(i int64) int64 { return i % 2 }), func(i int64) string { return []string{"d", "e"}[i] })
	fired := weir.Collect(weir.KeyedCoProcess[string, string, int64, string](weir.ConnectKeyed(a, b), &coFiresOnce{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "co-timers")
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
	want := map[string]bool{"a1": true, "b1": true, "c1": true, "d2": true, "e2": true}
	got := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case v := <-seen:
			if !want[v] {
				t.Fatalf("timer fired for %q, want one of %v", v, want)
			}
			got[v] = true
		case <-deadline:
			t.Fatalf("timers fired only for %v", got)
		}
	}
	cancel()
	job.Wait(context.Background())
}

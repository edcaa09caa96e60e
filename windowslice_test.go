package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// sliceAcc is an order-insensitive accumulator (count, sum and max of the
// timestamps) that carries its key, so that WindowAggregate's plain
// results say whose window they are.
type sliceAcc struct {
	Key         string
	N, Sum, Max int64
}

type sliceAgg struct{}

func (sliceAgg) CreateAccumulator() sliceAcc { return sliceAcc{Max: -1 << 62} }
func (sliceAgg) Add(e keyTs, a sliceAcc) sliceAcc {
	return sliceAcc{Key: e.F0, N: a.N + 1, Sum: a.Sum + e.F1, Max: max(a.Max, e.F1)}
}
func (sliceAgg) GetResult(a sliceAcc) sliceAcc { return a }
func (sliceAgg) Merge(a, b sliceAcc) sliceAcc {
	return sliceAcc{Key: max(a.Key, b.Key), N: a.N + b.N, Sum: a.Sum + b.Sum, Max: max(a.Max, b.Max)}
}

// sliceCase is one window configuration of the reference test.
type sliceCase struct {
	assigner weir.WindowAssigner
	lateness time.Duration
	lateTag  bool
	fn       int // 0 WindowAggregate, 1 WindowAggregateProcess, 2 WindowReduce, 3 WindowReduceProcess
}

func (c sliceCase) String() string {
	return fmt.Sprintf("%+v lateness=%v late-output=%v fn=%d", c.assigner, c.lateness, c.lateTag, c.fn)
}

// runSliceCase runs c on in and returns the fired windows (one line each,
// with the record's timestamp) and the late elements, both sorted.
func runSliceCase(t *testing.T, c sliceCase, in []keyTs, disorder time.Duration, backend string, p int) ([]string, []string) {
	t.Helper()
	env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend, StateDir: t.TempDir(),
		WindowSliceCache: []int{0, 3, -1}[len(in)%3]}) // the cache's bound and its absence too
	ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, disorder), func(e keyTs) string { return e.F0 }), c.assigner).
		AllowedLateness(c.lateness)
	late := weir.NewOutputTag[keyTs]("late")
	if c.lateTag {
		ws = ws.SideOutputLateData(late)
	}
	var res weir.DataStream[string]
	var side weir.DataStream[keyTs]
	line := func(ctx weir.Context, s string, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s ts=%d", s, ctx.Timestamp()))
		return nil
	}
	switch c.fn {
	case 0:
		r := weir.WindowAggregate[string, keyTs, sliceAcc, sliceAcc](ws, sliceAgg{})
		side = weir.SideOutput(r, late)
		res = weir.Process(weir.Map(r, func(a sliceAcc) string { return fmt.Sprintf("%+v", a) }), weir.ProcessFunc[string, string](line))
	case 1:
		r := weir.WindowAggregateProcess[string, keyTs, sliceAcc, sliceAcc, string](ws, sliceAgg{},
			weir.ProcessWindowFunc[string, sliceAcc, string](func(ctx weir.WindowContext[string], a []sliceAcc, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s %v %+v ts=%d wm=%v", ctx.CurrentKey(), ctx.Window(), a, ctx.Timestamp(), ctx.CurrentWatermark() >= ctx.Window().MaxTimestamp()))
				return nil
			}))
		side = weir.SideOutput(r, late)
		res = r
	case 2, 3:
		reduce := func(a, b keyTs) keyTs { return keyTs{F0: a.F0, F1: a.F1 + b.F1} } // a sum of timestamps
		if c.fn == 2 {
			r := weir.WindowReduce(ws, reduce)
			side = weir.SideOutput(r, late)
			res = weir.Process(weir.Map(r, func(e keyTs) string { return fmt.Sprint(e) }), weir.ProcessFunc[string, string](line))
		} else {
			r := weir.WindowReduceProcess[string, keyTs, string](ws, reduce,
				weir.ProcessWindowFunc[string, keyTs, string](func(ctx weir.WindowContext[string], e []keyTs, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("%s %v %v ts=%d", ctx.CurrentKey(), ctx.Window(), e, ctx.Timestamp()))
					return nil
				}))
			side = weir.SideOutput(r, late)
			res = r
		}
	}
	got, lateGot := collectBoth(t, env, weir.Collect(res), weir.Collect(side))
	lateLines := make([]string, len(lateGot))
	for i, e := range lateGot {
		lateLines[i] = fmt.Sprint(e)
	}
	slices.Sort(got)
	slices.Sort(lateLines)
	return got, lateLines
}

// TestSlicedWindowsMatchGeneralOperator runs random out-of-order input with
// late elements through the sliced window operator and through the general
// one (forced), for tumbling and sliding windows of random sizes, slides
// (also not multiples of each other, and slides over the size) and offsets,
// with and without allowed lateness and a late side output, every window
// function, both backends and parallelism 1 and 3: the fired windows (with
// their timestamps) and the late elements must be identical.
func TestSlicedWindowsMatchGeneralOperator(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 17))
	rounds := 8
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
		var c sliceCase
		size := 2 + rng.Int64N(30)
		switch rng.IntN(5) {
		case 0:
			a := weir.TumblingEventTimeWindows(ms(size))
			if rng.IntN(2) == 0 {
				a = a.WithOffset(ms(rng.Int64N(size)))
			}
			c.assigner = a
		case 1: // size a multiple of slide
			slide := 1 + rng.Int64N(6)
			c.assigner = weir.SlidingEventTimeWindows(ms(slide*(1+rng.Int64N(8))), ms(slide)).WithOffset(ms(rng.Int64N(slide)))
		case 2: // not divisible: slices of gcd(size, slide)
			slide := 2 + rng.Int64N(size)
			c.assigner = weir.SlidingEventTimeWindows(ms(size), ms(slide)).WithOffset(ms(rng.Int64N(slide)))
		case 3: // a slide over the size: gaps between windows
			c.assigner = weir.SlidingEventTimeWindows(ms(size), ms(size+1+rng.Int64N(10)))
		default: // many slices per window (the cache's two stacks), a negative offset
			slide := 1 + rng.Int64N(3)
			c.assigner = weir.SlidingEventTimeWindows(ms(slide*(20+rng.Int64N(40))), ms(slide)).WithOffset(-ms(rng.Int64N(slide)))
		}
		if rng.IntN(3) > 0 {
			c.lateness = ms(rng.Int64N(40))
		}
		c.lateTag = rng.IntN(2) == 0
		c.fn = rng.IntN(4)
		// Input: timestamps drifting up with disorder, and some elements far
		// behind (late, or within the lateness).
		n := 150 + rng.IntN(200)
		disorder := rng.Int64N(8)
		in := make([]keyTs, n)
		for i := range in {
			ts := int64(i)/2 + rng.Int64N(disorder+1) - 20
			if rng.IntN(8) == 0 {
				ts -= rng.Int64N(80)
			}
			in[i] = keyTs{F0: fmt.Sprintf("k%d", rng.IntN(4)), F1: ts}
		}
		// From how many state entries on the sliced operator holds elements
		// back (0: from the start; else it switches in the middle of a run).
		holdFrom := rng.IntN(3) * rng.IntN(8)
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Logf("case %v, %d elements, disorder %d, holding from %d entries", c, n, disorder, holdFrom)
			for _, backend := range []string{"hashmap", "pebble"} {
				for _, p := range []int{1, 3} {
					restore := weir.ForceGeneralWindowOp(true)
					before := weir.SlicedOpsOpened()
					want, wantLate := runSliceCase(t, c, in, ms(disorder), backend, p)
					restore()
					if weir.SlicedOpsOpened() != before {
						t.Fatal("the forced general operator ran the sliced one")
					}
					// At p=3 the sliced operator holds elements back in runs
					// (heap backend), as it does on a large state.
					restore = func() {}
					if p == 3 {
						restore = weir.HoldWindowElements(holdFrom)
					}
					got, gotLate := runSliceCase(t, c, in, ms(disorder), backend, p)
					restore()
					if weir.SlicedOpsOpened() == before {
						t.Fatal("the sliced operator did not run")
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s p=%d: sliced fired %d windows, general %d\nsliced:  %q\ngeneral: %q", backend, p, len(got), len(want), got, want)
					}
					if !slices.Equal(gotLate, wantLate) {
						t.Errorf("%s p=%d: late elements differ\nsliced:  %q\ngeneral: %q", backend, p, gotLate, wantLate)
					}
					if len(want) == 0 {
						t.Errorf("%s p=%d: no window fired: the case tests nothing", backend, p)
					}
				}
			}
		})
	}
}

// Sliding windows on the sliced operator, with allowed lateness and late
// elements, fail once after a checkpoint and restart from it: slice state,
// timers and the watermark come back, the per-key caches are rebuilt from
// state, and the committed output (files committed per checkpoint) is what
// the general operator gives on an uninterrupted run, each window firing
// exactly once.
func TestSlicedWindowsSurviveFailure(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 19))
	n := 3000 + rng.Int64N(2000)
	keys, disorder := 3+rng.Int64N(10), 1+rng.Int64N(10)
	elem := func(i int64) keyTs { // deterministic, so the reference can replay it
		ts := i + (i*104729)%disorder
		if i%37 == 0 {
			ts -= 30 + (i*7919)%60 // behind the watermark: within the lateness or too late
		}
		return keyTs{F0: fmt.Sprintf("k%d", (i*7919)%keys), F1: ts}
	}
	assigner := weir.SlidingEventTimeWindows(25*time.Millisecond, 10*time.Millisecond) // slices of 5 ms
	declare := func(env *weir.Environment, src weir.DataStream[int64], mapFn func(int64) keyTs) (weir.DataStream[string], weir.DataStream[keyTs]) {
		evs := weir.Map(src, mapFn).SetParallelism(1)
		evs = weir.AssignTimestampsAndWatermarks(evs, weir.WatermarkStrategy[keyTs]{
			Timestamp: func(e keyTs) int64 { return e.F1 },
			Generator: weir.PunctuatedWatermarks[keyTs](time.Duration(disorder) * time.Millisecond)}).SetParallelism(1)
		late := weir.NewOutputTag[keyTs]("late")
		ws := weir.Window(weir.KeyBy(evs, func(e keyTs) string { return e.F0 }), assigner).
			AllowedLateness(40 * time.Millisecond).SideOutputLateData(late)
		res := weir.WindowAggregateProcess[string, keyTs, sliceAcc, sliceAcc, string](ws, sliceAgg{},
			weir.ProcessWindowFunc[string, sliceAcc, string](func(ctx weir.WindowContext[string], a []sliceAcc, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s %v %+v ts=%d", ctx.CurrentKey(), ctx.Window(), a[0], ctx.Timestamp()))
				return nil
			}))
		return res, weir.Map(weir.SideOutput(res, late), func(e keyTs) keyTs { return e })
	}

	// The reference: the general operator, no failure.
	restore := weir.ForceGeneralWindowOp(true)
	env := weir.NewEnvironment(weir.Config{Parallelism: 3})
	res, late := declare(env, weir.Generate(env, n, 0, func(i int64) int64 { return i }).SetParallelism(1), elem)
	want, wantLate := collectBoth(t, env, weir.Collect(res), weir.Collect(late))
	restore()
	wantLateLines := make([]string, len(wantLate))
	for i, e := range wantLate {
		wantLateLines[i] = fmt.Sprint(e)
	}
	if len(wantLate) == 0 || len(want) == 0 {
		t.Fatalf("the reference has %d windows and %d late elements: the input tests nothing", len(want), len(wantLate))
	}

	// The heap backend's operators hold elements back in runs, as they do
	// on a large state: every barrier must find none held.
	defer weir.HoldWindowElements(0)()
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			f := newFailOnce(int64(n))
			before := weir.SlicedOpsOpened()
			env := weir.NewEnvironment(f.config(t, backend))
			// About a second of input, so that checkpoints complete mid-way.
			src := weir.Generate(env, n, float64(n), func(i int64) int64 { return i }).SetParallelism(1)
			res, late := declare(env, src, func(i int64) keyTs {
				f.pass(int64(i))
				return elem(i)
			})
			resDir, lateDir := t.TempDir(), t.TempDir()
			weir.WriteFiles(res, resDir, nil)
			weir.WriteFiles(late, lateDir, nil)
			if _, err := env.Execute(context.Background(), "sliced-window-failure"); err != nil {
				t.Fatal(err)
			}
			if weir.SlicedOpsOpened() == before {
				t.Fatal("the sliced operator did not run")
			}
			f.check(t)
			for name, c := range map[string][2][]string{"windows": {readCommitted(t, resDir), want}, "late elements": {readCommitted(t, lateDir), wantLateLines}} {
				got, want := c[0], slices.Clone(c[1])
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: %d results, want %d (restored from checkpoint %d); first difference: %s", name, len(got), len(want), f.restoredFrom.Load(), firstDiff(got, want))
				}
			}
		})
	}
}

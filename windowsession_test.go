package weir_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
)

// Event-time sessions on the fast path (state windows kept as markers in
// the session list) fail once after a checkpoint and restart from it, on
// out-of-order input with allowed lateness: the committed output, late side
// output included, is what the trigger path (which moves state on every
// merge) gives without a failure, each result exactly once.
func TestSessionsFastPathSurvivesFailure(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 41))
	n := 3000 + rng.Int64N(2000)
	keys, step := 2+rng.Int64N(6), 1+rng.Int64N(3)
	// About as long as a key's elements are apart: sessions extend, merge
	// (a late element bridging two) and end.
	gap := time.Duration(1+rng.Int64N(2*keys*step)) * time.Millisecond
	jitter := 1 + rng.Int64N(40)
	t.Logf("%d elements, %d keys, %d ms apart, gap %v, jitter %d ms", n, keys, step, gap, jitter)
	in := make([]keyTs, n)
	for i := range in {
		in[i] = keyTs{F0: fmt.Sprintf("k%d", rng.Int64N(keys)), F1: int64(i)*step + rng.Int64N(jitter) - jitter/2}
	}
	build := func(env *weir.Environment, src weir.DataStream[keyTs], trigger bool) (weir.DataStream[string], weir.DataStream[string]) {
		timed := weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[keyTs]{
			Timestamp: func(e keyTs) int64 { return e.F1 },
			Generator: weir.PunctuatedWatermarks[keyTs](time.Duration(jitter/4) * time.Millisecond)}).SetParallelism(1)
		late := weir.NewOutputTag[keyTs]("late")
		ws := weir.Window(weir.KeyBy(timed, keyOf), weir.EventTimeSessionWindows(gap)).
			AllowedLateness(time.Duration(jitter/4) * time.Millisecond).SideOutputLateData(late)
		if trigger {
			ws = ws.Trigger(wrapped{weir.EventTimeTrigger[keyTs]()})
		}
		res := weir.WindowAggregateProcess(ws, sumCountAgg{}, emitSumCount)
		return res, weir.Map(weir.SideOutput(res, late), func(e keyTs) string { return fmt.Sprintf("late %s %d", e.F0, e.F1) })
	}
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	a, b := build(env, weir.FromSlice(env, in).SetParallelism(1), true)
	want, wantLate := collectBoth(t, env, weir.Collect(a), weir.Collect(b))
	t.Logf("%d sessions fired, %d late elements", len(want), len(wantLate))
	want = append(want, wantLate...)
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			f := newFailOnce(n)
			env := weir.NewEnvironment(f.config(t, backend))
			// About a second of input, so that checkpoints complete mid-way.
			src := weir.Generate(env, n, float64(n), func(i int64) int64 { return i }).SetParallelism(1)
			evs := weir.Map(src, func(i int64) keyTs {
				f.pass(i)
				return in[i]
			}).SetParallelism(1)
			res, late := build(env, evs, false)
			dir := t.TempDir()
			weir.WriteFiles(weir.Union(res, late), dir, nil)
			if _, err := env.Execute(context.Background(), "session-failure"); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			t.Logf("restored from checkpoint %d", f.restoredFrom.Load())
			sameLines(t, "sessions", readCommitted(t, dir), want)
		})
	}
}

// Sessions of keys whose elements come in runs (one hot key, as Nexmark's
// hot bidder, between others), many at the same timestamp, out of order
// with allowed lateness: on the heap backend the fast path then keeps a
// run's key, session list and state namespace from element to element.
// It gives what the trigger path gives, late firings, merges, cleanups
// between two elements of a run and late data included.
func TestSessionRunsMatchTriggerPath(t *testing.T) {
	rng := testseed.Rand(t, 43)
	n := 2000 + rng.IntN(2000)
	in := make([]keyTs, n)
	ts := int64(0)
	for i := range in {
		k := "hot"
		if rng.IntN(4) == 0 {
			k = fmt.Sprintf("k%d", rng.IntN(6))
		}
		if rng.IntN(3) == 0 {
			ts += int64(rng.IntN(4))
		}
		in[i] = keyTs{F0: k, F1: ts + int64(rng.IntN(30)) - 15}
		if rng.IntN(200) == 0 {
			ts += 30 // a gap: sessions end
		}
	}
	gap := time.Duration(1+rng.IntN(8)) * time.Millisecond
	t.Logf("%d elements, gap %v", n, gap)
	results := func(backend string, trigger bool) ([]string, []keyTs) {
		env := weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: backend, StateDir: t.TempDir()})
		late := weir.NewOutputTag[keyTs]("late")
		ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 5*time.Millisecond), keyOf), weir.EventTimeSessionWindows(gap)).
			AllowedLateness(10 * time.Millisecond).SideOutputLateData(late)
		if trigger {
			ws = ws.Trigger(wrapped{weir.EventTimeTrigger[keyTs]()})
		}
		res := weir.WindowAggregateProcess(ws, sumCountAgg{}, emitSumCount)
		got, lateGot := collectBoth(t, env, weir.Collect(res), weir.Collect(weir.SideOutput(res, late)))
		slices.Sort(got)
		slices.SortFunc(lateGot, func(x, y keyTs) int { return cmp.Or(cmp.Compare(x.F0, y.F0), cmp.Compare(x.F1, y.F1)) })
		return got, lateGot
	}
	want, wantLate := results("hashmap", true)
	t.Logf("%d firings, %d late elements", len(want), len(wantLate))
	for _, backend := range []string{"hashmap", "pebble"} {
		got, gotLate := results(backend, false)
		sameLines(t, backend, got, want)
		if !slices.Equal(gotLate, wantLate) {
			t.Errorf("%s: late %v, want %v", backend, gotLate, wantLate)
		}
	}
}

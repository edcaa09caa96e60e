package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirhq/weir"
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

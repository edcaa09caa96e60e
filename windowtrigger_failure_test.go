package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

type kv = tuple.T2[int64, int64]

// Count windows and a continuous event-time trigger fail once after a
// checkpoint and restart from it: the count trigger's state (how many
// elements each key's window has since it last fired), the continuous
// trigger's state and timers (the next firing, in the window's namespace)
// and the windows' contents (the reduce value; the evicting window's list)
// come back, and the committed output is what the models give, each result
// exactly once.
func TestCountWindowsAndTriggersSurviveFailure(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 17))
	n := 3000 + rng.Int64N(2000)
	keys := 3 + rng.Int64N(10)
	size, slide := 2+rng.Int64N(6), 1+rng.Int64N(4)
	winSize, interval := 20+rng.Int64N(200), 1+rng.Int64N(50)
	t.Logf("%d elements, %d keys, count size %d slide %d, window %d ms, continuous interval %d ms", n, keys, size, slide, winSize, interval)
	elem := func(i int64) kv { return kv{F0: (i * 7919) % keys, F1: i} }
	perKey := map[int64][]int64{}
	var wantT, wantS []string
	for i := range n {
		e := elem(i)
		l := append(perKey[e.F0], e.F1)
		perKey[e.F0] = l
		m := int64(len(l))
		if m%size == 0 {
			wantT = append(wantT, fmt.Sprintf("k%d sum=%d", e.F0, sum(l[m-size:])))
		}
		if m%slide == 0 {
			wantS = append(wantS, fmt.Sprintf("k%d %v", e.F0, l[max(0, m-size):]))
		}
	}
	timed := make([]keyTs, n) // timestamp = index: sorted, so nothing is late
	for i := range n {
		timed[i] = keyTs{F0: fmt.Sprintf("k%d", elem(i).F0), F1: i}
	}
	wantC := continuousModel(timed, winSize, interval, false)
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			f := newFailOnce(int64(n))
			env := weir.NewEnvironment(f.config(t, backend))
			// About a second of input, so that checkpoints complete mid-way.
			src := weir.Generate(env, n, float64(n), func(i int64) int64 { return i }).SetParallelism(1)
			evs := weir.Map(src, func(i int64) kv {
				f.pass(int64(i))
				return elem(i)
			}).SetParallelism(1)
			ks := weir.KeyBy(evs, func(e kv) int64 { return e.F0 })
			tumbling := weir.Map(weir.WindowReduce(weir.CountWindow(ks, size), func(a, b kv) kv { return kv{F0: a.F0, F1: a.F1 + b.F1} }),
				func(e kv) string { return fmt.Sprintf("k%d sum=%d", e.F0, e.F1) })
			sliding := weir.WindowProcess(weir.CountWindowSliding(ks, size, slide),
				weir.ProcessWindowFunc[int64, kv, string](func(ctx weir.WindowContext[int64], els []kv, out weir.Collector[string]) error {
					vs := make([]int64, len(els))
					for i, e := range els {
						vs[i] = e.F1
					}
					out.Collect(fmt.Sprintf("k%d %v", ctx.CurrentKey(), vs))
					return nil
				}))
			withTs := weir.AssignTimestampsAndWatermarks(weir.Map(evs, func(e kv) keyTs { return keyTs{F0: fmt.Sprintf("k%d", e.F0), F1: e.F1} }).SetParallelism(1),
				weir.WatermarkStrategy[keyTs]{Timestamp: func(e keyTs) int64 { return e.F1 }, Generator: weir.PunctuatedWatermarks[keyTs](0)}).SetParallelism(1)
			continuous := weir.WindowAggregateProcess(weir.Window(weir.KeyBy(withTs, keyOf), weir.TumblingEventTimeWindows(time.Duration(winSize)*time.Millisecond)).
				Trigger(weir.ContinuousEventTimeTrigger[keyTs](time.Duration(interval)*time.Millisecond)), sumCountAgg{}, emitSumCount)
			tDir, sDir, cDir := t.TempDir(), t.TempDir(), t.TempDir()
			weir.WriteFiles(tumbling, tDir, nil)
			weir.WriteFiles(sliding, sDir, nil)
			weir.WriteFiles(continuous, cDir, nil)
			if _, err := env.Execute(context.Background(), "count-window-failure"); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			t.Logf("restored from checkpoint %d", f.restoredFrom.Load())
			sameLines(t, "tumbling count windows", readCommitted(t, tDir), wantT)
			sameLines(t, "sliding count windows", readCommitted(t, sDir), wantS)
			sameLines(t, "continuous event-time trigger", readCommitted(t, cDir), wantC)
		})
	}
}

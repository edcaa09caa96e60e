package weir_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

type keyTs = tuple.T2[string, int64]

// punctuatedSource emits in, in order, with a watermark after each element
// (highest timestamp - outOfOrderness - 1), from one subtask: the results
// of windows downstream do not depend on timing.
func punctuatedSource(env *weir.Environment, in []keyTs, outOfOrderness time.Duration) weir.DataStream[keyTs] {
	return weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, in).SetParallelism(1), weir.WatermarkStrategy[keyTs]{
		Timestamp: func(e keyTs) int64 { return e.F1 },
		Generator: weir.PunctuatedWatermarks[keyTs](outOfOrderness)}).SetParallelism(1)
}

// A tumbling window fires when the watermark passes its end; elements for a
// window already fired go to the late side output. Both backends.
func TestTumblingWindowFiresAndSendsLateData(t *testing.T) {
	in := []keyTs{{F0: "a", F1: 1}, {F0: "a", F1: 5}, {F0: "b", F1: 7}, {F0: "a", F1: 12}, {F0: "a", F1: 3}, {F0: "a", F1: 30}, {F0: "a", F1: 9}}
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: backend, StateDir: t.TempDir()})
			late := weir.NewOutputTag[keyTs]("late")
			ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), func(e keyTs) string { return e.F0 }),
				weir.TumblingEventTimeWindows(10*time.Millisecond)).SideOutputLateData(late)
			res := weir.WindowProcess(ws, weir.ProcessWindowFunc[string, keyTs, string](func(ctx weir.WindowContext[string], els []keyTs, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s %v n=%d ts=%d", ctx.CurrentKey(), ctx.Window(), len(els), ctx.Timestamp()))
				return nil
			}))
			got, lateGot := collectBoth(t, env, weir.Collect(res), weir.Collect(weir.SideOutput(res, late)))
			slices.Sort(got)
			want := []string{"a [0, 10) n=2 ts=9", "a [10, 20) n=1 ts=19", "a [30, 40) n=1 ts=39", "b [0, 10) n=1 ts=9"}
			if !slices.Equal(got, want) {
				t.Errorf("fired %q, want %q", got, want)
			}
			if wantLate := []keyTs{{F0: "a", F1: 3}, {F0: "a", F1: 9}}; !slices.Equal(lateGot, wantLate) {
				t.Errorf("late %v, want %v", lateGot, wantLate)
			}
		})
	}
}

// countAgg counts elements.
type countAgg struct{}

func (countAgg) CreateAccumulator() int64   { return 0 }
func (countAgg) Add(_ keyTs, n int64) int64 { return n + 1 }
func (countAgg) GetResult(n int64) int64    { return n }
func (countAgg) Merge(a, b int64) int64     { return a + b }

// Session windows merge as Flink's do: a late element (within the allowed
// lateness) that falls next to a fired session merges into it and fires the
// merged session at once; one that bridges two fired sessions merges all
// three; windows that only touch merge too.
func TestSessionMergesLateAndBridging(t *testing.T) {
	in := []keyTs{
		{F0: "a", F1: 0},    // [0,10)
		{F0: "a", F1: 30},   // [30,40); watermark 29 fires [0,10)
		{F0: "a", F1: 50},   // [50,60); watermark 49 fires [30,40)
		{F0: "a", F1: 8},    // late: merges into [0,18), fired at once
		{F0: "a", F1: 20},   // [20,30) touches [30,40): [20,40), fired at once
		{F0: "a", F1: 15},   // bridges [0,18) and [20,40): [0,40), fired at once
		{F0: "b", F1: -200}, // too late for any window: late output
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: backend, StateDir: t.TempDir()})
			late := weir.NewOutputTag[keyTs]("late")
			ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), func(e keyTs) string { return e.F0 }),
				weir.EventTimeSessionWindows(10*time.Millisecond)).AllowedLateness(100 * time.Millisecond).SideOutputLateData(late)
			res := weir.WindowAggregateProcess[string, keyTs, int64, int64, string](ws, countAgg{},
				weir.ProcessWindowFunc[string, int64, string](func(ctx weir.WindowContext[string], n []int64, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("%s %v n=%d", ctx.CurrentKey(), ctx.Window(), n[0]))
					return nil
				}))
			got, lateGot := collectBoth(t, env, weir.Collect(res), weir.Collect(weir.SideOutput(res, late)))
			slices.Sort(got)
			want := []string{"a [0, 10) n=1", "a [0, 18) n=2", "a [0, 40) n=5", "a [20, 40) n=2", "a [30, 40) n=1", "a [50, 60) n=1"}
			if !slices.Equal(got, want) {
				t.Errorf("fired %q, want %q", got, want)
			}
			if wantLate := []keyTs{{F0: "b", F1: -200}}; !slices.Equal(lateGot, wantLate) {
				t.Errorf("late %v, want %v", lateGot, wantLate)
			}
		})
	}
}

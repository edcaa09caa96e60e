package weir_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

// eachBackendAndParallelism runs fn on both state backends at each
// parallelism of the window operator.
func eachBackendAndParallelism(t *testing.T, ps []int, fn func(t *testing.T, env *weir.Environment)) {
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range ps {
			t.Run(fmt.Sprintf("%s/p%d", backend, p), func(t *testing.T) {
				fn(t, weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend, StateDir: t.TempDir()}))
			})
		}
	}
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the model emits nothing; the test proves nothing", what)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: %d results, want %d; first difference: %s", what, len(got), len(want), firstDiff(got, want))
	}
}

// sortedEvents are n events of a few keys with non-decreasing timestamps
// (random gaps), so that with punctuated watermarks (out-of-orderness 0) no
// element is late and results do not depend on timing.
func sortedEvents(t *testing.T, stream uint64, n, keys, maxGap int) []keyTs {
	rng := testseed.Rand(t, stream)
	out := make([]keyTs, n)
	ts := int64(rng.IntN(100)) - 50
	for i := range out {
		ts += int64(rng.IntN(maxGap + 1))
		out[i] = keyTs{F0: "k" + strconv.Itoa(rng.IntN(keys)), F1: ts}
	}
	return out
}

func keyOf(e keyTs) string { return e.F0 }

// Count windows against a per-key model: tumbling (sum of each size
// elements; an incomplete last window never fires) and sliding (every slide
// elements, the last size of them).
func TestCountWindowsMatchModel(t *testing.T) {
	rng := testseed.Rand(t, 1)
	size, slide := int64(1+rng.IntN(6)), int64(1+rng.IntN(4))
	in := sortedEvents(t, 2, 500+rng.IntN(500), 7, 5)
	var wantTumbling, wantSliding []string
	perKey := map[string][]int64{}
	for _, e := range in {
		l := append(perKey[e.F0], e.F1)
		perKey[e.F0] = l
		if n := int64(len(l)); n%size == 0 {
			var sum int64
			for _, v := range l[n-size:] {
				sum += v
			}
			wantTumbling = append(wantTumbling, fmt.Sprintf("%s sum=%d", e.F0, sum))
		}
		if n := int64(len(l)); n%slide == 0 {
			wantSliding = append(wantSliding, fmt.Sprintf("%s %v", e.F0, l[max(0, n-size):]))
		}
	}
	t.Logf("size %d slide %d, %d elements", size, slide, len(in))
	eachBackendAndParallelism(t, []int{1, 3}, func(t *testing.T, env *weir.Environment) {
		ks := weir.KeyBy(weir.FromSlice(env, in).SetParallelism(1), keyOf)
		tumbling := weir.WindowReduceProcess(weir.CountWindow(ks, size), func(a, b keyTs) keyTs { return keyTs{F0: a.F0, F1: a.F1 + b.F1} },
			weir.ProcessWindowFunc[string, keyTs, string](func(ctx weir.WindowContext[string], r []keyTs, out weir.Collector[string]) error {
				if ctx.Window() != weir.GlobalWindow || ctx.Timestamp() != math.MaxInt64 {
					return fmt.Errorf("window %v timestamp %d, want the global window at MaxInt64", ctx.Window(), ctx.Timestamp())
				}
				out.Collect(fmt.Sprintf("%s sum=%d", ctx.CurrentKey(), r[0].F1))
				return nil
			}))
		sliding := weir.WindowProcess(weir.CountWindowSliding(ks, size, slide),
			weir.ProcessWindowFunc[string, keyTs, string](func(ctx weir.WindowContext[string], els []keyTs, out weir.Collector[string]) error {
				vs := make([]int64, len(els))
				for i, e := range els {
					vs[i] = e.F1
				}
				out.Collect(fmt.Sprintf("%s %v", ctx.CurrentKey(), vs))
				return nil
			}))
		gotT, gotS := collectBoth(t, env, weir.Collect(tumbling), weir.Collect(sliding))
		sameLines(t, "tumbling count windows", gotT, wantTumbling)
		sameLines(t, "sliding count windows", gotS, wantSliding)
	})
}

// windowModel simulates an event-time window operator over sortedEvents
// with punctuated watermarks (each element, then watermark ts-1; the final
// watermark at the end) for tumbling windows of size with a trigger given
// as callbacks; it returns the emitted lines.
type modelWindow struct {
	key        string
	start, end int64
	els        []int64 // timestamps of the elements in the window
	fireAt     int64   // continuous trigger: next firing, or MinInt64
}

func (w *modelWindow) line() string {
	return fmt.Sprintf("%s [%d, %d) n=%d sum=%d", w.key, w.start, w.end, len(w.els), sum(w.els))
}

func sum(vs []int64) int64 {
	var s int64
	for _, v := range vs {
		s += v
	}
	return s
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// continuousModel is Flink's ContinuousEventTimeTrigger(interval) on
// tumbling windows of size, optionally purging, over sorted events.
func continuousModel(in []keyTs, size, interval int64, purging bool) []string {
	type wkey struct {
		k string
		s int64
	}
	wins := map[wkey]*modelWindow{}
	timers := map[wkey]map[int64]bool{}
	var out []string
	fire := func(w *modelWindow) {
		if len(w.els) > 0 {
			out = append(out, w.line())
		}
		if purging {
			w.els = nil
		}
	}
	advance := func(wm int64) {
		for {
			// The earliest due timer (ties in any order: contents do not
			// change while the watermark advances).
			var best wkey
			bt, found := int64(math.MaxInt64), false
			for k, ts := range timers {
				for tm := range ts {
					if tm <= wm && (!found || tm < bt) {
						best, bt, found = k, tm, true
					}
				}
			}
			if !found {
				return
			}
			delete(timers[best], bt)
			w := wins[best]
			maxTs := w.end - 1
			if bt == maxTs {
				fire(w)
				delete(wins, best) // cleanup (no lateness): the same timer
				delete(timers, best)
				continue
			}
			if w.fireAt == bt {
				w.fireAt = min(bt+interval, maxTs)
				timers[best][w.fireAt] = true
				fire(w)
			}
		}
	}
	for _, e := range in {
		s := floorDiv(e.F1, size) * size
		k := wkey{e.F0, s}
		w := wins[k]
		if w == nil {
			w = &modelWindow{key: e.F0, start: s, end: s + size, fireAt: math.MinInt64}
			wins[k], timers[k] = w, map[int64]bool{}
		}
		w.els = append(w.els, e.F1)
		timers[k][w.end-1] = true
		if w.fireAt == math.MinInt64 {
			w.fireAt = min(e.F1-e.F1%interval+interval, w.end-1)
			timers[k][w.fireAt] = true
		}
		advance(e.F1 - 1)
	}
	advance(math.MaxInt64)
	return out
}

type sumCount struct{ N, Sum int64 }

type sumCountAgg struct{}

func (sumCountAgg) CreateAccumulator() sumCount      { return sumCount{} }
func (sumCountAgg) Add(e keyTs, a sumCount) sumCount { return sumCount{a.N + 1, a.Sum + e.F1} }
func (sumCountAgg) GetResult(a sumCount) sumCount    { return a }
func (sumCountAgg) Merge(a, b sumCount) sumCount     { return sumCount{a.N + b.N, a.Sum + b.Sum} }
func windowLine(ctx weir.WindowContext[string], r sumCount) string {
	return fmt.Sprintf("%s %v n=%d sum=%d", ctx.CurrentKey(), ctx.Window(), r.N, r.Sum)
}

var emitSumCount = weir.ProcessWindowFunc[string, sumCount, string](func(ctx weir.WindowContext[string], r []sumCount, out weir.Collector[string]) error {
	out.Collect(windowLine(ctx, r[0]))
	return nil
})

// ContinuousEventTimeTrigger on tumbling windows fires every interval of
// event time and at the window's end; wrapped in PurgingTrigger, each
// firing drops what it fired. Both against a simulation of Flink's
// trigger.
func TestContinuousAndPurgingTriggersMatchModel(t *testing.T) {
	rng := testseed.Rand(t, 3)
	size := int64(10 + rng.IntN(40))
	interval := int64(1 + rng.IntN(int(size)))
	in := sortedEvents(t, 4, 300+rng.IntN(300), 4, 4)
	t.Logf("size %d interval %d", size, interval)
	want := continuousModel(in, size, interval, false)
	wantPurging := continuousModel(in, size, interval, true)
	eachBackendAndParallelism(t, []int{1, 3}, func(t *testing.T, env *weir.Environment) {
		ks := weir.KeyBy(punctuatedSource(env, in, 0), keyOf)
		ws := weir.Window(ks, weir.TumblingEventTimeWindows(time.Duration(size)*time.Millisecond))
		cont := weir.ContinuousEventTimeTrigger[keyTs](time.Duration(interval) * time.Millisecond)
		a := weir.WindowAggregateProcess(ws.Trigger(cont), sumCountAgg{}, emitSumCount)
		b := weir.WindowAggregateProcess(ws.Trigger(weir.PurgingTrigger(cont)), sumCountAgg{}, emitSumCount)
		got, gotPurging := collectBoth(t, env, weir.Collect(a), weir.Collect(b))
		sameLines(t, "continuous", got, want)
		sameLines(t, "purging continuous", gotPurging, wantPurging)
	})
}

// markerTrigger is a custom trigger written on the public API only: it
// fires and purges a window on a marker element (timestamp divisible by
// 7) or when its count of elements (trigger state) reaches 4, and at the
// window's end (its own event-time timer).
type markerTrigger struct {
	count state.ValueState[int64]
}

var markerCount = state.ValueDescriptor[int64]{Name: "marker-count", Codec: int64Codec()}

func int64Codec() codec.Codec[int64] {
	c, err := codec.For[int64]()
	if err != nil {
		panic(err)
	}
	return c
}

func (m *markerTrigger) st(ctx weir.TriggerContext) state.ValueState[int64] {
	if m.count == nil {
		m.count = state.GetValueState(ctx.State(), markerCount)
	}
	return m.count
}

func (m *markerTrigger) OnElement(e keyTs, ts int64, w weir.TimeWindow, ctx weir.TriggerContext) weir.TriggerResult {
	ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	st := m.st(ctx)
	n, _ := st.Value()
	if n++; n >= 4 || e.F1%7 == 0 {
		st.Clear()
		return weir.FireAndPurge
	}
	st.Update(n)
	return weir.Continue
}

func (m *markerTrigger) OnEventTime(tm int64, w weir.TimeWindow, ctx weir.TriggerContext) weir.TriggerResult {
	if tm == w.MaxTimestamp() {
		return weir.FireAndPurge
	}
	return weir.Continue
}
func (m *markerTrigger) OnProcessingTime(int64, weir.TimeWindow, weir.TriggerContext) weir.TriggerResult {
	return weir.Continue
}
func (m *markerTrigger) CanMerge() bool                               { return false }
func (m *markerTrigger) OnMerge(weir.TimeWindow, weir.OnMergeContext) {}
func (m *markerTrigger) Clear(w weir.TimeWindow, ctx weir.TriggerContext) {
	m.st(ctx).Clear()
	ctx.DeleteEventTimeTimer(w.MaxTimestamp())
}

func TestCustomTriggerWithStateMatchesModel(t *testing.T) {
	rng := testseed.Rand(t, 5)
	size := int64(20 + rng.IntN(40))
	in := sortedEvents(t, 6, 300+rng.IntN(300), 5, 4)
	type wkey struct {
		k string
		s int64
	}
	open := map[wkey][]int64{}
	var want []string
	line := func(k wkey, els []int64) string {
		return fmt.Sprintf("%s [%d, %d) n=%d sum=%d", k.k, k.s, k.s+size, len(els), sum(els))
	}
	advance := func(wm int64) {
		for k, els := range open {
			if k.s+size-1 <= wm {
				if len(els) > 0 {
					want = append(want, line(k, els))
				}
				delete(open, k)
			}
		}
	}
	for _, e := range in {
		k := wkey{e.F0, floorDiv(e.F1, size) * size}
		els := append(open[k], e.F1)
		if len(els) >= 4 || e.F1%7 == 0 {
			want = append(want, line(k, els))
			els = []int64{}
		}
		open[k] = els
		advance(e.F1 - 1)
	}
	advance(math.MaxInt64)
	eachBackendAndParallelism(t, []int{1, 3}, func(t *testing.T, env *weir.Environment) {
		ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), keyOf), weir.TumblingEventTimeWindows(time.Duration(size)*time.Millisecond)).
			Trigger(&markerTrigger{})
		sameLines(t, "marker trigger", run(t, env, weir.WindowAggregateProcess(ws, sumCountAgg{}, emitSumCount)), want)
	})
}

// A trigger that cannot merge fails the job at build time with sessions,
// naming it.
func TestNonMergingTriggerWithSessionsFailsAtBuild(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	ws := weir.Window(weir.KeyBy(punctuatedSource(env, []keyTs{{F0: "a", F1: 1}}, 0), keyOf), weir.EventTimeSessionWindows(time.Millisecond)).
		Trigger(&markerTrigger{})
	weir.Discard(weir.WindowAggregate(ws, sumCountAgg{}))
	_, err := env.Execute(t.Context(), "bad-trigger")
	if err == nil || !strings.Contains(err.Error(), "markerTrigger") || !strings.Contains(err.Error(), "cannot merge") {
		t.Fatalf("got %v, want an error naming the trigger that cannot merge", err)
	}
}

package weir_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

func sumKeyTs(a, b keyTs) keyTs { return keyTs{F0: a.F0, F1: a.F1 + b.F1} }

// Evictors on tumbling event-time windows (the default trigger: each
// window fires once, at its end, over sorted input) against a model: the
// function sees only what EvictBefore kept: the last n elements
// (CountEvictor), or those within d of the largest timestamp (TimeEvictor);
// reduce and process functions both.
func TestEvictorsMatchModel(t *testing.T) {
	rng := testseed.Rand(t, 7)
	size := int64(20 + rng.IntN(40))
	keep := int64(1 + rng.IntN(5))
	// At least 1 ms: a time evictor of 0 ms keeps nothing (ts > max - 0), and
	// a reduce over nothing emits nothing (decision 18), which the model
	// below does not express.
	span := int64(1 + rng.IntN(int(size)))
	in := sortedEvents(t, 8, 300+rng.IntN(300), 4, 3)
	t.Logf("size %d, count evictor %d, time evictor %dms", size, keep, span)
	type wkey struct {
		k string
		s int64
	}
	wins := map[wkey][]int64{}
	for _, e := range in {
		k := wkey{e.F0, floorDiv(e.F1, size) * size}
		wins[k] = append(wins[k], e.F1)
	}
	var wantCount, wantTime, wantCountList, wantTimeList []string
	for k, els := range wins {
		last := els[max(0, len(els)-int(keep)):]
		var recent []int64
		for _, ts := range els {
			if ts > els[len(els)-1]-span { // sorted: the last is the largest
				recent = append(recent, ts)
			}
		}
		w := weir.TimeWindow{Start: k.s, End: k.s + size}
		wantCount = append(wantCount, fmt.Sprintf("%s %v sum=%d", k.k, w, sum(last)))
		wantTime = append(wantTime, fmt.Sprintf("%s %v sum=%d", k.k, w, sum(recent)))
		wantCountList = append(wantCountList, fmt.Sprintf("%s %v %v", k.k, w, last))
		wantTimeList = append(wantTimeList, fmt.Sprintf("%s %v %v", k.k, w, recent))
	}
	reduceLine := weir.ProcessWindowFunc[string, keyTs, string](func(ctx weir.WindowContext[string], r []keyTs, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s %v sum=%d", ctx.CurrentKey(), ctx.Window(), r[0].F1))
		return nil
	})
	listLine := weir.ProcessWindowFunc[string, keyTs, string](func(ctx weir.WindowContext[string], els []keyTs, out weir.Collector[string]) error {
		vs := make([]int64, len(els))
		for i, e := range els {
			vs[i] = e.F1
		}
		out.Collect(fmt.Sprintf("%s %v %v", ctx.CurrentKey(), ctx.Window(), vs))
		return nil
	})
	eachBackendAndParallelism(t, []int{1, 3}, func(t *testing.T, env *weir.Environment) {
		ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), keyOf), weir.TumblingEventTimeWindows(time.Duration(size)*time.Millisecond))
		byCount, byTime := ws.Evictor(weir.CountEvictor[keyTs](keep)), ws.Evictor(weir.TimeEvictor[keyTs](time.Duration(span)*time.Millisecond))
		a, b := weir.Collect(weir.WindowReduceProcess(byCount, sumKeyTs, reduceLine)), weir.Collect(weir.WindowReduceProcess(byTime, sumKeyTs, reduceLine))
		gotCount, gotTime := collectBoth(t, env, a, b)
		sameLines(t, "count evictor, reduce", gotCount, wantCount)
		sameLines(t, "time evictor, reduce", gotTime, wantTime)
	})
	eachBackendAndParallelism(t, []int{3}, func(t *testing.T, env *weir.Environment) {
		ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), keyOf), weir.TumblingEventTimeWindows(time.Duration(size)*time.Millisecond))
		byCount, byTime := ws.Evictor(weir.CountEvictor[keyTs](keep)), ws.Evictor(weir.TimeEvictor[keyTs](time.Duration(span)*time.Millisecond))
		gotCount, gotTime := collectBoth(t, env, weir.Collect(weir.WindowProcess(byCount, listLine)), weir.Collect(weir.WindowProcess(byTime, listLine)))
		sameLines(t, "count evictor, process", gotCount, wantCountList)
		sameLines(t, "time evictor, process", gotTime, wantTimeList)
	})
}

// CountEvictorAfter evicts after the function ran: with CountTrigger(every)
// on global windows each firing sees what the previous one kept (the last
// keep elements) plus the new ones.
func TestCountEvictorAfterMatchesModel(t *testing.T) {
	rng := testseed.Rand(t, 9)
	every, keep := int64(1+rng.IntN(4)), int64(1+rng.IntN(4))
	in := sortedEvents(t, 10, 200+rng.IntN(200), 5, 3)
	perKey, since := map[string][]int64{}, map[string]int64{}
	var want []string
	for _, e := range in {
		l := append(perKey[e.F0], e.F1)
		if since[e.F0]++; since[e.F0] == every {
			since[e.F0] = 0
			want = append(want, fmt.Sprintf("%s n=%d sum=%d", e.F0, len(l), sum(l)))
			l = append([]int64(nil), l[max(0, len(l)-int(keep)):]...)
		}
		perKey[e.F0] = l
	}
	eachBackendAndParallelism(t, []int{1, 3}, func(t *testing.T, env *weir.Environment) {
		ws := weir.Window(weir.KeyBy(weir.FromSlice(env, in).SetParallelism(1), keyOf), weir.GlobalWindows{}).
			Trigger(weir.CountTrigger[keyTs](every)).Evictor(weir.CountEvictorAfter[keyTs](keep))
		got := run(t, env, weir.WindowAggregateProcess(ws, sumCountAgg{},
			weir.ProcessWindowFunc[string, sumCount, string](func(ctx weir.WindowContext[string], r []sumCount, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s n=%d sum=%d", ctx.CurrentKey(), r[0].N, r[0].Sum))
				return nil
			})))
		sameLines(t, "count evictor after", got, want)
	})
}

// WindowAll over an input of parallelism 3: one window operator subtask
// sees every element; reduce, aggregate and process functions (and their
// process forms) against a model. Count windows over the parallel input
// are checked by what does not depend on the interleaving.
func TestWindowAllMatchesModel(t *testing.T) {
	rng := testseed.Rand(t, 11)
	size := int64(10 + rng.IntN(30))
	countSize := int64(1 + rng.IntN(7))
	in := sortedEvents(t, 12, 400+rng.IntN(400), 3, 3)
	wins := map[int64][]int64{}
	var total int64
	for _, e := range in {
		s := floorDiv(e.F1, size) * size
		wins[s] = append(wins[s], e.F1)
		total += e.F1
	}
	var want, wantAgg []string
	for s, els := range wins {
		want = append(want, fmt.Sprintf("[%d, %d) sum=%d", s, s+size, sum(els)))
		wantAgg = append(wantAgg, fmt.Sprintf("[%d, %d) n=%d sum=%d", s, s+size, len(els), sum(els)))
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: 3, StateBackend: backend, StateDir: t.TempDir()})
			// Timestamps and watermarks from one subtask, then spread over three.
			src := weir.Map(punctuatedSource(env, in, 0).Rebalance(), func(e keyTs) keyTs { return e }).SetParallelism(3)
			ws := weir.WindowAll(src, weir.TumblingEventTimeWindows(time.Duration(size)*time.Millisecond))
			reduced := weir.WindowAllReduceProcess(ws, sumKeyTs, weir.ProcessAllWindowFunc[keyTs, string](func(ctx weir.AllWindowContext, r []keyTs, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%v sum=%d", ctx.Window(), r[0].F1))
				return nil
			}))
			aggregated := weir.WindowAllAggregateProcess(ws, sumCountAgg{}, weir.ProcessAllWindowFunc[sumCount, string](func(ctx weir.AllWindowContext, r []sumCount, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%v n=%d sum=%d", ctx.Window(), r[0].N, r[0].Sum))
				return nil
			}))
			got, gotAgg := collectBoth(t, env, weir.Collect(reduced), weir.Collect(aggregated))
			sameLines(t, "window all, reduce", got, want)
			sameLines(t, "window all, aggregate", gotAgg, wantAgg)

			env = weir.NewEnvironment(weir.Config{Parallelism: 3, StateBackend: backend, StateDir: t.TempDir()})
			src = weir.Map(punctuatedSource(env, in, 0).Rebalance(), func(e keyTs) keyTs { return e }).SetParallelism(3)
			ws = weir.WindowAll(src, weir.TumblingEventTimeWindows(time.Duration(size)*time.Millisecond))
			processed := weir.WindowAllProcess(ws, weir.ProcessAllWindowFunc[keyTs, string](func(ctx weir.AllWindowContext, els []keyTs, out weir.Collector[string]) error {
				var s int64
				for _, e := range els {
					s += e.F1
				}
				out.Collect(fmt.Sprintf("%v sum=%d", ctx.Window(), s))
				return nil
			}))
			counted := weir.WindowAllReduce(weir.CountWindowAll(src, countSize), sumKeyTs)
			gotP, gotCounted := collectBoth(t, env, weir.Collect(processed), weir.Collect(counted))
			sameLines(t, "window all, process", gotP, want)
			var countedSum int64
			for _, e := range gotCounted {
				countedSum += e.F1
			}
			full := int64(len(in)) / countSize
			if int64(len(gotCounted)) != full {
				t.Errorf("count windows of %d over %d elements: %d fired, want %d", countSize, len(in), len(gotCounted), full)
			} else if full*countSize == int64(len(in)) && countedSum != total {
				t.Errorf("count windows sum %d, want %d", countedSum, total)
			}
		})
	}
}

// mergingCountTrigger is a custom trigger that can merge: it fires a
// session at its end (its own timer, moved to the merged window on merge)
// and early each time 3 elements arrived since its last firing (a count in
// trigger state, merged with MergeReducingState).
type mergingCountTrigger struct{}

var earlyCount = state.ReducingDescriptor[int64]{Name: "early-count", Codec: int64Codec(),
	Reduce: func(a, b int64) int64 { return a + b }}

func (mergingCountTrigger) OnElement(_ keyTs, _ int64, w weir.TimeWindow, ctx weir.TriggerContext) weir.TriggerResult {
	ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	st := state.GetReducingState(ctx.State(), earlyCount)
	st.Add(1)
	if n, _ := st.Get(); n >= 3 {
		st.Clear()
		return weir.Fire
	}
	return weir.Continue
}
func (mergingCountTrigger) OnEventTime(tm int64, w weir.TimeWindow, _ weir.TriggerContext) weir.TriggerResult {
	if tm == w.MaxTimestamp() {
		return weir.Fire
	}
	return weir.Continue
}
func (mergingCountTrigger) OnProcessingTime(int64, weir.TimeWindow, weir.TriggerContext) weir.TriggerResult {
	return weir.Continue
}
func (mergingCountTrigger) CanMerge() bool { return true }
func (mergingCountTrigger) OnMerge(w weir.TimeWindow, ctx weir.OnMergeContext) {
	weir.MergeReducingState(ctx, earlyCount)
	if w.MaxTimestamp() > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	}
}
func (mergingCountTrigger) Clear(w weir.TimeWindow, ctx weir.TriggerContext) {
	state.GetReducingState(ctx.State(), earlyCount).Clear()
	ctx.DeleteEventTimeTimer(w.MaxTimestamp())
}

// listValueTrigger is mergingCountTrigger with its count kept twice: as a
// list of timestamps (merged with MergeListState) and as a value (merged
// with MergeValueState); the two must agree.
type listValueTrigger struct{ mergingCountTrigger }

var (
	seenList  = state.ListDescriptor[int64]{Name: "seen-list", Codec: int64Codec()}
	seenValue = state.ValueDescriptor[int64]{Name: "seen-value", Codec: int64Codec()}
)

func (listValueTrigger) OnElement(_ keyTs, ts int64, w weir.TimeWindow, ctx weir.TriggerContext) weir.TriggerResult {
	ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	l, v := state.GetListState(ctx.State(), seenList), state.GetValueState(ctx.State(), seenValue)
	l.Add(ts)
	n, _ := v.Value()
	n++
	v.Update(n)
	if got := int64(len(l.Get())); got != n {
		panic(fmt.Sprintf("trigger state disagrees: list of %d, count %d", got, n))
	}
	if n >= 3 {
		l.Clear()
		v.Clear()
		return weir.Fire
	}
	return weir.Continue
}

func (listValueTrigger) OnMerge(w weir.TimeWindow, ctx weir.OnMergeContext) {
	weir.MergeListState(ctx, seenList)
	weir.MergeValueState(ctx, seenValue, func(a, b int64) int64 { return a + b })
	if w.MaxTimestamp() > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	}
}

func (listValueTrigger) Clear(w weir.TimeWindow, ctx weir.TriggerContext) {
	state.GetListState(ctx.State(), seenList).Clear()
	state.GetValueState(ctx.State(), seenValue).Clear()
	ctx.DeleteEventTimeTimer(w.MaxTimestamp())
}

// Session windows with a custom trigger that merges, against a simulation:
// sessions merge as Flink's (touching windows too), the early count of the
// merged windows adds up, and the merged session fires at its end. The
// built-in CountTrigger merges its count the same way.
func TestSessionsWithMergingCustomTriggerMatchModel(t *testing.T) {
	rng := testseed.Rand(t, 13)
	gap := int64(3 + rng.IntN(10))
	in := sortedEvents(t, 14, 300+rng.IntN(300), 3, int(gap))
	t.Logf("gap %d", gap)
	type session struct {
		start, end int64
		n, sum     int64
		early      int64
	}
	// model: with endFire the custom trigger, without it the built-in
	// CountTrigger(3) (which does not fire at the session's end).
	model := func(endFire bool) []string {
		live := map[string][]*session{}
		var want []string
		line := func(k string, s *session) string {
			return fmt.Sprintf("%s [%d, %d) n=%d sum=%d", k, s.start, s.end, s.n, s.sum)
		}
		advance := func(wm int64) {
			for k, ss := range live {
				var rest []*session
				for _, s := range ss {
					if s.end-1 <= wm {
						if endFire {
							want = append(want, line(k, s))
						}
					} else {
						rest = append(rest, s)
					}
				}
				live[k] = rest
			}
		}
		for _, e := range in {
			nw := &session{start: e.F1, end: e.F1 + gap}
			var rest []*session
			for _, s := range live[e.F0] {
				if s.start <= nw.end && s.end >= nw.start {
					nw.start, nw.end = min(nw.start, s.start), max(nw.end, s.end)
					nw.n, nw.sum, nw.early = nw.n+s.n, nw.sum+s.sum, nw.early+s.early
				} else {
					rest = append(rest, s)
				}
			}
			nw.n, nw.sum, nw.early = nw.n+1, nw.sum+e.F1, nw.early+1
			if nw.early >= 3 {
				nw.early = 0
				want = append(want, line(e.F0, nw))
			}
			live[e.F0] = append(rest, nw)
			advance(e.F1 - 1)
		}
		advance(math.MaxInt64)
		return want
	}
	want, wantCount := model(true), model(false)
	eachBackendAndParallelism(t, []int{1, 3}, func(t *testing.T, env *weir.Environment) {
		ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), keyOf), weir.EventTimeSessionWindows(time.Duration(gap)*time.Millisecond))
		got, gotCount := collectBoth(t, env, weir.Collect(weir.WindowAggregateProcess(ws.Trigger(mergingCountTrigger{}), sumCountAgg{}, emitSumCount)),
			weir.Collect(weir.WindowAggregateProcess(ws.Trigger(weir.CountTrigger[keyTs](3)), sumCountAgg{}, emitSumCount)))
		sameLines(t, "sessions with a merging custom trigger", got, want)
		sameLines(t, "sessions with CountTrigger", gotCount, wantCount)
	})
	eachBackendAndParallelism(t, []int{3}, func(t *testing.T, env *weir.Environment) {
		ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 0), keyOf), weir.EventTimeSessionWindows(time.Duration(gap)*time.Millisecond))
		sameLines(t, "sessions with list and value trigger state", run(t, env, weir.WindowAggregateProcess(ws.Trigger(listValueTrigger{}), sumCountAgg{}, emitSumCount)), want)
	})
}

// keepAll evicts nothing: it only moves a window onto the trigger path.
type keepAll struct{}

func (keepAll) EvictBefore(els []weir.TimestampedValue[keyTs], _ weir.TimeWindow, _ weir.EvictorContext) []weir.TimestampedValue[keyTs] {
	return els
}
func (keepAll) EvictAfter(els []weir.TimestampedValue[keyTs], _ weir.TimeWindow, _ weir.EvictorContext) []weir.TimestampedValue[keyTs] {
	return els
}

// The trigger path with Flink's EventTimeTrigger (forced by an evictor
// that keeps everything, and by setting the trigger on a wrapper the fast
// path does not recognize) gives what the fast path gives, late firings,
// merges and late data included, on out-of-order input with allowed
// lateness: tumbling, sliding and session windows.
func TestTriggerPathMatchesFastPath(t *testing.T) {
	rng := testseed.Rand(t, 15)
	n := 300 + rng.IntN(300)
	in := make([]keyTs, n)
	for i := range in {
		in[i] = keyTs{F0: "k" + fmt.Sprint(rng.IntN(4)), F1: int64(i) + int64(rng.IntN(40)) - 20}
	}
	assigners := map[string]weir.WindowAssigner{
		"tumbling": weir.TumblingEventTimeWindows(time.Duration(5+rng.IntN(20)) * time.Millisecond),
		"sliding":  weir.SlidingEventTimeWindows(time.Duration(10+rng.IntN(20))*time.Millisecond, time.Duration(1+rng.IntN(9))*time.Millisecond),
		"session":  weir.EventTimeSessionWindows(time.Duration(1+rng.IntN(5)) * time.Millisecond),
	}
	for name, a := range assigners {
		t.Run(name, func(t *testing.T) {
			results := func(backend string, path func(weir.WindowedStream[string, keyTs]) weir.WindowedStream[string, keyTs]) ([]string, []keyTs) {
				env := weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: backend, StateDir: t.TempDir()})
				late := weir.NewOutputTag[keyTs]("late")
				ws := weir.Window(weir.KeyBy(punctuatedSource(env, in, 10*time.Millisecond), keyOf), a).
					AllowedLateness(15 * time.Millisecond).SideOutputLateData(late)
				res := weir.WindowAggregateProcess(path(ws), sumCountAgg{}, emitSumCount)
				got, lateGot := collectBoth(t, env, weir.Collect(res), weir.Collect(weir.SideOutput(res, late)))
				slices.Sort(got)
				slices.SortFunc(lateGot, func(x, y keyTs) int { return cmp.Or(cmp.Compare(x.F0, y.F0), cmp.Compare(x.F1, y.F1)) })
				return got, lateGot
			}
			want, wantLate := results("hashmap", func(ws weir.WindowedStream[string, keyTs]) weir.WindowedStream[string, keyTs] { return ws })
			for _, backend := range []string{"hashmap", "pebble"} {
				for pname, path := range map[string]func(weir.WindowedStream[string, keyTs]) weir.WindowedStream[string, keyTs]{
					"evictor": func(ws weir.WindowedStream[string, keyTs]) weir.WindowedStream[string, keyTs] {
						return ws.Evictor(keepAll{})
					},
					"trigger": func(ws weir.WindowedStream[string, keyTs]) weir.WindowedStream[string, keyTs] {
						return ws.Trigger(wrapped{weir.EventTimeTrigger[keyTs]()})
					},
				} {
					got, gotLate := results(backend, path)
					sameLines(t, backend+"/"+pname, got, want)
					if !slices.Equal(gotLate, wantLate) {
						t.Errorf("%s/%s: late %v, want %v", backend, pname, gotLate, wantLate)
					}
				}
			}
		})
	}
}

// wrapped hides a trigger's type, so the operator cannot tell it is the default.
type wrapped struct{ weir.Trigger[keyTs] }

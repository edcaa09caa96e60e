package weir

import (
	"fmt"
	"math"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// TriggerResult is what a trigger decides for a window (Flink's
// TriggerResult): fire it (pass its contents to the window function), purge
// it (drop its contents), both, or neither.
type TriggerResult uint8

const (
	// Continue does nothing.
	Continue TriggerResult = iota
	// Fire evaluates the window function on the window's contents and keeps
	// them.
	Fire
	// Purge drops the window's contents without firing. The trigger's own
	// state and timers stay (Clear removes them at cleanup time).
	Purge
	// FireAndPurge fires, then drops the contents.
	FireAndPurge
)

// IsFire says whether the window fires.
func (r TriggerResult) IsFire() bool { return r == Fire || r == FireAndPurge }

// IsPurge says whether the window's contents are dropped.
func (r TriggerResult) IsPurge() bool { return r == Purge || r == FireAndPurge }

func (r TriggerResult) String() string {
	switch r {
	case Continue:
		return "CONTINUE"
	case Fire:
		return "FIRE"
	case Purge:
		return "PURGE"
	case FireAndPurge:
		return "FIRE_AND_PURGE"
	}
	return fmt.Sprintf("TriggerResult(%d)", uint8(r))
}

// TriggerContext is what a trigger sees of the window operator, for the
// current key and window (Flink's Trigger.TriggerContext). Timers are
// registered in the window's namespace: they come back to the trigger's
// OnEventTime/OnProcessingTime with that window, and are checkpointed with
// the operator's other timers.
type TriggerContext interface {
	CurrentWatermark() int64
	CurrentProcessingTime() int64
	RegisterEventTimeTimer(t int64)
	DeleteEventTimeTimer(t int64)
	RegisterProcessingTimeTimer(t int64)
	DeleteProcessingTimeTimer(t int64)
	// State is the keyed state of the current key scoped to the current
	// window (Flink's getPartitionedState): pass it to state.Get*State.
	// Trigger state is checkpointed as any keyed state; Clear must clear
	// it (the operator cannot know what a trigger declared).
	State() state.KeyedStore
}

// OnMergeContext is the TriggerContext of Trigger.OnMerge: the current
// window is the merged one; MergedWindows are the windows merged into it,
// whose trigger state the merge functions (MergeReducingState, ...) fold
// into the current window's. After OnMerge the operator calls Clear for
// each merged window, as Flink does.
type OnMergeContext interface {
	TriggerContext
	MergedWindows() []TimeWindow
}

// Trigger decides when a window fires and when its contents are purged
// (Flink's Trigger). The operator calls OnElement for every element added
// to a window, OnEventTime/OnProcessingTime for the trigger's timers (and
// the window's cleanup timer), OnMerge when windows merge (CanMerge must
// then be true), and Clear when the window is cleaned up. Another module
// may implement it.
//
// A trigger holding pointers is copied per subtask (one level deep, as
// functions are), so it may cache state handles in its fields.
type Trigger[T any] interface {
	OnElement(v T, ts int64, w TimeWindow, ctx TriggerContext) TriggerResult
	OnEventTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult
	OnProcessingTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult
	CanMerge() bool
	OnMerge(w TimeWindow, ctx OnMergeContext)
	Clear(w TimeWindow, ctx TriggerContext)
}

// stateMerger is implemented by the operator's OnMergeContext: fn runs with
// each merged window's namespace current, then the merged window's is
// current again.
type stateMerger interface {
	eachMergedWindow(fn func())
}

func mergerOf(ctx OnMergeContext) stateMerger {
	m, ok := ctx.(stateMerger)
	if !ok {
		panic(fmt.Sprintf("weir: %T is not the window operator's merge context", ctx))
	}
	return m
}

// MergeReducingState folds the reducing state d of the merged windows into
// the current (merged) window's, for Trigger.OnMerge (Flink's
// mergePartitionedState). The merged windows' state is left for Clear.
func MergeReducingState[V any](ctx OnMergeContext, d state.ReducingDescriptor[V]) {
	st := state.GetReducingState(ctx.State(), d)
	var vals []V
	mergerOf(ctx).eachMergedWindow(func() {
		if v, ok := st.Get(); ok {
			vals = append(vals, v)
		}
	})
	for _, v := range vals {
		st.Add(v)
	}
}

// MergeListState appends the list state d of the merged windows to the
// current window's, for Trigger.OnMerge.
func MergeListState[V any](ctx OnMergeContext, d state.ListDescriptor[V]) {
	st := state.GetListState(ctx.State(), d)
	var vals []V
	mergerOf(ctx).eachMergedWindow(func() { vals = append(vals, st.Get()...) })
	if len(vals) > 0 {
		st.AddAll(vals)
	}
}

// MergeValueState combines the value state d of the merged windows into the
// current window's with merge, for Trigger.OnMerge (Flink merges only
// reducing, aggregating and list state; a value needs the function).
func MergeValueState[V any](ctx OnMergeContext, d state.ValueDescriptor[V], merge func(a, b V) V) {
	st := state.GetValueState(ctx.State(), d)
	var vals []V
	mergerOf(ctx).eachMergedWindow(func() {
		if v, ok := st.Value(); ok {
			vals = append(vals, v)
		}
	})
	for _, v := range vals {
		if cur, ok := st.Value(); ok {
			v = merge(cur, v)
		}
		st.Update(v)
	}
}

// triggerInstance gives a subtask its own copy of t (its cached state
// handles belong to one subtask's store).
func triggerInstance[T any](t Trigger[T]) Trigger[T] {
	if c, ok := t.(interface{ newInstance() Trigger[T] }); ok {
		return c.newInstance()
	}
	return instanceOf(t)
}

// cachedState keeps a state handle of a trigger with the store it came
// from, so a built-in trigger declares its state once per subtask instead
// of once per element.
type cachedState[S any] struct {
	store state.KeyedStore
	h     S
}

func (c *cachedState[S]) get(store state.KeyedStore, make func(state.KeyedStore) S) S {
	if c.store != store {
		c.store, c.h = store, make(store)
	}
	return c.h
}

// EventTimeTrigger fires a window when the watermark passes its max
// timestamp (Flink's EventTimeTrigger), the default of event-time
// assigners; the operator runs it without the Trigger interface.
func EventTimeTrigger[T any]() Trigger[T] { return eventTimeTrigger[T]{} }

type eventTimeTrigger[T any] struct{}

func (eventTimeTrigger[T]) OnElement(_ T, _ int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	if w.MaxTimestamp() <= ctx.CurrentWatermark() {
		return Fire // the watermark is past the window already: a late firing
	}
	ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	return Continue
}

func (eventTimeTrigger[T]) OnEventTime(t int64, w TimeWindow, _ TriggerContext) TriggerResult {
	if t == w.MaxTimestamp() {
		return Fire
	}
	return Continue
}

func (eventTimeTrigger[T]) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (eventTimeTrigger[T]) CanMerge() bool { return true }
func (eventTimeTrigger[T]) OnMerge(w TimeWindow, ctx OnMergeContext) {
	// Only a timer for a window the watermark did not pass yet: one past it
	// would fire at once as a timer in the past, which Flink avoids too.
	if w.MaxTimestamp() > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	}
}
func (eventTimeTrigger[T]) Clear(w TimeWindow, ctx TriggerContext) {
	ctx.DeleteEventTimeTimer(w.MaxTimestamp())
}
func (eventTimeTrigger[T]) String() string { return "EventTimeTrigger" }

// ProcessingTimeTrigger fires a window when processing time reaches its
// max timestamp (Flink's ProcessingTimeTrigger), the default of
// processing-time assigners.
func ProcessingTimeTrigger[T any]() Trigger[T] { return processingTimeTrigger[T]{} }

type processingTimeTrigger[T any] struct{}

func (processingTimeTrigger[T]) OnElement(_ T, _ int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	ctx.RegisterProcessingTimeTimer(w.MaxTimestamp())
	return Continue
}
func (processingTimeTrigger[T]) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (processingTimeTrigger[T]) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Fire
}
func (processingTimeTrigger[T]) CanMerge() bool { return true }
func (processingTimeTrigger[T]) OnMerge(w TimeWindow, ctx OnMergeContext) {
	if w.MaxTimestamp() > ctx.CurrentProcessingTime() {
		ctx.RegisterProcessingTimeTimer(w.MaxTimestamp())
	}
}
func (processingTimeTrigger[T]) Clear(w TimeWindow, ctx TriggerContext) {
	ctx.DeleteProcessingTimeTimer(w.MaxTimestamp())
}
func (processingTimeTrigger[T]) String() string { return "ProcessingTimeTrigger" }

// NeverTrigger never fires (Flink's GlobalWindows.NeverTrigger): the
// default of GlobalWindows, whose window never ends.
func NeverTrigger[T any]() Trigger[T] { return neverTrigger[T]{} }

type neverTrigger[T any] struct{}

func (neverTrigger[T]) OnElement(T, int64, TimeWindow, TriggerContext) TriggerResult { return Continue }
func (neverTrigger[T]) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult  { return Continue }
func (neverTrigger[T]) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (neverTrigger[T]) CanMerge() bool                     { return true }
func (neverTrigger[T]) OnMerge(TimeWindow, OnMergeContext) {}
func (neverTrigger[T]) Clear(TimeWindow, TriggerContext)   {}
func (neverTrigger[T]) String() string                     { return "NeverTrigger" }

var int64Codec = func() codec.Codec[int64] {
	c, err := codec.For[int64]()
	if err != nil {
		panic(err)
	}
	return c
}()

func sum64(a, b int64) int64 { return a + b }

// CountTrigger fires a window when it has received n elements since it
// last fired (Flink's CountTrigger): the count is trigger state (a
// ReducingState under the window), reset on firing. The contents are kept
// unless it is wrapped in PurgingTrigger.
func CountTrigger[T any](n int64) Trigger[T] {
	if n < 1 {
		panic(fmt.Sprintf("weir: CountTrigger(%d): want at least 1", n))
	}
	return &countTrigger[T]{max: n}
}

var countDesc = state.ReducingDescriptor[int64]{Name: "trigger-count", Codec: int64Codec, Reduce: sum64}

type countTrigger[T any] struct {
	max   int64
	count cachedState[state.ReducingState[int64]]
}

func (t *countTrigger[T]) st(ctx TriggerContext) state.ReducingState[int64] {
	return t.count.get(ctx.State(), func(s state.KeyedStore) state.ReducingState[int64] {
		return state.GetReducingState(s, countDesc)
	})
}

func (t *countTrigger[T]) OnElement(_ T, _ int64, _ TimeWindow, ctx TriggerContext) TriggerResult {
	st := t.st(ctx)
	st.Add(1)
	if n, _ := st.Get(); n >= t.max {
		st.Clear()
		return Fire
	}
	return Continue
}
func (t *countTrigger[T]) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (t *countTrigger[T]) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (t *countTrigger[T]) CanMerge() bool { return true }
func (t *countTrigger[T]) OnMerge(_ TimeWindow, ctx OnMergeContext) {
	MergeReducingState(ctx, countDesc)
}
func (t *countTrigger[T]) Clear(_ TimeWindow, ctx TriggerContext) { t.st(ctx).Clear() }
func (t *countTrigger[T]) String() string                         { return fmt.Sprintf("CountTrigger(%d)", t.max) }
func (t *countTrigger[T]) newInstance() Trigger[T]                { return &countTrigger[T]{max: t.max} }

var fireTimeDesc = state.ReducingDescriptor[int64]{Name: "trigger-fire-time", Codec: int64Codec,
	Reduce: func(a, b int64) int64 { return min(a, b) }}

// continuousTrigger is Flink's ContinuousEventTimeTrigger and
// ContinuousProcessingTimeTrigger: it fires every interval (aligned to
// multiples of it) while the window exists, and at the window's end. The
// next firing time is trigger state.
type continuousTrigger[T any] struct {
	interval  int64
	eventTime bool
	fireAt    cachedState[state.ReducingState[int64]]
}

// ContinuousEventTimeTrigger fires a window each time the watermark passes
// a multiple of interval within it (counted from its first element), and
// when it passes the window's max timestamp.
func ContinuousEventTimeTrigger[T any](interval time.Duration) Trigger[T] {
	return newContinuous[T](interval, true)
}

// ContinuousProcessingTimeTrigger fires a window every interval of
// processing time (aligned to multiples of it) while it holds elements,
// and at the window's max timestamp.
func ContinuousProcessingTimeTrigger[T any](interval time.Duration) Trigger[T] {
	return newContinuous[T](interval, false)
}

func newContinuous[T any](interval time.Duration, eventTime bool) Trigger[T] {
	if interval.Milliseconds() < 1 {
		panic(fmt.Sprintf("weir: continuous trigger interval %v: want at least 1ms", interval))
	}
	return &continuousTrigger[T]{interval: interval.Milliseconds(), eventTime: eventTime}
}

func (t *continuousTrigger[T]) newInstance() Trigger[T] {
	return &continuousTrigger[T]{interval: t.interval, eventTime: t.eventTime}
}

func (t *continuousTrigger[T]) String() string {
	if t.eventTime {
		return fmt.Sprintf("ContinuousEventTimeTrigger(%dms)", t.interval)
	}
	return fmt.Sprintf("ContinuousProcessingTimeTrigger(%dms)", t.interval)
}

func (t *continuousTrigger[T]) st(ctx TriggerContext) state.ReducingState[int64] {
	return t.fireAt.get(ctx.State(), func(s state.KeyedStore) state.ReducingState[int64] {
		return state.GetReducingState(s, fireTimeDesc)
	})
}

func (t *continuousTrigger[T]) register(ctx TriggerContext, at int64) {
	if t.eventTime {
		ctx.RegisterEventTimeTimer(at)
	} else {
		ctx.RegisterProcessingTimeTimer(at)
	}
}

// next registers the next firing, an interval after time, or at the
// window's end if that is earlier.
func (t *continuousTrigger[T]) next(ctx TriggerContext, st state.ReducingState[int64], time int64, w TimeWindow) {
	at := w.MaxTimestamp()
	if time <= math.MaxInt64-t.interval {
		at = min(time+t.interval, at)
	}
	st.Add(at)
	t.register(ctx, at)
}

// alignDown is Flink's timestamp - (timestamp % interval): Java's remainder
// (as Go's) rounds toward zero, so negative times round up.
func (t *continuousTrigger[T]) alignDown(ts int64) int64 { return ts - ts%t.interval }

func (t *continuousTrigger[T]) OnElement(_ T, ts int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	if t.eventTime {
		if w.MaxTimestamp() <= ctx.CurrentWatermark() {
			return Fire // the watermark is past the window already
		}
	} else {
		ts = ctx.CurrentProcessingTime()
	}
	st := t.st(ctx)
	if _, ok := st.Get(); !ok {
		// The window's first element (since Clear): Flink registers the
		// end timer with every element; it stays until Clear, as the
		// next-firing state does, so once is enough (a timer lookup per
		// element saved).
		if t.eventTime {
			ctx.RegisterEventTimeTimer(w.MaxTimestamp())
		}
		t.next(ctx, st, t.alignDown(ts), w)
	}
	return Continue
}

func (t *continuousTrigger[T]) onTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	if time == w.MaxTimestamp() {
		return Fire
	}
	st := t.st(ctx)
	if at, ok := st.Get(); ok && at == time {
		st.Clear()
		t.next(ctx, st, time, w)
		return Fire
	}
	return Continue
}

func (t *continuousTrigger[T]) OnEventTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	if !t.eventTime {
		return Continue
	}
	return t.onTime(time, w, ctx)
}

func (t *continuousTrigger[T]) OnProcessingTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	if t.eventTime {
		return Continue
	}
	return t.onTime(time, w, ctx)
}

func (t *continuousTrigger[T]) CanMerge() bool { return true }

func (t *continuousTrigger[T]) OnMerge(w TimeWindow, ctx OnMergeContext) {
	if t.eventTime && w.MaxTimestamp() > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	}
	MergeReducingState(ctx, fireTimeDesc)
	if at, ok := t.st(ctx).Get(); ok {
		t.register(ctx, at)
	}
}

func (t *continuousTrigger[T]) Clear(w TimeWindow, ctx TriggerContext) {
	st := t.st(ctx)
	if at, ok := st.Get(); ok {
		if t.eventTime {
			ctx.DeleteEventTimeTimer(at)
		} else {
			ctx.DeleteProcessingTimeTimer(at)
		}
		st.Clear()
	}
	if t.eventTime {
		ctx.DeleteEventTimeTimer(w.MaxTimestamp())
	}
}

// PurgingTrigger makes every firing of nested a FireAndPurge (Flink's
// PurgingTrigger): a window's contents are dropped each time it fires.
func PurgingTrigger[T any](nested Trigger[T]) Trigger[T] {
	if nested == nil {
		panic("weir: PurgingTrigger needs a trigger to wrap")
	}
	return &purgingTrigger[T]{nested: nested}
}

type purgingTrigger[T any] struct{ nested Trigger[T] }

func purge(r TriggerResult) TriggerResult {
	if r.IsFire() {
		return FireAndPurge
	}
	return r
}

func (t *purgingTrigger[T]) OnElement(v T, ts int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	return purge(t.nested.OnElement(v, ts, w, ctx))
}
func (t *purgingTrigger[T]) OnEventTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	return purge(t.nested.OnEventTime(time, w, ctx))
}
func (t *purgingTrigger[T]) OnProcessingTime(time int64, w TimeWindow, ctx TriggerContext) TriggerResult {
	return purge(t.nested.OnProcessingTime(time, w, ctx))
}
func (t *purgingTrigger[T]) CanMerge() bool                           { return t.nested.CanMerge() }
func (t *purgingTrigger[T]) OnMerge(w TimeWindow, ctx OnMergeContext) { t.nested.OnMerge(w, ctx) }
func (t *purgingTrigger[T]) Clear(w TimeWindow, ctx TriggerContext)   { t.nested.Clear(w, ctx) }
func (t *purgingTrigger[T]) String() string                           { return fmt.Sprintf("PurgingTrigger(%v)", t.nested) }
func (t *purgingTrigger[T]) newInstance() Trigger[T] {
	return &purgingTrigger[T]{nested: triggerInstance(t.nested)}
}

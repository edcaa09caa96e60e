package extconnector

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// MarkerTrigger is a window trigger written outside Weir's module: it
// fires and purges a window when Marker says so of an element, or when the
// window has received Max elements since it last fired (a count kept in
// trigger state, so it is checkpointed).
type MarkerTrigger[T any] struct {
	Marker func(T) bool
	Max    int64
	count  state.ValueState[int64] // per subtask: Weir copies the trigger
}

var countDesc = func() state.ValueDescriptor[int64] {
	c, err := codec.For[int64]()
	if err != nil {
		panic(err)
	}
	return state.ValueDescriptor[int64]{Name: "marker-trigger-count", Codec: c}
}()

func (m *MarkerTrigger[T]) st(ctx weir.TriggerContext) state.ValueState[int64] {
	if m.count == nil {
		m.count = state.GetValueState(ctx.State(), countDesc)
	}
	return m.count
}

func (m *MarkerTrigger[T]) OnElement(v T, _ int64, _ weir.TimeWindow, ctx weir.TriggerContext) weir.TriggerResult {
	st := m.st(ctx)
	n, _ := st.Value()
	if n++; n >= m.Max || m.Marker(v) {
		st.Clear()
		return weir.FireAndPurge
	}
	st.Update(n)
	return weir.Continue
}

func (m *MarkerTrigger[T]) OnEventTime(int64, weir.TimeWindow, weir.TriggerContext) weir.TriggerResult {
	return weir.Continue
}

func (m *MarkerTrigger[T]) OnProcessingTime(int64, weir.TimeWindow, weir.TriggerContext) weir.TriggerResult {
	return weir.Continue
}

func (m *MarkerTrigger[T]) CanMerge() bool { return true }

func (m *MarkerTrigger[T]) OnMerge(_ weir.TimeWindow, ctx weir.OnMergeContext) {
	weir.MergeValueState(ctx, countDesc, func(a, b int64) int64 { return a + b })
}

func (m *MarkerTrigger[T]) Clear(_ weir.TimeWindow, ctx weir.TriggerContext) { m.st(ctx).Clear() }

// KeepEvictor is an evictor written outside Weir's module: before the
// window function runs it evicts the elements Keep rejects.
type KeepEvictor[T any] struct{ Keep func(T) bool }

func (k KeepEvictor[T]) EvictBefore(els []weir.TimestampedValue[T], _ weir.TimeWindow, _ weir.EvictorContext) []weir.TimestampedValue[T] {
	kept := els[:0]
	for _, e := range els {
		if k.Keep(e.Value) {
			kept = append(kept, e)
		}
	}
	return kept
}

func (k KeepEvictor[T]) EvictAfter(els []weir.TimestampedValue[T], _ weir.TimeWindow, _ weir.EvictorContext) []weir.TimestampedValue[T] {
	return els
}

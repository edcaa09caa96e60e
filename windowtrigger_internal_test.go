package weir

import (
	"testing"
	"time"
)

// hasDefaultTrigger is what a dispatch to another window operator asks:
// true only with the assigner's own time trigger and no evictor.
func TestHasDefaultTrigger(t *testing.T) {
	env := NewEnvironment(Config{Parallelism: 1})
	ks := KeyBy(FromSlice(env, []int64{1}), func(v int64) int64 { return v })
	ev := Window(ks, TumblingEventTimeWindows(time.Second))
	pt := Window(ks, TumblingProcessingTimeWindows(time.Second))
	for name, c := range map[string]struct {
		w    WindowedStream[int64, int64]
		want bool
	}{
		"event time":                        {ev, true},
		"event time, EventTimeTrigger":      {ev.Trigger(EventTimeTrigger[int64]()), true},
		"event time, ProcessingTimeTrigger": {ev.Trigger(ProcessingTimeTrigger[int64]()), false},
		"processing time, its trigger":      {pt.Trigger(ProcessingTimeTrigger[int64]()), true},
		"count trigger":                     {ev.Trigger(CountTrigger[int64](3)), false},
		"purging event-time trigger":        {ev.Trigger(PurgingTrigger(EventTimeTrigger[int64]())), false},
		"evictor":                           {ev.Evictor(CountEvictor[int64](2)), false},
		"global windows":                    {Window(ks, GlobalWindows{}), false},
		"global windows, EventTimeTrigger":  {Window(ks, GlobalWindows{}).Trigger(EventTimeTrigger[int64]()), false},
		"count window":                      {CountWindow(ks, 3), false},
	} {
		if got := c.w.hasDefaultTrigger(); got != c.want {
			t.Errorf("%s: hasDefaultTrigger %v, want %v", name, got, c.want)
		}
	}
}

// The window operator of a non-keyed stream runs at parallelism 1.
func TestWindowAllRunsAtParallelismOne(t *testing.T) {
	env := NewEnvironment(Config{Parallelism: 4})
	s := FromSlice(env, []int64{1, 2, 3})
	sum := func(a, b int64) int64 { return a + b }
	for name, res := range map[string]DataStream[int64]{
		"tumbling": WindowAllReduce(WindowAll(s, TumblingEventTimeWindows(time.Second)), sum),
		"count":    WindowAllReduce(CountWindowAll(s, 2), sum),
		"sliding":  WindowAllReduce(CountWindowAllSliding(s, 2, 1), sum),
	} {
		if p := res.last().Parallelism; p != 1 {
			t.Errorf("%s: window-all operator at parallelism %d, want 1", name, p)
		}
	}
}

package weir_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

type keepAllInt struct{}

func (keepAllInt) EvictBefore(els []weir.TimestampedValue[int64], _ weir.TimeWindow, _ weir.EvictorContext) []weir.TimestampedValue[int64] {
	return els
}
func (keepAllInt) EvictAfter(els []weir.TimestampedValue[int64], _ weir.TimeWindow, _ weir.EvictorContext) []weir.TimestampedValue[int64] {
	return els
}

// Processing-time triggers on the trigger path fire by the system clock: a
// timing check, not a model (which windows and counts depend on timing).
// Tumbling processing-time windows with an evictor (ProcessingTimeTrigger
// through the Trigger interface) fire each window once, aligned, with
// what arrived in it; ContinuousProcessingTimeTrigger on the global window
// fires repeatedly with a growing count.
func TestProcessingTimeTriggersFire(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	const n = 400
	ks := weir.KeyBy(weir.Generate(env, n, 500, func(i int64) int64 { return i }), func(int64) string { return "a" })
	count := func(ctx weir.WindowContext[string], els []int64, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%d %d %d", ctx.Window().Start, ctx.Window().End, len(els)))
		return nil
	}
	tumbling := weir.WindowProcess(weir.Window(ks, weir.TumblingProcessingTimeWindows(100*time.Millisecond)).Evictor(keepAllInt{}),
		weir.ProcessWindowFunc[string, int64, string](count))
	cont := weir.WindowProcess(weir.Window(ks, weir.GlobalWindows{}).Trigger(weir.ContinuousProcessingTimeTrigger[int64](50*time.Millisecond)),
		weir.ProcessWindowFunc[string, int64, string](count))
	gotT, gotC := collectBoth(t, env, weir.Collect(tumbling), weir.Collect(cont))
	t.Logf("tumbling %q\ncontinuous %q", gotT, gotC)
	seen, total := map[int64]bool{}, 0
	for _, l := range gotT {
		var s, e, c int64
		fmt.Sscan(l, &s, &e, &c)
		if e-s != 100 || s%100 != 0 || c < 1 || seen[s] {
			t.Errorf("tumbling processing-time window %q: want an aligned 100 ms window fired once with elements", l)
		}
		seen[s], total = true, total+int(c)
	}
	if len(gotT) < 3 || total > n {
		t.Errorf("%d tumbling windows with %d elements in all (of %d); want at least 3 and at most all", len(gotT), total, n)
	}
	last := 0
	for _, l := range gotC {
		var s, e, c int64
		fmt.Sscan(l, &s, &e, &c)
		if (weir.TimeWindow{Start: s, End: e}) != weir.GlobalWindow || int(c) < last {
			t.Errorf("continuous firing %q after one of %d elements: want the global window, never fewer elements", l, last)
		}
		last = int(c)
	}
	if len(gotC) < 3 {
		t.Errorf("the continuous processing-time trigger fired %d times in about 0.8 s at 50 ms; want at least 3", len(gotC))
	}
}

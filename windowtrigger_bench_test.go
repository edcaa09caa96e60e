package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirhq/weir"
)

// The window operator's trigger path: count windows of 100 elements over
// 100 keys (a CountTrigger's state read and written per element), and
// 10 s tumbling event-time windows with the default trigger against a
// ContinuousEventTimeTrigger of 1 s, at parallelism 1 on the heap backend.
// Timestamps are the index (ms); watermarks periodic (200 ms).
// Run: go test -run '^$' -bench 'WindowTriggerPath' -benchtime 1000000x .
func BenchmarkWindowTriggerPath(b *testing.B) {
	sum := func(a, b int64) int64 { return a + b }
	key := func(v int64) int64 { return v % 100 }
	for _, name := range []string{"count=100", "tumbling=10s/default", "tumbling=10s/continuous=1s"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			env := weir.NewEnvironment(weir.Config{Parallelism: 1})
			src := weir.Sequence(env, 0, int64(b.N)-1)
			var res weir.DataStream[int64]
			if name == "count=100" {
				res = weir.WindowReduce(weir.CountWindow(weir.KeyBy(src, key), 100), sum)
			} else {
				ts := weir.AssignTimestampsAndWatermarks(src, weir.WatermarkStrategy[int64]{Timestamp: func(v int64) int64 { return v }})
				ws := weir.Window(weir.KeyBy(ts, key), weir.TumblingEventTimeWindows(10*time.Second))
				if name == "tumbling=10s/continuous=1s" {
					ws = ws.Trigger(weir.ContinuousEventTimeTrigger[int64](time.Second))
				}
				res = weir.WindowReduce(ws, sum)
			}
			weir.Discard(res)
			b.ResetTimer()
			if _, err := env.Execute(context.Background(), "window-trigger-path"); err != nil {
				b.Fatal(err)
			}
		})
	}
}

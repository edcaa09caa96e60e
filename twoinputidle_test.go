package weir_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/rest"
)

// twoSides builds the inputs of a two-input operator at parallelism 1: the
// left one emits timestamps 0, 1, 2, ... (about 2000 a second, periodic
// watermarks every 20 ms, no out-of-orderness) for ever; left maps each
// index i to its element. The right one emits nothing at all (every element
// is filtered away); with idle > 0 its assigner marks it idle after idle
// (IdleTimeout), otherwise its watermark stays at the minimum for ever.
func twoSides(env *weir.Environment, idle time.Duration, left func(i int64) int64) (weir.DataStream[int64], weir.DataStream[int64]) {
	l := weir.AssignTimestampsAndWatermarks(weir.Generate(env, -1, 2000, left).SetParallelism(1),
		weir.WatermarkStrategy[int64]{Timestamp: func(v int64) int64 { return v }, Interval: 20 * time.Millisecond}).SetParallelism(1)
	r := weir.Filter(weir.Generate(env, -1, 100, func(i int64) int64 { return i }).SetParallelism(1), func(int64) bool { return false }).SetParallelism(1)
	r = weir.AssignTimestampsAndWatermarks(r, weir.WatermarkStrategy[int64]{
		Timestamp: func(v int64) int64 { return v }, Interval: 20 * time.Millisecond, IdleTimeout: idle}).SetParallelism(1)
	return l, r
}

// tenthTimers registers, for each left element at ts < 1000, an event-time
// timer at ts rounded down to a multiple of 10, and emits each timer's time
// when it fires; the right side does nothing. Timers of one key fire in
// time order, so the reference is 0, 10, 20, ...
type tenthTimers struct{}

func (tenthTimers) ProcessElement1(ctx weir.KeyedContext[string], v int64, _ weir.Collector[int64]) error {
	if ts := ctx.Timestamp(); ts < 1000 {
		ctx.TimerService().RegisterEventTimeTimer(ts - ts%10)
	}
	return nil
}
func (tenthTimers) ProcessElement2(weir.KeyedContext[string], int64, weir.Collector[int64]) error {
	return nil
}
func (tenthTimers) OnTimer(_ weir.OnTimerContext[string], ts int64, out weir.Collector[int64]) error {
	out.Collect(ts)
	return nil
}

// broadcastTenthTimers is tenthTimers for ConnectBroadcast (keyed side left,
// broadcast side right).
type broadcastTenthTimers struct{ tenthTimers }

func (b broadcastTenthTimers) ProcessElement(ctx weir.KeyedBroadcastContext[string], v int64, out weir.Collector[int64]) error {
	return b.ProcessElement1(ctx, v, out)
}
func (broadcastTenthTimers) ProcessBroadcastElement(weir.KeyedBroadcastSideContext[string], int64, weir.Collector[int64]) error {
	return nil
}

// timersJob wires twoSides into KeyedCoProcess or ConnectBroadcast with
// one key and collects the fired timers (for CoMap, which has none, the
// starts of the windows its output watermark fires downstream).
func timersJob(kind string, idle time.Duration) (*weir.Environment, *weir.Collected[int64]) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	l, r := twoSides(env, idle, func(i int64) int64 { return i })
	key := func(int64) string { return "k" }
	var out weir.DataStream[int64]
	switch kind {
	case "keyed-co-process":
		out = weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(l, key), weir.KeyBy(r, key)), weir.KeyedCoProcessFunction[string, int64, int64, int64](tenthTimers{}))
	case "broadcast":
		out = weir.ConnectBroadcast(weir.KeyBy(l, key), weir.BroadcastTo(r), weir.KeyedBroadcastProcessFunction[string, int64, int64, int64](broadcastTenthTimers{}))
	case "co-map":
		// No timers of its own (non-keyed): its output watermark drives
		// tumbling windows of 10 ms downstream, which emit their start.
		co := weir.CoMap(weir.Connect(l, r), func(v int64) int64 { return v }, func(v int64) int64 { return v })
		below := weir.Filter(co, func(v int64) bool { return v < 1000 })
		ws := weir.Window(weir.KeyBy(below, key), weir.TumblingEventTimeWindows(10*time.Millisecond))
		out = weir.WindowProcess(ws, weir.ProcessWindowFunc[string, int64, int64](func(ctx weir.WindowContext[string], els []int64, out weir.Collector[int64]) error {
			out.Collect(ctx.Window().Start)
			return nil
		}))
	}
	return env, weir.Collect(out)
}

// An idle second input leaves the operator's combined watermark (Flink's
// AbstractStreamOperator): the first input alone drives event time, so its
// timers fire, in order.
func TestIdleInputLeavesTwoInputWatermark(t *testing.T) {
	for _, kind := range []string{"keyed-co-process", "broadcast", "co-map"} {
		t.Run(kind, func(t *testing.T) {
			env, out := timersJob(kind, 50*time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			job, err := env.ExecuteAsync(ctx, kind)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for v := range out.All() {
				if got = append(got, v); len(got) == 10 {
					break
				}
			}
			job.Cancel()
			job.Wait(context.Background())
			want := []int64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}
			if !slices.Equal(got, want) {
				t.Fatalf("fired timers %v, want %v", got, want)
			}
		})
	}
}

// The control: without idleness the silent second input holds the combined
// watermark at the minimum, and no timer fires.
func TestSilentInputHoldsBackTwoInputWatermark(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a second")
	}
	for _, kind := range []string{"keyed-co-process", "broadcast", "co-map"} {
		t.Run(kind, func(t *testing.T) {
			env, out := timersJob(kind, 0)
			job, err := env.ExecuteAsync(context.Background(), kind)
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(time.Second, func() { job.Cancel() })
			var got []int64
			for v := range out.All() {
				got = append(got, v)
			}
			job.Wait(context.Background())
			if len(got) > 0 {
				t.Fatalf("timers fired although the second input never sent a watermark: %v", got)
			}
		})
	}
}

// lateJoin runs an interval join of twoSides whose left side has every
// tenth element (from the 300th on) 300 ms behind, and reports, once the
// join has read 1000 elements, its numLateRecordsDropped: with the right
// side idle the left side's watermark is the join's, so those elements are
// late; with a silent right side that is not idle the join's watermark
// stays at the minimum and nothing is late.
func lateJoin(t *testing.T, idle time.Duration) int64 {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, RESTAddr: "127.0.0.1:0"})
	l, r := twoSides(env, idle, func(i int64) int64 {
		if i >= 300 && i%10 == 0 {
			return i - 300
		}
		return i
	})
	key := func(int64) string { return "k" }
	weir.Discard(weir.ProcessIntervalJoin(weir.IntervalJoin(weir.KeyBy(l, key), weir.KeyBy(r, key)).Between(-time.Millisecond, time.Millisecond),
		weir.ProcessJoinFunc[int64, int64, int64](func(_ weir.ProcessJoinContext, a, b int64, out weir.Collector[int64]) error {
			out.Collect(a + b)
			return nil
		})))
	job, err := env.ExecuteAsync(context.Background(), "join")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { job.Cancel(); job.Wait(context.Background()) }()
	c := rest.NewClient(job.RESTAddr(), nil)
	vid := vertexNamed(t, c, job.ID(), "Interval-Join")
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms, err := c.SubtaskMetrics(context.Background(), job.ID(), vid, 0, "numRecordsIn", "Interval-Join.numLateRecordsDropped")
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 2 && ms[0].ID == "numRecordsIn" {
			in, _ := strconv.ParseInt(ms[0].Value, 10, 64)
			dropped, _ := strconv.ParseInt(ms[1].Value, 10, 64)
			if in >= 1000 {
				return dropped
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the join never read 1000 elements: %+v", ms)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestIdleInputLeavesIntervalJoinWatermark(t *testing.T) {
	if n := lateJoin(t, 50*time.Millisecond); n == 0 {
		t.Fatal("no left element was late although the right side is idle")
	}
	if testing.Short() {
		return
	}
	if n := lateJoin(t, 0); n != 0 {
		t.Fatalf("%d left elements were late although the silent right side holds the watermark at the minimum", n)
	}
}

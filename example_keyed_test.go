package weir_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// Click is the element of the keyed examples: a user's click at TS, in ms
// of event time.
type Click struct {
	User string
	TS   int64
}

// clickStream is a bounded stream of clicks with event timestamps. Punctuated
// watermarks (one after every element that advances event time) make the
// results depend only on the order of the input, so the examples print the
// same output every run.
func clickStream(env *weir.Environment, cs ...Click) weir.DataStream[Click] {
	return weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, cs), weir.WatermarkStrategy[Click]{
		Timestamp: func(c Click) int64 { return c.TS },
		Generator: weir.PunctuatedWatermarks[Click](0),
	})
}

// sessionCounter counts each user's clicks and emits the count once the
// user has been idle for 10 ms of event time: keyed state, and an
// event-time timer moved forward by every click.
type sessionCounter struct {
	count state.ValueState[int64]
	timer state.ValueState[int64]
}

// Open declares the state; the handles read and write the current key's
// values.
func (s *sessionCounter) Open(ctx weir.KeyedRuntimeContext) error {
	s.count = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "count", Codec: codec.Int64()})
	s.timer = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "timer", Codec: codec.Int64()})
	return nil
}

func (s *sessionCounter) ProcessElement(ctx weir.KeyedContext[string], c Click, out weir.Collector[string]) error {
	n, _ := s.count.Value()
	s.count.Update(n + 1)
	if old, ok := s.timer.Value(); ok {
		ctx.TimerService().DeleteEventTimeTimer(old)
	}
	s.timer.Update(c.TS + 10)
	ctx.TimerService().RegisterEventTimeTimer(c.TS + 10)
	return nil
}

// OnTimer makes sessionCounter a TimerFunction: ProcessKeyed calls it when
// the watermark passes a timer of the key.
func (s *sessionCounter) OnTimer(ctx weir.OnTimerContext[string], ts int64, out weir.Collector[string]) error {
	n, _ := s.count.Value()
	out.Collect(fmt.Sprintf("%s: %d clicks, idle at %d", ctx.CurrentKey(), n, ts))
	s.count.Clear()
	s.timer.Clear()
	return nil
}

// ProcessKeyed runs a KeyedProcessFunction: per-key state and timers. A
// function that implements TimerFunction handles its timers; at the end of
// a bounded input the final watermark fires the timers still pending.
func ExampleProcessKeyed() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	cs := clickStream(env,
		Click{"ann", 1}, Click{"bob", 2}, Click{"ann", 5},
		Click{"cid", 20},                   // watermark 19: bob's timer (12) and ann's (15) fire
		Click{"bob", 30}, Click{"ann", 40}, // watermark 39: cid's timer (30) fires
	) // the final watermark fires bob's timer (40) and ann's (50)
	sessions := weir.ProcessKeyed(weir.KeyBy(cs, func(c Click) string { return c.User }), &sessionCounter{})
	out, err := weir.ExecuteAndCollect(context.Background(), env, sessions, "sessions")
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range out {
		fmt.Println(l)
	}
	// Output:
	// bob: 1 clicks, idle at 12
	// ann: 2 clicks, idle at 15
	// cid: 1 clicks, idle at 30
	// bob: 1 clicks, idle at 40
	// ann: 1 clicks, idle at 50
}

// Window cuts a keyed stream into windows, here tumbling 10 ms windows of
// event time. AllowedLateness keeps a window's contents for 5 ms of event
// time after it fired: a late click fires it again, with everything it
// holds. Clicks later than that go to the side output named by
// SideOutputLateData.
func ExampleWindow() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	cs := clickStream(env,
		Click{"ann", 1}, Click{"ann", 3},
		Click{"ann", 12}, // watermark 11: [0, 10) fires with 2 clicks
		Click{"ann", 5},  // late, within the allowed lateness: [0, 10) fires again
		Click{"ann", 25}, // watermark 24: [10, 20) fires, [0, 10) is dropped
		Click{"ann", 2},  // too late: to the side output
	)
	tooLate := weir.NewOutputTag[Click]("too-late")
	windows := weir.Window(weir.KeyBy(cs, func(c Click) string { return c.User }),
		weir.TumblingEventTimeWindows(10*time.Millisecond)).
		AllowedLateness(5 * time.Millisecond).
		SideOutputLateData(tooLate)
	counts := weir.WindowProcess(windows, weir.ProcessWindowFunc[string, Click, string](
		func(ctx weir.WindowContext[string], cs []Click, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s %v: %d clicks", ctx.CurrentKey(), ctx.Window(), len(cs)))
			return nil
		}))
	main := weir.Collect(counts)
	late := weir.Collect(weir.SideOutput(counts, tooLate))
	if _, err := env.Execute(context.Background(), "windows"); err != nil {
		log.Fatal(err)
	}
	for l := range main.All() {
		fmt.Println(l)
	}
	for c := range late.All() {
		fmt.Println("too late:", c)
	}
	// Output:
	// ann [0, 10): 2 clicks
	// ann [0, 10): 3 clicks
	// ann [10, 20): 1 clicks
	// ann [20, 30): 1 clicks
	// too late: {ann 2}
}

// average is an AggregateFunction: it folds a window's clicks into a
// count and a sum of timestamps, and returns their mean.
type average struct{}

type avgAcc struct{ Sum, N int64 }

func (average) CreateAccumulator() avgAcc { return avgAcc{} }
func (average) Add(c Click, acc avgAcc) avgAcc {
	return avgAcc{acc.Sum + c.TS, acc.N + 1}
}
func (average) GetResult(acc avgAcc) float64 { return float64(acc.Sum) / float64(acc.N) }
func (average) Merge(a, b avgAcc) avgAcc     { return avgAcc{a.Sum + b.Sum, a.N + b.N} }

// WindowAggregate folds each window's elements into an accumulator as they
// arrive, rather than keeping them until the window fires.
func ExampleWindowAggregate() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	cs := clickStream(env, Click{"ann", 1}, Click{"ann", 4}, Click{"ann", 11}, Click{"ann", 18}, Click{"ann", 19})
	windows := weir.Window(weir.KeyBy(cs, func(c Click) string { return c.User }),
		weir.TumblingEventTimeWindows(10*time.Millisecond))
	means := weir.WindowAggregate[string, Click, avgAcc, float64](windows, average{})
	out, err := weir.ExecuteAndCollect(context.Background(), env, means, "means")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out) // the mean timestamp of [0, 10) and of [10, 20)
	// Output: [2.5 16]
}

// WindowReduce combines a window's elements two at a time; a count window
// fires every n elements of a key.
func ExampleWindowReduce() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	keyed := weir.KeyBy(weir.Sequence(env, 1, 9), func(v int64) bool { return v%2 == 0 })
	sums := weir.WindowReduce(weir.CountWindow(keyed, 2), func(a, b int64) int64 { return a + b })
	out, err := weir.ExecuteAndCollect(context.Background(), env, sums, "count windows")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out) // 1+3, 2+4, 5+7, 6+8; 9 waits in a window that never fills
	// Output: [4 6 12 14]
}

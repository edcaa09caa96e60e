package weir_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
	"go.uber.org/goleak"
)

// MapWithState's open runs once per subtask and the handles it declares
// serve only the function it returns: at parallelism 2 on the heap backend
// every key's running sum ends at the key's total (an independent sum).
func TestMapWithStateOpenPerSubtask(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	src := weir.Sequence(env, 1, 400)
	keyed := weir.KeyBy(src, func(v int64) int64 { return v % 8 })
	var opens atomic.Int64
	type sum struct{ Key, Total int64 }
	out := run(t, env, weir.MapWithState(keyed, func(rc weir.KeyedRuntimeContext) (func(weir.KeyedContext[int64], int64) (sum, error), error) {
		opens.Add(1)
		s := state.GetValueState(rc.State(), state.ValueDescriptor[int64]{Name: "sum", Codec: codec.Int64()})
		return func(ctx weir.KeyedContext[int64], v int64) (sum, error) {
			total, _ := s.Value()
			total += v
			s.Update(total)
			return sum{ctx.CurrentKey(), total}, nil
		}, nil
	}))
	want := map[int64]int64{}
	for v := int64(1); v <= 400; v++ {
		want[v%8] += v
	}
	got := map[int64]int64{}
	for _, s := range out {
		got[s.Key] = max(got[s.Key], s.Total)
	}
	if len(out) != 400 || len(got) != len(want) {
		t.Fatalf("%d results for %d keys, want 400 for %d", len(out), len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %d: sum %d, want %d", k, got[k], w)
		}
	}
	if n := opens.Load(); n != 2 {
		t.Errorf("open ran %d times, want once per subtask (2)", n)
	}
}

func TestMapWithStateNilOpenFailsAtExecute(t *testing.T) {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	keyed := weir.KeyBy(weir.Sequence(env, 1, 3), func(v int64) int64 { return v })
	weir.Discard(weir.MapWithState[int64, int64, int64](keyed, nil))
	_, err := env.Execute(context.Background(), "nil-open")
	if err == nil || !strings.Contains(err.Error(), "MapWithState: open is nil") {
		t.Fatalf("got %v, want the nil open refused", err)
	}
}

// processed is set by the functions below if any element reaches them: a
// build-time mistake must stop the job before any task runs.
var processed atomic.Bool

// fraudDetector's OnTimer takes the element's context, not the timer's: it
// compiles, and would never be called.
type fraudDetector struct{}

func (fraudDetector) ProcessElement(weir.KeyedContext[int64], int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}

func (fraudDetector) OnTimer(weir.KeyedContext[int64], int64, weir.Collector[int64]) error {
	return nil
}

// keyedOpenOnProcess opens with the keyed context on a non-keyed stream.
type keyedOpenOnProcess struct{}

func (keyedOpenOnProcess) ProcessElement(weir.Context, int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}

func (keyedOpenOnProcess) Open(weir.KeyedRuntimeContext) error { return nil }

// closeNoError's Close returns nothing.
type closeNoError struct{ keyedOpenOnProcessOK }

func (closeNoError) Close() {}

// snapshotIntID's SnapshotState takes an int.
type snapshotIntID struct{ keyedOpenOnProcessOK }

func (snapshotIntID) SnapshotState(int) error { return nil }

// finishNoCollector's Finish has no collector.
type finishNoCollector struct{ keyedOpenOnProcessOK }

func (finishNoCollector) Finish() error { return nil }

// keyedOpenOnProcessOK has the right signatures.
type keyedOpenOnProcessOK struct{}

func (keyedOpenOnProcessOK) ProcessElement(weir.Context, int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}

// timerByPointer's OnTimer is right but has a pointer receiver, and it is
// passed by value.
type timerByPointer struct{}

func (timerByPointer) ProcessElement(weir.KeyedContext[int64], int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}

func (*timerByPointer) OnTimer(weir.OnTimerContext[int64], int64, weir.Collector[int64]) error {
	return nil
}

// windowOpenWrong's Open returns nothing.
type windowOpenWrong struct{}

func (windowOpenWrong) Process(weir.WindowContext[int64], []int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}

func (windowOpenWrong) Open(weir.RuntimeContext) {}

// Methods named like the optional interfaces but with other signatures are
// refused at Execute, naming the function's type, the method, what it has
// and what it needs; no element reaches the function.
func TestWrongHookSignaturesFailAtExecute(t *testing.T) {
	keyedStream := func(env *weir.Environment) weir.KeyedStream[int64, int64] {
		return weir.KeyBy(weir.Sequence(env, 1, 100), func(v int64) int64 { return v % 3 })
	}
	cases := []struct {
		name  string
		build func(env *weir.Environment) weir.DataStream[int64]
		want  []string
	}{
		{"OnTimer", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.ProcessKeyed[int64, int64, int64](keyedStream(env), fraudDetector{})
		}, []string{"ProcessKeyed: fraudDetector.OnTimer has signature func(weir.KeyedContext[int64], int64, weir.Collector[int64]) error",
			"want func(weir.OnTimerContext[int64], int64, weir.Collector[int64]) error (weir.TimerFunction[int64,int64])"}},
		{"Open", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.Process[int64, int64](weir.Sequence(env, 1, 100), keyedOpenOnProcess{})
		}, []string{"Process: keyedOpenOnProcess.Open has signature func(weir.KeyedRuntimeContext) error", "want func(weir.RuntimeContext) error (weir.Opener)"}},
		{"Close", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.Process[int64, int64](weir.Sequence(env, 1, 100), closeNoError{})
		}, []string{"closeNoError.Close has signature func()", "want func() error (weir.Closer)"}},
		{"SnapshotState", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.Process[int64, int64](weir.Sequence(env, 1, 100), &snapshotIntID{})
		}, []string{"snapshotIntID.SnapshotState has signature func(int) error", "want func(int64) error (weir.CheckpointedFunction)"}},
		{"Finish", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.Process[int64, int64](weir.Sequence(env, 1, 100), finishNoCollector{})
		}, []string{"finishNoCollector.Finish has signature func() error", "(weir.Finisher[int64])"}},
		{"PointerReceiver", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.ProcessKeyed[int64, int64, int64](keyedStream(env), timerByPointer{})
		}, []string{"timerByPointer.OnTimer has a pointer receiver but the function is passed by value", "pass a pointer (&timerByPointer{...})"}},
		{"WindowOpen", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.WindowProcess[int64, int64, int64](weir.Window(keyedStream(env), weir.TumblingEventTimeWindows(time.Second)), windowOpenWrong{})
		}, []string{"WindowProcess: windowOpenWrong.Open has signature func(weir.RuntimeContext)", "want func(weir.RuntimeContext) error (weir.Opener) or func(weir.KeyedRuntimeContext) error (weir.KeyedOpener)"}},
		{"BroadcastOnTimer", func(env *weir.Environment) weir.DataStream[int64] {
			return weir.ConnectBroadcast[int64, int64, int64, int64](keyedStream(env), weir.BroadcastTo(weir.Sequence(env, 1, 3)), broadcastTimerWrong{})
		}, []string{"ConnectBroadcast: broadcastTimerWrong.OnTimer has signature func(weir.KeyedBroadcastContext[int64], int64, weir.Collector[int64]) error",
			"(weir.TimerFunction[int64,int64]) or func(weir.KeyedBroadcastOnTimerContext[int64], int64, weir.Collector[int64]) error"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			processed.Store(false)
			env := weir.NewEnvironment(weir.Config{Parallelism: 1})
			weir.Discard(c.build(env))
			_, err := env.Execute(context.Background(), c.name)
			if err == nil {
				t.Fatal("Execute succeeded, want the method refused")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if processed.Load() {
				t.Error("an element reached the function: the job ran")
			}
		})
	}
}

// A function whose hooks have the right signatures runs.
func TestRightHookSignaturesRun(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	processed.Store(false)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	weir.Discard(weir.ProcessKeyed[int64, int64, int64](weir.KeyBy(weir.Sequence(env, 1, 10), func(v int64) int64 { return v }), &timerByPointer{}))
	if _, err := env.Execute(context.Background(), "right"); err != nil {
		t.Fatal(err)
	}
	if !processed.Load() {
		t.Error("no element reached the function")
	}
}

// counter declares its state with no codec: the codec is derived from the
// type (codec.For), and the job runs.
type counter struct {
	desc state.ValueDescriptor[int64] // no Codec
	n    state.ValueState[int64]
}

func (c *counter) Open(ctx weir.KeyedRuntimeContext) error {
	c.n = state.GetValueState(ctx.State(), c.desc)
	return nil
}

func (c *counter) ProcessElement(ctx weir.KeyedContext[int64], _ int64, out weir.Collector[[2]int64]) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect([2]int64{ctx.CurrentKey(), n + 1})
	return nil
}

func TestNilStateCodecIsDerived(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	keyed := weir.KeyBy(weir.Sequence(env, 0, 99), func(v int64) int64 { return v % 5 })
	out := run(t, env, weir.ProcessKeyed[int64, int64, [2]int64](keyed, &counter{desc: state.ValueDescriptor[int64]{Name: "n"}}))
	got := map[int64]int64{}
	for _, c := range out {
		got[c[0]] = max(got[c[0]], c[1])
	}
	for k := range int64(5) {
		if got[k] != 20 {
			t.Errorf("key %d counted %d, want 20", k, got[k])
		}
	}
}

// flagWatcher holds a descriptor whose type has no derived codec and no
// codec given: refused at Execute, naming the field, the state and the fix.
type flagWatcher struct {
	flag state.ValueDescriptor[chan bool]
}

func (w *flagWatcher) ProcessElement(ctx weir.KeyedContext[int64], _ int64, _ weir.Collector[int64]) error {
	processed.Store(true)
	state.GetValueState(ctx.State(), w.flag)
	return nil
}

func TestUnderivableStateCodecFailsAtExecute(t *testing.T) {
	processed.Store(false)
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	keyed := weir.KeyBy(weir.Sequence(env, 0, 9), func(v int64) int64 { return v })
	weir.Discard(weir.ProcessKeyed[int64, int64, int64](keyed, &flagWatcher{flag: state.ValueDescriptor[chan bool]{Name: "flag"}}))
	_, err := env.Execute(context.Background(), "nocodec")
	want := `ProcessKeyed: flagWatcher.flag: state "flag": the descriptor's Codec is nil and codec.For cannot derive one for chan bool`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "set Codec to a codec.Codec[chan bool]") {
		t.Fatalf("got %v\nwant one containing %q and the fix", err, want)
	}
	if processed.Load() {
		t.Error("an element reached the function: the job ran")
	}
}

// broadcastTimerWrong's OnTimer takes the element's context, not a timer's.
type broadcastTimerWrong struct{}

func (broadcastTimerWrong) ProcessElement(weir.KeyedBroadcastContext[int64], int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}
func (broadcastTimerWrong) ProcessBroadcastElement(weir.KeyedBroadcastSideContext[int64], int64, weir.Collector[int64]) error {
	processed.Store(true)
	return nil
}
func (broadcastTimerWrong) OnTimer(weir.KeyedBroadcastContext[int64], int64, weir.Collector[int64]) error {
	return nil
}

// hiddenEvent has an unexported field: codec.For cannot derive its codec.
type hiddenEvent struct {
	User  string
	order int64
}

// Types whose codec cannot be derived, where an operator keeps them in
// state (a window's contents, a keyed operator's key), are refused at
// Execute, naming the operator and the field, before any task runs: the
// first tutorial user's job retried forever instead (the error is also
// permanent at run time).
func TestUnderivableCodecsFailAtExecute(t *testing.T) {
	cases := []struct {
		name  string
		build func(env *weir.Environment)
		want  []string
	}{
		{"WindowContents", func(env *weir.Environment) {
			events := weir.Map(weir.Sequence(env, 0, 9), func(v int64) hiddenEvent { processed.Store(true); return hiddenEvent{User: "u", order: v} })
			ws := weir.Window(weir.KeyBy(events, func(e hiddenEvent) string { return e.User }), weir.TumblingProcessingTimeWindows(time.Second))
			weir.Discard(weir.WindowProcess(ws, weir.ProcessWindowFunc[string, hiddenEvent, int](
				func(_ weir.WindowContext[string], els []hiddenEvent, out weir.Collector[int]) error {
					out.Collect(len(els))
					return nil
				})))
		}, []string{"Window(Process)", "window contents need a codec for the element type", "hiddenEvent.order (unexported field"}},
		{"Key", func(env *weir.Environment) {
			keyed := weir.KeyBy(weir.Sequence(env, 0, 9), func(v int64) hiddenEvent { processed.Store(true); return hiddenEvent{order: v} })
			weir.Discard(weir.ProcessKeyed(keyed, weir.KeyedProcessFunc[hiddenEvent, int64, int64](
				func(_ weir.KeyedContext[hiddenEvent], v int64, out weir.Collector[int64]) error {
					out.Collect(v)
					return nil
				})))
		}, []string{"ProcessKeyed: keyed state needs a codec for the key type", "hiddenEvent.order (unexported field", "KeyByWithCodec"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			processed.Store(false)
			env := weir.NewEnvironment(weir.Config{Parallelism: 1})
			c.build(env)
			_, err := env.Execute(context.Background(), c.name)
			if err == nil {
				t.Fatal("Execute succeeded, want the type refused")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if processed.Load() {
				t.Error("an element reached the job: it ran")
			}
		})
	}
}

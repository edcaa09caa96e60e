package operator

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
	"github.com/weirhq/weir/state"
)

// scriptSource's reader runs a script: each poll calls the next step with
// the output it was given.
type scriptSource struct {
	steps []func(out source.Output[int64])
}

func (scriptSource) Boundedness() source.Boundedness { return source.Bounded }
func (scriptSource) SplitCodec() codec.Codec[string] { return codec.String() }
func (scriptSource) CreateEnumerator(source.EnumeratorContext[string], []byte) (source.Enumerator[string], error) {
	return nil, nil
}
func (s scriptSource) CreateReader(source.ReaderContext) (source.Reader[int64, string], error) {
	return &scriptReader{steps: s.steps}, nil
}

type scriptReader struct {
	steps []func(out source.Output[int64])
}

func (r *scriptReader) Start() error                          { return nil }
func (r *scriptReader) AddSplits([]string)                    {}
func (r *scriptReader) NoMoreSplits()                         {}
func (r *scriptReader) SnapshotState(int64) ([]string, error) { return nil, nil }
func (r *scriptReader) NotifyCheckpointComplete(int64) error  { return nil }
func (r *scriptReader) Close() error                          { return nil }
func (r *scriptReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	if len(r.steps) == 0 {
		return source.EndOfInput, nil, 0, nil
	}
	r.steps[0](out)
	r.steps = r.steps[1:]
	return source.MoreAvailable, nil, 0, nil
}

// eventLog records what reaches the chain after the source, and the
// source's idle/active calls, as one ordered log.
type eventLog struct{ log []string }

func (l *eventLog) ProcessElement(v int64, ts int64) {}
func (l *eventLog) ProcessWatermark(wm int64) {
	if wm == math.MaxInt64 {
		l.log = append(l.log, "wm max")
		return
	}
	l.log = append(l.log, fmt.Sprint("wm ", wm))
}

// A watermarked source: per-split generators (bounded out-of-orderness 0,
// periodic), the minimum over splits, a split idle after the timeout
// leaves the minimum, all idle makes the source idle, a record wakes it,
// a released split leaves the minimum, and the end sends the maximum.
func TestWatermarkedSourceSplits(t *testing.T) {
	var a, b source.SplitOutput[int64]
	steps := []func(out source.Output[int64]){
		func(out source.Output[int64]) {
			a, b = out.ForSplit("a"), out.ForSplit("b")
			if out.ForSplit("a") != a {
				t.Error("ForSplit returned another output for the same split")
			}
			a.CollectWithTimestamp(0, 100)
			b.CollectWithTimestamp(0, 40)
		},
		func(source.Output[int64]) { a.CollectWithTimestamp(0, 200) }, // b still at 40
		func(source.Output[int64]) {},                                 // b goes idle by timeout
		func(source.Output[int64]) {},                                 // a goes idle too
		func(source.Output[int64]) { b.CollectWithTimestamp(0, 300) }, // wakes b
		func(out source.Output[int64]) { out.ReleaseSplit("a") },      // a leaves (it was idle)
		func(source.Output[int64]) { b.EmitWatermark(500) },
	}
	rec := &eventLog{}
	clk := clock.NewManual(0)
	src := openScriptedSource(t, steps, SourceWatermarks[int64]{Interval: 10, IdleTimeout: 30}, rec, func(idle bool) {
		rec.log = append(rec.log, fmt.Sprint("idle ", idle))
	}, clk)
	// Each step: poll once, then let 20 ms of processing time pass in
	// periodic wake-ups of 10 ms.
	var got []string
	for step := range len(steps) + 1 {
		rec.log = rec.log[:0]
		if _, _, _, err := src.PollNext(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			clk.Advance(10)
			src.OnProcessingTime(clk.NowMillis())
		}
		got = append(got, fmt.Sprintf("step %d: %v", step, rec.log))
	}
	// Times: step k polls at 20k ms; wake-ups at 20k+10 and 20k+20. A split
	// is idle at the first wake-up 30 ms after the one that last saw its
	// records.
	want := []string{
		"step 0: [wm 39]",                       // min(a 99, b 39)
		"step 1: [wm 199]",                      // b idle at 40 ms: a alone
		"step 2: [idle true]",                   // a idle at 60 ms: all idle, max 199 already out
		"step 3: []",                            //
		"step 4: [idle false wm 299]",           // b wakes behind (39 < 199), catches up at 299
		"step 5: [idle true]",                   // a released while idle; b idle at 120 ms
		"step 6: [idle false wm 500 idle true]", // a reader's watermark wakes b; only records reset its timer (as Flink's)
		"step 7: [idle false wm max]",           // the end: active, then the maximum
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// newScriptedSource makes a watermarked source over a script, its operator
// state restored from snap (nil: a fresh start).
func newScriptedSource(t *testing.T, steps []func(out source.Output[int64]), snap []byte, rec *eventLog, clk *clock.Manual) *watermarkedSource[int64, string] {
	t.Helper()
	cur := 0
	ctx := NewContext(&cur, 0)
	ctx.Clock = clk
	ctx.SendEvent = func([]byte) {}
	ctx.SetIdleHook(func(idle bool) { rec.log = append(rec.log, fmt.Sprint("idle ", idle)) })
	st := state.NewOperatorStore()
	if snap != nil {
		if err := st.Restore(snap); err != nil {
			t.Fatal(err)
		}
	}
	ctx.SetOperatorState(st)
	fac, _ := NewSourceFactoryWithWatermarks[int64, string](scriptSource{steps}, SourceWatermarks[int64]{Interval: 10})
	inst, err := fac.Create(ctx, Input[int64](rec))
	if err != nil {
		t.Fatal(err)
	}
	src := inst.Source.(*watermarkedSource[int64, string])
	if err := src.InitializeState(snap != nil); err != nil {
		t.Fatal(err)
	}
	if err := src.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return src
}

// A watermarked source's split watermarks are in its checkpoints: after a
// restore each split goes on from its own (not from the minimum), so the
// source's watermark does not go back; a split the checkpoint does not
// know starts at the minimum; the direct output keeps its watermark too.
func TestWatermarkedSourceRestoresSplitWatermarks(t *testing.T) {
	var a, b, c source.SplitOutput[int64]
	rec := &eventLog{}
	clk := clock.NewManual(0)
	src := newScriptedSource(t, []func(out source.Output[int64]){
		func(out source.Output[int64]) {
			a, b = out.ForSplit("a"), out.ForSplit("b")
			a.CollectWithTimestamp(0, 100)
			b.CollectWithTimestamp(0, 40)
			out.CollectWithTimestamp(0, 70)
		},
	}, nil, rec, clk)
	if _, _, _, err := src.PollNext(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10)
	src.OnProcessingTime(clk.NowMillis())
	if want := []string{"wm 39"}; !slices.Equal(rec.log, want) {
		t.Fatalf("before the checkpoint: %q, want %q", rec.log, want)
	}
	if err := src.SnapshotState(1); err != nil {
		t.Fatal(err)
	}
	snap, err := src.ctx.OperatorState().Snapshot()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		steps []func(out source.Output[int64])
		want  []string
	}{
		{"same splits, records behind", []func(out source.Output[int64]){
			func(out source.Output[int64]) {
				a, b = out.ForSplit("a"), out.ForSplit("b")
				b.CollectWithTimestamp(0, 10) // a fresh generator's 9 does not count
				out.CollectWithTimestamp(0, 5)
			},
		}, []string{"wm 39", "periodic: []"}},
		{"b alone (a went to another reader)", []func(out source.Output[int64]){
			func(out source.Output[int64]) { b = out.ForSplit("b"); b.CollectWithTimestamp(0, 50) },
		}, []string{"wm 39", "periodic: [wm 49]"}},
		{"a and a split the checkpoint does not know", []func(out source.Output[int64]){
			func(out source.Output[int64]) {
				a, c = out.ForSplit("a"), out.ForSplit("c")
				c.CollectWithTimestamp(0, 20)
			},
		}, []string{"periodic: [wm 19]"}},
	} {
		rec := &eventLog{}
		src := newScriptedSource(t, tc.steps, snap, rec, clk)
		if _, _, _, err := src.PollNext(); err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(rec.log)
		rec.log = rec.log[:0]
		clk.Advance(10)
		src.OnProcessingTime(clk.NowMillis())
		got = append(got, fmt.Sprint("periodic: ", rec.log))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A watermarked source without any split output goes idle after the idle
// timeout, as a split would (a reader that got no split holds nothing
// back), and active again before its first split's records; after its last
// split is released the timeout runs again.
func TestWatermarkedSourceWithoutSplitsGoesIdle(t *testing.T) {
	var a source.SplitOutput[int64]
	steps := []func(out source.Output[int64]){
		func(source.Output[int64]) {}, // no split: idle at 30 ms
		func(source.Output[int64]) {},
		func(out source.Output[int64]) { a = out.ForSplit("a"); a.CollectWithTimestamp(0, 100) },
		func(out source.Output[int64]) { out.ReleaseSplit("a") },
		func(source.Output[int64]) {},
		func(source.Output[int64]) {},
	}
	rec := &eventLog{}
	clk := clock.NewManual(0)
	src := openScriptedSource(t, steps, SourceWatermarks[int64]{Interval: 10, IdleTimeout: 30}, rec, func(idle bool) {
		rec.log = append(rec.log, fmt.Sprint("idle ", idle))
	}, clk)
	var got []string
	for step := range len(steps) {
		rec.log = rec.log[:0]
		if _, _, _, err := src.PollNext(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			clk.Advance(10)
			src.OnProcessingTime(clk.NowMillis())
		}
		got = append(got, fmt.Sprintf("step %d: %v", step, rec.log))
	}
	want := []string{
		"step 0: []",
		"step 1: [idle true]",        // 30 ms without an output
		"step 2: [idle false wm 99]", // a split: active before its records
		"step 3: []",                 // released at 60 ms
		"step 4: [idle true]",        // 90 ms: 30 ms without an output
		"step 5: []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// openScriptedSource makes and opens a watermarked source over a script
// under strategy ws, its chain in, its idle changes reported to onIdle.
func openScriptedSource(t *testing.T, steps []func(out source.Output[int64]), ws SourceWatermarks[int64], in Input[int64], onIdle func(bool), clk *clock.Manual) *watermarkedSource[int64, string] {
	t.Helper()
	cur := 0
	ctx := NewContext(&cur, 0)
	ctx.Clock = clk
	ctx.SendEvent = func([]byte) {}
	ctx.SetIdleHook(onIdle)
	fac, _ := NewSourceFactoryWithWatermarks[int64, string](scriptSource{steps}, ws)
	inst, err := fac.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	src := inst.Source.(*watermarkedSource[int64, string])
	if err := src.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return src
}

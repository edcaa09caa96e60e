package weir

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/state"
)

// WatermarkStrategy assigns event timestamps to elements and generates
// watermarks from them, like Flink's bounded-out-of-orderness strategy:
// watermark = highest timestamp seen - MaxOutOfOrderness - 1, emitted every
// Interval of processing time when it advanced.
type WatermarkStrategy[T any] struct {
	// Timestamp returns an element's event time in ms since the epoch.
	Timestamp func(T) int64
	// MaxOutOfOrderness is how late an element may be (0: timestamps only
	// increase, Flink's monotonous strategy).
	MaxOutOfOrderness time.Duration
	// Interval is how often watermarks are emitted (default:
	// Config.AutoWatermarkInterval, Flink's pipeline.auto-watermark-interval).
	Interval time.Duration
	// IdleTimeout > 0 marks a subtask's output idle when it has seen no
	// element for that long (Flink's withIdleness): downstream then leaves
	// it out of the watermark minimum, so an input without data does not
	// hold back event time. The next element makes it active again; its
	// watermark counts again once it has caught up with downstream's (the
	// combined watermark never goes back, so its elements may be late).
	// Idleness is checked every Interval.
	IdleTimeout time.Duration
	// Generator, if set, makes each subtask's watermark generator instead
	// of the bounded-out-of-orderness one (MaxOutOfOrderness is then
	// unused): Flink's WatermarkGenerator, periodic (emitting in
	// OnPeriodicEmit, called every Interval) or punctuated (emitting in
	// OnEvent). See PunctuatedWatermarks.
	Generator func() WatermarkGenerator[T]
	// Alignment, if set, aligns the watermarks of the sources of a group
	// (see WithWatermarkAlignment). Only FromSourceWithWatermarks uses it;
	// AssignTimestampsAndWatermarks fails the job when it is set.
	Alignment *WatermarkAlignment
}

// WatermarkAlignment is Flink's watermark alignment: the sources of a
// group (given strategies with one Group name, in one job) do not let
// their watermark go more than MaxDrift beyond the group's minimum, so a
// source or split that reads ahead in event time waits for the others
// instead of filling downstream state (windows, joins) with elements that
// cannot fire yet. Every UpdateInterval each source reports its watermark
// to the JobManager and learns the largest one the group allows (the
// minimum over its sources' watermarks, idle and finished ones left out,
// plus MaxDrift). A source beyond it stops reading; a reader that
// implements source.SplitPauser also has its splits beyond it paused
// while it reads the others. The drift is enforced at the granularity of
// watermarks and of the readers' batches: a source may go beyond by what
// it emits between two watermarks or within one batch (the datagen
// readers check every 64 records, the file readers every line), and it
// learns of progress up to an update interval late. With the default
// periodic generator the watermark moves only every Interval, so use a
// punctuated generator (PunctuatedWatermarks) for a tight bound.
type WatermarkAlignment struct {
	// Group names the alignment group.
	Group string
	// MaxDrift (>= 0) is how far beyond the group's minimum a source's
	// watermark may go.
	MaxDrift time.Duration
	// UpdateInterval is how often sources report (Flink's default, 1 s,
	// when 0; at least 10 ms).
	UpdateInterval time.Duration
}

// defaultAlignmentUpdateInterval is WatermarkAlignment's default
// UpdateInterval (Flink's).
const defaultAlignmentUpdateInterval = time.Second

// WithWatermarkAlignment returns the strategy with watermark alignment
// (Flink's withWatermarkAlignment(group, maxAllowedWatermarkDrift,
// updateInterval)); updateInterval 0 is the default, 1 s.
func (ws WatermarkStrategy[T]) WithWatermarkAlignment(group string, maxDrift, updateInterval time.Duration) WatermarkStrategy[T] {
	ws.Alignment = &WatermarkAlignment{Group: group, MaxDrift: maxDrift, UpdateInterval: updateInterval}
	return ws
}

// WatermarkGenerator generates watermarks from the elements' timestamps.
// Watermarks that do not advance are ignored.
type WatermarkGenerator[T any] interface {
	OnEvent(v T, ts int64, out WatermarkOutput)
	OnPeriodicEmit(out WatermarkOutput)
}

// WatermarkOutput receives a generator's watermarks.
type WatermarkOutput interface {
	EmitWatermark(wm int64)
}

// PunctuatedWatermarks is a generator that emits a watermark after every
// element that advances it: highest timestamp so far - maxOutOfOrderness - 1.
// Results then depend only on the order of the input, not on timing.
//
// The watermark follows its element: an element at time t is processed
// before the watermark it raises fires the timers (and windows) it passes.
// So with no out-of-orderness, the first element at t0+d or later is
// processed before an event-time timer set for t0+d fires: a function that
// clears a flag in that timer still sees the flag set for that element.
func PunctuatedWatermarks[T any](maxOutOfOrderness time.Duration) func() WatermarkGenerator[T] {
	delay := maxOutOfOrderness.Milliseconds()
	return func() WatermarkGenerator[T] { return &punctuated[T]{delay: delay, max: math.MinInt64} }
}

type punctuated[T any] struct{ delay, max int64 }

func (p *punctuated[T]) OnEvent(_ T, ts int64, out WatermarkOutput) {
	if ts > p.max {
		p.max = ts
		if wm, ok := boundedWatermark(p.max, p.delay); ok {
			out.EmitWatermark(wm)
		}
	}
}

func (p *punctuated[T]) OnPeriodicEmit(WatermarkOutput) {}

// boundedWatermark is max - delay - 1, false when that falls below the
// int64 range (nothing to emit yet).
func boundedWatermark(max, delay int64) (int64, bool) {
	// The distance of max from the minimum, in uint64, must exceed delay.
	if uint64(max)-(1<<63) > uint64(delay) {
		return max - delay - 1, true
	}
	return 0, false
}

// AssignTimestampsAndWatermarks sets each element's timestamp and emits
// watermarks per the strategy. Watermarks from upstream are dropped, except
// the final one that ends the input.
func AssignTimestampsAndWatermarks[T any](s DataStream[T], ws WatermarkStrategy[T]) DataStream[T] {
	interval := ws.Interval
	if interval <= 0 {
		interval = s.env.cfg.AutoWatermarkInterval
	}
	idle := ws.IdleTimeout.Milliseconds()
	if ws.IdleTimeout > 0 {
		idle = max(idle, 1)
	}
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		if a := ws.Alignment; a != nil {
			return operator.Instance{}, fmt.Errorf("watermark alignment (group %q) works on sources only: give the strategy to FromSourceWithWatermarks, not AssignTimestampsAndWatermarks", a.Group)
		}
		if ws.Generator != nil {
			op := &generatorOp[T]{ts: ws.Timestamp, gen: ws.Generator(), out: out.(operator.Input[T]), ctx: ctx,
				watermarkEmitter: watermarkEmitter{interval: interval.Milliseconds(), emitted: math.MinInt64, idleTimeout: idle}}
			return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
		}
		op := &watermarkOp[T]{ts: ws.Timestamp, delay: ws.MaxOutOfOrderness.Milliseconds(), out: out.(operator.Input[T]), ctx: ctx,
			max: math.MinInt64, watermarkEmitter: watermarkEmitter{interval: interval.Milliseconds(), emitted: math.MinInt64, idleTimeout: idle}}
		op.batch = operator.AsBatch(op.out)
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[T](s.env, addNode[T](s.env, "Timestamps/Watermarks", fac, false, s.ends))
}

type watermarkOp[T any] struct {
	watermarkEmitter
	ts    func(T) int64
	delay int64
	out   operator.Input[T]
	batch operator.BatchInput[T] // out, when it takes batches
	ctx   *operator.Context
	max   int64
	tss   []int64 // ProcessBatch's timestamps
}

// watermarkEmitter is the lifecycle both watermark operators share: the
// last watermark emitted, kept in checkpoints, and the periodic wake-up.
type watermarkEmitter struct {
	interval, emitted int64
	// beforeMax is what was emitted before the maximum watermark (the end
	// of input, or a stop with --drain), which is what a checkpoint keeps:
	// the maximum ends event time for this run only, and a run resumed from
	// a drained savepoint must not start with every element late.
	beforeMax int64
	saved     watermarkState
	// Idleness (idleTimeout > 0): events counts elements; at each periodic
	// wake-up the output goes idle when none came for idleTimeout ms.
	idleTimeout, events, seenEvents, lastActive int64
	idle                                        bool
}

// noteEvent is called per element when idleness is on: an idle output
// becomes active before the element goes out.
func (e *watermarkEmitter) noteEvent(ctx *operator.Context) { e.noteEvents(ctx, 1) }

// noteEvents is noteEvent for n elements that go out together.
func (e *watermarkEmitter) noteEvents(ctx *operator.Context, n int) {
	e.events += int64(n)
	if e.idle {
		e.idle = false
		ctx.SetIdle(false)
	}
}

// checkIdle runs at each periodic wake-up (Flink's IdlenessTimer).
func (e *watermarkEmitter) checkIdle(ctx *operator.Context, now int64) {
	if e.events != e.seenEvents {
		e.seenEvents, e.lastActive = e.events, now
		return
	}
	if !e.idle && now-e.lastActive >= e.idleTimeout {
		e.idle = true
		ctx.SetIdle(true)
	}
}

func (e *watermarkEmitter) Open(ctx *operator.Context) error {
	if wm, ok := e.saved.open(ctx, "emitted-watermark"); ok {
		e.emitted = wm
	}
	e.lastActive = ctx.Clock.NowMillis()
	ctx.WakeAt(e.lastActive + e.interval)
	return nil
}

// SnapshotState implements operator.Snapshotter.
func (e *watermarkEmitter) SnapshotState(int64) error {
	wm := e.emitted
	if wm == math.MaxInt64 {
		wm = e.beforeMax
	}
	e.saved.save(wm)
	return nil
}
func (e *watermarkEmitter) Finish() error { return nil }
func (e *watermarkEmitter) Close() error  { return nil }

func (o *watermarkOp[T]) ProcessElement(v T, _ int64) {
	o.ctx.Enter()
	if o.idleTimeout > 0 {
		o.noteEvent(o.ctx)
	}
	ts := o.ts(v)
	if ts > o.max {
		o.max = ts
	}
	o.out.ProcessElement(v, ts)
}

// ProcessBatch implements operator.BatchInput (a source hands its batches
// of elements without timestamps): it takes every element's timestamp,
// then emits each run of equal timestamps as one batch when the output
// takes batches (a run of one as one element). That is ProcessElement for
// each element in order: watermarks go out only from OnProcessingTime,
// never between a batch's elements. Event time from a generator or a log
// moves by milliseconds while thousands of events go by, so the runs are
// long, and a keyBy after the assigner routes them a batch at a time.
func (o *watermarkOp[T]) ProcessBatch(vs []T, _ int64) {
	if len(vs) == 0 {
		return // no element: an idle output stays idle
	}
	if o.batch == nil {
		for _, v := range vs {
			o.ProcessElement(v, NoTimestamp)
		}
		return
	}
	o.ctx.Enter()
	if o.idleTimeout > 0 {
		o.noteEvents(o.ctx, len(vs))
	}
	o.max = operator.EmitTimestamped(o.batch, vs, o.ts, &o.tss, o.max)
}

func (o *watermarkOp[T]) ProcessWatermark(wm int64) {
	if wm == math.MaxInt64 && o.emitted != wm {
		o.beforeMax, o.emitted = o.emitted, wm
		o.out.ProcessWatermark(wm)
	}
}

func (o *watermarkOp[T]) OnProcessingTime(now int64) {
	if wm, ok := boundedWatermark(o.max, o.delay); ok && wm > o.emitted {
		o.emitted = wm
		o.out.ProcessWatermark(wm)
	}
	if o.idleTimeout > 0 {
		o.checkIdle(o.ctx, now)
	}
	o.ctx.WakeAt(now + o.interval)
}

// generatorOp runs a user's WatermarkGenerator.
type generatorOp[T any] struct {
	watermarkEmitter
	ts  func(T) int64
	gen WatermarkGenerator[T]
	out operator.Input[T]
	ctx *operator.Context
}

func (o *generatorOp[T]) ProcessElement(v T, _ int64) {
	o.ctx.Enter()
	if o.idleTimeout > 0 {
		o.noteEvent(o.ctx)
	}
	ts := o.ts(v)
	o.out.ProcessElement(v, ts)
	o.ctx.Enter()
	o.gen.OnEvent(v, ts, o)
}

// EmitWatermark implements WatermarkOutput: only advancing watermarks go on.
func (o *generatorOp[T]) EmitWatermark(wm int64) {
	if wm > o.emitted && wm < math.MaxInt64 {
		o.emitted = wm
		o.out.ProcessWatermark(wm)
		o.ctx.Enter()
	}
}

func (o *generatorOp[T]) ProcessWatermark(wm int64) {
	if wm == math.MaxInt64 && o.emitted != wm {
		o.beforeMax, o.emitted = o.emitted, wm
		o.out.ProcessWatermark(wm)
	}
}

func (o *generatorOp[T]) OnProcessingTime(now int64) {
	o.gen.OnPeriodicEmit(o)
	if o.idleTimeout > 0 {
		o.checkIdle(o.ctx, now)
	}
	o.ctx.WakeAt(now + o.interval)
}

// watermarkState keeps an operator's watermark in its checkpoints, so that
// after a restore the operator goes on from the watermark it had rather
// than from the minimum (where Flink starts again): elements replayed after
// a failure are then late or on time exactly as in a run without failure,
// and windows fire alike. Union state: after a change of parallelism every
// subtask takes the minimum of all.
type watermarkState struct{ st state.ListState[int64] }

// open declares the state and returns the restored watermark, if any.
func (w *watermarkState) open(ctx *operator.Context, name string) (int64, bool) {
	c, _ := codec.For[int64]()
	w.st = state.GetUnionListState(ctx.OperatorState(), state.ListDescriptor[int64]{Name: name, Codec: c})
	if vs := w.st.Get(); len(vs) > 0 {
		return slices.Min(vs), true
	}
	return 0, false
}

func (w *watermarkState) save(wm int64) { w.st.Update([]int64{wm}) }

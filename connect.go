package weir

import (
	"math"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/operator"
)

// ConnectedStreams are two streams, possibly of different types, feeding one
// two-input operator (Flink's DataStream.connect). Each side keeps its own
// partitioning; the operator's watermark is the minimum of the two inputs'
// (an idle input leaves it, as in Flink).
type ConnectedStreams[A, B any] struct {
	env    *Environment
	first  []end
	second []end
}

// Connect connects two streams for CoProcess, CoMap or CoFlatMap.
func Connect[A, B any](a DataStream[A], b DataStream[B]) ConnectedStreams[A, B] {
	return ConnectedStreams[A, B]{env: a.env, first: a.ends, second: b.ends}
}

// KeyedConnectedStreams are two keyed streams with keys of one type: both are
// hash-partitioned by key group, so elements of either side with equal keys
// meet in one subtask and share its keyed state and timers.
type KeyedConnectedStreams[K comparable, A, B any] struct {
	first  KeyedStream[K, A]
	second KeyedStream[K, B]
}

// ConnectKeyed connects two keyed streams (Flink's keyedA.connect(keyedB), or
// connect(..).keyBy(k1, k2)).
func ConnectKeyed[K comparable, A, B any](a KeyedStream[K, A], b KeyedStream[K, B]) KeyedConnectedStreams[K, A, B] {
	return KeyedConnectedStreams[K, A, B]{first: a, second: b}
}

// CoProcessFunction processes the elements of two connected, non-keyed
// streams. As in Flink, non-keyed operators have no timers; side outputs go
// through OutputTag.Output with the context.
type CoProcessFunction[A, B, U any] interface {
	ProcessElement1(ctx Context, a A, out Collector[U]) error
	ProcessElement2(ctx Context, b B, out Collector[U]) error
}

// KeyedCoProcessFunction processes the elements of two connected keyed
// streams with keyed state shared by both sides and timers for the current
// key. If it implements TimerFunction[K, U], it handles the timers.
type KeyedCoProcessFunction[K comparable, A, B, U any] interface {
	ProcessElement1(ctx KeyedContext[K], a A, out Collector[U]) error
	ProcessElement2(ctx KeyedContext[K], b B, out Collector[U]) error
}

// twoWatermarks combines the watermarks of two inputs as Flink's
// operators do (IndexedCombinedWatermarkStatus): the minimum over the
// inputs that are not idle; when both are idle, the larger of the two
// (FLINK-38454: nothing holds it back any more); never going back.
type twoWatermarks struct {
	wms  [2]int64
	wm   int64
	idle [2]bool // set by the task (operator.InputStatusReceiver)
}

func newTwoWatermarks() twoWatermarks {
	return twoWatermarks{wms: [2]int64{math.MinInt64, math.MinInt64}, wm: math.MinInt64}
}

// update records input's watermark and reports whether the combined one rose.
func (w *twoWatermarks) update(input int, wm int64) bool {
	w.wms[input] = max(w.wms[input], wm)
	return w.combine()
}

// setIdle records input's status and reports whether the combined
// watermark rose (an idle input no longer holds it back).
func (w *twoWatermarks) setIdle(input int, idle bool) bool {
	w.idle[input] = idle
	return w.combine()
}

func (w *twoWatermarks) combine() bool {
	var combined int64
	switch {
	case w.idle[0] && w.idle[1]:
		combined = max(w.wms[0], w.wms[1])
	case w.idle[0]:
		combined = w.wms[1]
	case w.idle[1]:
		combined = w.wms[0]
	default:
		combined = min(w.wms[0], w.wms[1])
	}
	if combined <= w.wm {
		return false
	}
	w.wm = combined
	return true
}

// CoProcess runs fn over two connected streams.
func CoProcess[A, B, U any](c ConnectedStreams[A, B], fn CoProcessFunction[A, B, U]) DataStream[U] {
	checkHooks(c.env, "CoProcess", fn, processHooks[U]())
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		f := instanceOf(fn)
		op := &coProcessOp[A, B, U]{fnHooks: fnHooks{f}, fn: f, col: collector[U]{out: out.(operator.Input[U]), ctx: ctx},
			pctx: processContext{runtimeContext: runtimeContext{ctx}}, wm: newTwoWatermarks()}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[A](coSide1[A, B, U]{op}), operator.Input[B](coSide2[A, B, U]{op})}}, nil
	})
	return newStream[U](c.env, addNode[U](c.env, "Co-Process", fac, false, c.first, c.second))
}

type coProcessOp[A, B, U any] struct {
	fnHooks
	fn   CoProcessFunction[A, B, U]
	col  collector[U]
	pctx processContext
	wm   twoWatermarks
}

func (o *coProcessOp[A, B, U]) Open(*operator.Context) error {
	if op, ok := o.fn.(Opener); ok {
		return op.Open(o.pctx.runtimeContext)
	}
	return nil
}

func (o *coProcessOp[A, B, U]) watermark(input int, wm int64) {
	o.col.ctx.Enter()
	if o.wm.update(input, wm) {
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

// ProcessInputStatus implements operator.InputStatusReceiver.
func (o *coProcessOp[A, B, U]) ProcessInputStatus(input int, idle bool) {
	o.col.ctx.Enter()
	if o.wm.setIdle(input, idle) {
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

func (o *coProcessOp[A, B, U]) Finish() error {
	if f, ok := o.fn.(Finisher[U]); ok {
		o.col.ts = NoTimestamp
		return f.Finish(&o.col)
	}
	return nil
}

func (o *coProcessOp[A, B, U]) Close() error { return closeFn(o.fn) }

type coSide1[A, B, U any] struct{ o *coProcessOp[A, B, U] }

func (s coSide1[A, B, U]) ProcessElement(v A, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.col.ts, o.pctx.ts = ts, ts
	if err := o.fn.ProcessElement1(&o.pctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}
func (s coSide1[A, B, U]) ProcessWatermark(wm int64) { s.o.watermark(0, wm) }

type coSide2[A, B, U any] struct{ o *coProcessOp[A, B, U] }

func (s coSide2[A, B, U]) ProcessElement(v B, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.col.ts, o.pctx.ts = ts, ts
	if err := o.fn.ProcessElement2(&o.pctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}
func (s coSide2[A, B, U]) ProcessWatermark(wm int64) { s.o.watermark(1, wm) }

// CoMap maps each side of connected streams to one output type.
func CoMap[A, B, U any](c ConnectedStreams[A, B], f1 func(A) U, f2 func(B) U) DataStream[U] {
	return CoProcess[A, B, U](c, coFuncs[A, B, U]{
		func(_ Context, a A, out Collector[U]) error { out.Collect(f1(a)); return nil },
		func(_ Context, b B, out Collector[U]) error { out.Collect(f2(b)); return nil }}).Name("Co-Map")
}

// CoFlatMap calls f1 or f2 for each element of connected streams; they may
// emit any number of elements.
func CoFlatMap[A, B, U any](c ConnectedStreams[A, B], f1 func(A, Collector[U]), f2 func(B, Collector[U])) DataStream[U] {
	return CoProcess[A, B, U](c, coFuncs[A, B, U]{
		func(_ Context, a A, out Collector[U]) error { f1(a, out); return nil },
		func(_ Context, b B, out Collector[U]) error { f2(b, out); return nil }}).Name("Co-FlatMap")
}

type coFuncs[A, B, U any] struct {
	f1 func(Context, A, Collector[U]) error
	f2 func(Context, B, Collector[U]) error
}

func (c coFuncs[A, B, U]) ProcessElement1(ctx Context, a A, out Collector[U]) error {
	return c.f1(ctx, a, out)
}
func (c coFuncs[A, B, U]) ProcessElement2(ctx Context, b B, out Collector[U]) error {
	return c.f2(ctx, b, out)
}

// KeyedCoProcess runs fn over two connected keyed streams: keyed state and
// timers per key, shared by both sides; checkpointed with the task's keyed
// state like every keyed operator.
func KeyedCoProcess[K comparable, A, B, U any](c KeyedConnectedStreams[K, A, B], fn KeyedCoProcessFunction[K, A, B, U]) DataStream[U] {
	checkHooks(c.first.env, "KeyedCoProcess", fn, keyedProcessHooks[K, U]())
	return keyedCoProcess(c, func() KeyedCoProcessFunction[K, A, B, U] { return instanceOf(fn) }, "Keyed-Co-Process")
}

func keyedCoProcess[K comparable, A, B, U any](c KeyedConnectedStreams[K, A, B], newFn func() KeyedCoProcessFunction[K, A, B, U], name string) DataStream[U] {
	requireKeyCodec(c.first, name)
	keyCodec, codecErr := c.first.keyCodec, c.first.codecErr
	key1, key2 := c.first.key, c.second.key
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		if keyCodec == nil {
			return operator.Instance{}, errNoKeyCodec(codecErr)
		}
		f := newFn()
		op := &keyedCoOp[K, A, B, U]{fnHooks: fnHooks{f}, fn: f, key1: key1, key2: key2, keyCodec: keyCodec,
			col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}, wm: newTwoWatermarks()}
		return operator.Instance{Op: op, Keyed: true, Inputs: []any{operator.Input[A](keyedCoSide1[K, A, B, U]{op}), operator.Input[B](keyedCoSide2[K, A, B, U]{op})}}, nil
	})
	env := c.first.env
	return newStream[U](env, addNode[U](env, name, fac, false, c.first.ends, c.second.ends))
}

type keyedCoOp[K comparable, A, B, U any] struct {
	keyedTimers[K, U]
	fnHooks
	fn       KeyedCoProcessFunction[K, A, B, U]
	key1     func(A) K
	key2     func(B) K
	keyCodec codec.Codec[K]
	col      collector[U]
	pctx     keyedProcessContext[K]
	wm       twoWatermarks
}

func (o *keyedCoOp[K, A, B, U]) Open(ctx *operator.Context) error {
	return openKeyedProcess(ctx, o.keyCodec, o.fn, &o.keyedTimers, &o.col, &o.pctx)
}

// watermark fires the event-time timers the combined watermark passed, then
// forwards it.
func (o *keyedCoOp[K, A, B, U]) watermark(input int, wm int64) {
	o.col.ctx.Enter()
	if o.wm.update(input, wm) {
		o.advance(o.wm.wm)
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

// ProcessInputStatus implements operator.InputStatusReceiver: an idle
// input leaves the combined watermark, which may fire timers at once.
func (o *keyedCoOp[K, A, B, U]) ProcessInputStatus(input int, idle bool) {
	o.col.ctx.Enter()
	if o.wm.setIdle(input, idle) {
		o.advance(o.wm.wm)
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

func (o *keyedCoOp[K, A, B, U]) Finish() error {
	if f, ok := o.fn.(Finisher[U]); ok {
		o.col.ts = NoTimestamp
		return f.Finish(&o.col)
	}
	return nil
}

func (o *keyedCoOp[K, A, B, U]) Close() error { return closeFn(o.fn) }

type keyedCoSide1[K comparable, A, B, U any] struct{ o *keyedCoOp[K, A, B, U] }

func (s keyedCoSide1[K, A, B, U]) ProcessElement(v A, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.core.SetKey(o.key1(v))
	o.col.ts, o.pctx.ts = ts, ts
	if err := o.fn.ProcessElement1(&o.pctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}
func (s keyedCoSide1[K, A, B, U]) ProcessWatermark(wm int64) { s.o.watermark(0, wm) }

type keyedCoSide2[K comparable, A, B, U any] struct{ o *keyedCoOp[K, A, B, U] }

func (s keyedCoSide2[K, A, B, U]) ProcessElement(v B, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.core.SetKey(o.key2(v))
	o.col.ts, o.pctx.ts = ts, ts
	if err := o.fn.ProcessElement2(&o.pctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}
func (s keyedCoSide2[K, A, B, U]) ProcessWatermark(wm int64) { s.o.watermark(1, wm) }

package weir

import (
	"errors"
	"fmt"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/state"
)

// TimeDomain says which clock fired a timer.
type TimeDomain int

const (
	// EventTime timers fire when the watermark passes them.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire when the processing-time clock passes them.
	ProcessingTime
)

// TimerService registers timers for the current key. Timers are deduplicated
// per key and time, and stored per key group with the keyed state.
type TimerService interface {
	CurrentProcessingTime() int64
	// CurrentWatermark is the operator's event time (math.MinInt64 at first).
	CurrentWatermark() int64
	RegisterEventTimeTimer(ts int64)
	DeleteEventTimeTimer(ts int64)
	RegisterProcessingTimeTimer(ts int64)
	DeleteProcessingTimeTimer(ts int64)
}

// KeyedContext is the context of an element or timer of a keyed stream.
type KeyedContext[K comparable] interface {
	Context
	// CurrentKey is the key of the element or timer being processed.
	CurrentKey() K
	TimerService() TimerService
	// State is the keyed state store; state handles read the current key.
	State() state.KeyedStore
}

// OnTimerContext is the context of a firing timer.
type OnTimerContext[K comparable] interface {
	KeyedContext[K]
	TimeDomain() TimeDomain
}

// KeyedProcessFunction processes the elements of a keyed stream with keyed
// state and timers. Declare state in Open (see KeyedOpener) or lazily; state
// handles and timers always apply to the current key.
type KeyedProcessFunction[K comparable, T, U any] interface {
	ProcessElement(ctx KeyedContext[K], v T, out Collector[U]) error
}

// TimerFunction is implemented by keyed process functions that handle timers.
type TimerFunction[K comparable, U any] interface {
	OnTimer(ctx OnTimerContext[K], ts int64, out Collector[U]) error
}

// KeyedRuntimeContext is what Open of a function on a keyed stream gets: the
// runtime context plus the keyed state store.
type KeyedRuntimeContext interface {
	RuntimeContext
	State() state.KeyedStore
}

// KeyedOpener is implemented by functions on keyed streams that declare
// state before the first element.
type KeyedOpener interface {
	Open(ctx KeyedRuntimeContext) error
}

// errNoKeyCodec is permanent: the key type does not change on a restart.
func errNoKeyCodec(cause error) error {
	return failure.Permanent(fmt.Errorf("keyed state needs a codec for the key type: %w (export the key's fields, or use KeyByWithCodec)", cause))
}

// requireKeyCodec refuses, at Execute, a keyed operator op on a stream whose
// key type has no codec, rather than failing its tasks once they run.
func requireKeyCodec[K comparable, T any](ks KeyedStream[K, T], op string) {
	if ks.keyCodec == nil {
		ks.env.fail(fmt.Errorf("weir: %s: %w", op, errNoKeyCodec(ks.codecErr)))
	}
}

// keyedTimers fires a keyed operator's timers into its function: event-time
// timers as the watermark advances, processing-time timers on wake-up.
type keyedTimers[K comparable, U any] struct {
	core    *keyedruntime.Core[K]
	onTimer TimerFunction[K, U] // nil: timers only clean up
	col     *collector[U]
	ctx     *keyedProcessContext[K]
	fire    func(timers.Timer)
}

func (t *keyedTimers[K, U]) init(core *keyedruntime.Core[K], fn any, col *collector[U], ctx *keyedProcessContext[K]) {
	t.core, t.col, t.ctx = core, col, ctx
	t.onTimer, _ = fn.(TimerFunction[K, U])
	t.fire = t.fireTimer
}

// advance fires the event-time timers the watermark passed, in time order.
func (t *keyedTimers[K, U]) advance(wm int64) {
	t.ctx.domain = EventTime
	t.core.AdvanceWatermark(wm, t.fire)
}

// OnProcessingTime implements operator.ProcessingTimer.
func (t *keyedTimers[K, U]) OnProcessingTime(now int64) {
	t.ctx.domain = ProcessingTime
	t.core.FireProcessingTime(now, t.fire)
}

func (t *keyedTimers[K, U]) fireTimer(tm timers.Timer) {
	t.core.SetKeyBytes(tm.Key)
	if t.onTimer == nil {
		return
	}
	ts := tm.Timestamp
	if t.ctx.domain == ProcessingTime {
		ts = NoTimestamp
	}
	t.col.ts, t.ctx.ts = ts, ts
	if err := t.onTimer.OnTimer(t.ctx, tm.Timestamp, t.col); err != nil {
		operator.Fail(err)
	}
	t.col.ctx.Enter()
}

// openKeyedProcess opens a keyed operator that runs a user function with a
// keyed process context (ProcessKeyed, KeyedCoProcess): the keyed core,
// restored processing-time timers armed, the context and timers pointed at
// it, then the function's Open.
func openKeyedProcess[K comparable, U any](ctx *operator.Context, keyCodec codec.Codec[K], fn any,
	t *keyedTimers[K, U], col *collector[U], pctx *keyedProcessContext[K]) error {
	core, err := keyedruntime.NewCore(ctx, keyCodec)
	if err != nil {
		return err
	}
	core.ArmProcessingTime() // restored timers
	*pctx = keyedProcessContext[K]{keyedRuntimeContext: keyedRuntimeContext{runtimeContext{ctx}, core.Store()}, core: core}
	t.init(core, fn, col, pctx)
	return openFn(fn, pctx.keyedRuntimeContext)
}

// openFn runs the Open hook of a keyed operator's user function, if it has
// one (KeyedOpener, else Opener).
func openFn(fn any, rc keyedRuntimeContext) error {
	if op, ok := fn.(KeyedOpener); ok {
		return op.Open(rc)
	}
	if op, ok := fn.(Opener); ok {
		return op.Open(rc)
	}
	return nil
}

// closeFn closes a function that is a Closer. (Keyed state belongs to the
// task, which closes it.)
func closeFn(fn any) error {
	if c, ok := fn.(Closer); ok {
		return c.Close()
	}
	return nil
}

// keyedRuntimeContext is the KeyedRuntimeContext of a keyed operator.
type keyedRuntimeContext struct {
	runtimeContext
	store state.KeyedStore
}

func (k keyedRuntimeContext) State() state.KeyedStore { return k.store }

// keyedProcessContext implements KeyedContext and OnTimerContext.
type keyedProcessContext[K comparable] struct {
	keyedRuntimeContext
	core   *keyedruntime.Core[K]
	ts     int64
	domain TimeDomain
}

func (p *keyedProcessContext[K]) Timestamp() int64           { return p.ts }
func (p *keyedProcessContext[K]) CurrentKey() K              { return p.core.Current() }
func (p *keyedProcessContext[K]) TimerService() TimerService { return p.core }
func (p *keyedProcessContext[K]) TimeDomain() TimeDomain     { return p.domain }

// keyedProcessOp runs a KeyedProcessFunction.
type keyedProcessOp[K comparable, T, U any] struct {
	keyedTimers[K, U]
	fnHooks
	fn       KeyedProcessFunction[K, T, U]
	key      func(T) K
	keyCodec codec.Codec[K]
	col      collector[U]
	pctx     keyedProcessContext[K]

	// Runs are prefetched in every table of the store (heap; nil: the
	// backend cannot name the lines of a key's entries).
	rh   runHold[K, T, struct{}]
	heap *typedstore.Store
}

func (o *keyedProcessOp[K, T, U]) Open(ctx *operator.Context) error {
	if err := openKeyedProcess(ctx, o.keyCodec, o.fn, &o.keyedTimers, &o.col, &o.pctx); err != nil {
		return err
	}
	if o.heap = o.core.TypedStore(); o.heap == nil {
		o.rh.runs = false
	} else {
		o.rh.start(o.heap.SlotBytes())
	}
	o.setHold() // a restored state may be large
	return nil
}

// UseRuns implements operator.RunEnder.
func (o *keyedProcessOp[K, T, U]) UseRuns() { o.rh.runs = true }

func (o *keyedProcessOp[K, T, U]) setHold() {
	o.rh.hold = o.rh.runs && o.heap.Entries() >= holdMinEntries
}

func (o *keyedProcessOp[K, T, U]) ProcessElement(v T, ts int64) {
	o.col.ctx.Enter()
	if o.rh.hold {
		if o.rh.add(v, ts, o.key(v)) {
			o.EndRun()
		}
		return
	}
	o.processElement(v, ts, o.key(v))
}

func (o *keyedProcessOp[K, T, U]) processElement(v T, ts int64, k K) {
	o.core.SetKey(k)
	o.col.ts, o.pctx.ts = ts, ts
	if err := o.fn.ProcessElement(&o.pctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}

// EndRun implements operator.RunEnder: it processes the elements held
// back, touching the places of their keys' entries first.
func (o *keyedProcessOp[K, T, U]) EndRun() {
	pend := o.rh.pend
	if len(pend) == 0 {
		return
	}
	o.col.ctx.Enter()
	lines := o.rh.lines[:0]
	for i := range pend {
		o.core.SetKey(pend[i].key)
		lines = o.heap.CurrentLines(lines)
	}
	o.rh.prefetch(lines)
	for i := range pend {
		p := &pend[i]
		o.processElement(p.v, p.ts, p.key)
	}
	o.rh.done()
}

// ProcessWatermark fires the event-time timers the watermark passed, then
// forwards the watermark: output caused by a watermark goes first.
func (o *keyedProcessOp[K, T, U]) ProcessWatermark(wm int64) {
	o.col.ctx.Enter()
	o.EndRun() // none are held: the reader ended the run before it
	o.advance(wm)
	o.col.out.ProcessWatermark(wm)
	if o.rh.runs {
		o.setHold()
	}
}

func (o *keyedProcessOp[K, T, U]) Finish() error {
	o.EndRun()
	if f, ok := o.fn.(Finisher[U]); ok {
		o.col.ts = NoTimestamp
		return f.Finish(&o.col)
	}
	return nil
}

func (o *keyedProcessOp[K, T, U]) Close() error { return closeFn(o.fn) }

// ProcessKeyed runs a keyed process function over a keyed stream: per-key
// state, and event-time and processing-time timers (handled if fn implements
// TimerFunction).
func ProcessKeyed[K comparable, T, U any](ks KeyedStream[K, T], fn KeyedProcessFunction[K, T, U]) DataStream[U] {
	checkHooks(ks.env, "ProcessKeyed", fn, keyedProcessHooks[K, U]())
	requireKeyCodec(ks, "ProcessKeyed")
	keyCodec, codecErr := ks.keyCodec, ks.codecErr
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		if keyCodec == nil {
			return operator.Instance{}, errNoKeyCodec(codecErr)
		}
		f := instanceOf(fn)
		op := &keyedProcessOp[K, T, U]{fnHooks: fnHooks{f}, fn: f, key: ks.key, keyCodec: keyCodec, col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}}
		return operator.Instance{Op: op, Keyed: true, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[U](ks.env, addNode[U](ks.env, "KeyedProcess", fac, false, ks.ends))
}

// KeyedProcessFunc adapts a function to KeyedProcessFunction.
type KeyedProcessFunc[K comparable, T, U any] func(ctx KeyedContext[K], v T, out Collector[U]) error

// ProcessElement implements KeyedProcessFunction.
func (f KeyedProcessFunc[K, T, U]) ProcessElement(ctx KeyedContext[K], v T, out Collector[U]) error {
	return f(ctx, v, out)
}

// MapWithState maps every element of a keyed stream with a function that
// open returns. open runs once per subtask before the first element (Flink's
// RichFunction.open): it declares the keyed state, and the function it
// returns uses the handles it captured, so each subtask has its own (a
// handle declared outside open would be shared by all subtasks). State
// handles read the current key.
func MapWithState[K comparable, T, U any](ks KeyedStream[K, T], open func(ctx KeyedRuntimeContext) (func(ctx KeyedContext[K], v T) (U, error), error)) DataStream[U] {
	if open == nil {
		ks.env.fail(errors.New("weir: MapWithState: open is nil; pass a function that declares the state and returns the map function"))
	}
	return ProcessKeyed[K, T, U](ks, &richAdapter[K, T, U]{open: func(ctx KeyedRuntimeContext) (func(KeyedContext[K], T, Collector[U]) error, error) {
		f, err := open(ctx)
		if err != nil || f == nil {
			return nil, err
		}
		return func(ctx KeyedContext[K], v T, out Collector[U]) error {
			u, err := f(ctx, v)
			if err == nil {
				out.Collect(u)
			}
			return err
		}, nil
	}}).Name("Map")
}

// FlatMapWithState calls, for every element of a keyed stream, the function
// that open returns, which may emit any number of elements; open runs once
// per subtask and declares the keyed state (see MapWithState).
func FlatMapWithState[K comparable, T, U any](ks KeyedStream[K, T], open func(ctx KeyedRuntimeContext) (func(ctx KeyedContext[K], v T, out Collector[U]) error, error)) DataStream[U] {
	if open == nil {
		ks.env.fail(errors.New("weir: FlatMapWithState: open is nil; pass a function that declares the state and returns the flat-map function"))
	}
	return ProcessKeyed[K, T, U](ks, &richAdapter[K, T, U]{open: open}).Name("FlatMap")
}

// richAdapter runs the function its open returned; ProcessKeyed gives each
// subtask its own copy of the struct, so fn is per subtask.
type richAdapter[K comparable, T, U any] struct {
	open func(KeyedRuntimeContext) (func(KeyedContext[K], T, Collector[U]) error, error)
	fn   func(KeyedContext[K], T, Collector[U]) error
}

func (r *richAdapter[K, T, U]) Open(ctx KeyedRuntimeContext) error {
	fn, err := r.open(ctx)
	if err != nil {
		return err
	}
	if fn == nil {
		return failure.Permanent(errors.New("weir: the open function of MapWithState or FlatMapWithState returned a nil function and no error; return the function that processes each element"))
	}
	r.fn = fn
	return nil
}

func (r *richAdapter[K, T, U]) ProcessElement(ctx KeyedContext[K], v T, out Collector[U]) error {
	return r.fn(ctx, v, out)
}

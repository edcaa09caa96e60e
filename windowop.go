package weir

import (
	"errors"
	"fmt"
	"github.com/weirhq/weir/failure"
	"math"
	"slices"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/internal/valuecopy"
	"github.com/weirhq/weir/internal/window"
	"github.com/weirhq/weir/state"
)

// WindowedStream is a keyed stream cut into windows (Flink's
// WindowedStream); a window function turns it back into a stream.
type WindowedStream[K comparable, T any] struct {
	ks       KeyedStream[K, T]
	assigner WindowAssigner
	lateness time.Duration
	lateTag  string
	trigger  Trigger[T] // nil: the assigner's default (event- or processing-time), run without the interface
	evictor  Evictor[T] // nil: none
}

// hasDefaultTrigger says whether w fires with its assigner's default time
// trigger and keeps no evictor: the window operator then runs its fast
// path (timers registered with a window's first element only, incremental
// contents). A custom trigger or an evictor needs the trigger path.
func (w WindowedStream[K, T]) hasDefaultTrigger() bool { return w.trigger == nil && w.evictor == nil }

// Window groups each key's elements into the windows a assigns.
func Window[K comparable, T any](ks KeyedStream[K, T], a WindowAssigner) WindowedStream[K, T] {
	if a == nil {
		ks.env.fail(errors.New("weir: Window needs a window assigner"))
	} else if v, ok := a.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			ks.env.fail(fmt.Errorf("weir: %w", err))
		}
	}
	ws := WindowedStream[K, T]{ks: ks, assigner: a}
	if isGlobal(a) {
		ws.trigger = NeverTrigger[T]() // the global window never ends: nothing fires it by time
	}
	return ws
}

// Trigger replaces the assigner's default trigger with t (Flink's
// WindowedStream.trigger). Merging assigners (sessions) need a trigger
// that can merge.
func (w WindowedStream[K, T]) Trigger(t Trigger[T]) WindowedStream[K, T] {
	if t == nil {
		w.ks.env.fail(errors.New("weir: Trigger(nil)"))
		return w
	}
	if _, merging := w.assigner.(MergingWindowAssigner); merging && !t.CanMerge() {
		w.ks.env.fail(fmt.Errorf("weir: trigger %s cannot merge windows (CanMerge is false) but the assigner %T merges them", describe(t), w.assigner))
	}
	w.trigger = t
	if w.assigner != nil {
		// The assigner's own default trigger keeps the fast path.
		_, ev := t.(eventTimeTrigger[T])
		_, pt := t.(processingTimeTrigger[T])
		if !isGlobal(w.assigner) && ((ev && w.assigner.IsEventTime()) || (pt && !w.assigner.IsEventTime())) {
			w.trigger = nil
		}
	}
	return w
}

// describe names a user's trigger or evictor in errors: its type, and
// what its String says.
func describe(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return fmt.Sprintf("%T (%s)", v, s)
	}
	return fmt.Sprintf("%T", v)
}

// Evictor removes elements from each window before and/or after the window
// function runs (Flink's WindowedStream.evictor). With an evictor the
// operator keeps every element with its timestamp, even for reduce and
// aggregate functions, and applies them when the window fires.
func (w WindowedStream[K, T]) Evictor(e Evictor[T]) WindowedStream[K, T] {
	if e == nil {
		w.ks.env.fail(errors.New("weir: Evictor(nil)"))
		return w
	}
	w.evictor = e
	return w
}

// AllowedLateness keeps each window's contents for d after the watermark
// passed its end: an element arriving in that time fires the window again
// with everything it holds (a late firing). Event-time windows only.
func (w WindowedStream[K, T]) AllowedLateness(d time.Duration) WindowedStream[K, T] {
	if d < 0 {
		w.ks.env.fail(fmt.Errorf("weir: allowed lateness %v is negative", d))
	}
	w.lateness = d
	return w
}

// SideOutputLateData sends elements that come too late for all their
// windows to the side output tag (read it with SideOutput on the window
// function's result) instead of dropping them.
func (w WindowedStream[K, T]) SideOutputLateData(tag OutputTag[T]) WindowedStream[K, T] {
	w.lateTag = tag.id
	return w
}

// WindowContext is what a process window function sees: the window being
// fired and its key. Timestamp is the window's max timestamp.
type WindowContext[K comparable] interface {
	Context
	Window() TimeWindow
	CurrentKey() K
	CurrentWatermark() int64
	CurrentProcessingTime() int64
}

// ProcessWindowFunction computes a window's results from its contents:
// every element (WindowProcess), or the one aggregate of an incremental
// function (WindowReduceProcess, WindowAggregateProcess).
type ProcessWindowFunction[K comparable, IN, OUT any] interface {
	Process(ctx WindowContext[K], elements []IN, out Collector[OUT]) error
}

// ProcessWindowFunc adapts a function to ProcessWindowFunction.
type ProcessWindowFunc[K comparable, IN, OUT any] func(ctx WindowContext[K], elements []IN, out Collector[OUT]) error

// Process implements ProcessWindowFunction.
func (f ProcessWindowFunc[K, IN, OUT]) Process(ctx WindowContext[K], elements []IN, out Collector[OUT]) error {
	return f(ctx, elements, out)
}

// AggregateFunction folds a window's elements into an accumulator, as
// Flink's AggregateFunction. Merge combines two accumulators: session
// windows merge theirs, and sliding windows combine the accumulators of
// their slices (in time order), so Merge must agree with Add. ACC needs a
// codec (derived from its type).
//
// Add may change the accumulator it was given in place and return it (a
// map used as a set, as a Flink user's HashSet), and Merge may change
// either argument and return it: the operator never hands them an
// accumulator a checkpoint is reading, or one it keeps for another window
// (see "Changing state in place" in package state).
type AggregateFunction[IN, ACC, OUT any] interface {
	CreateAccumulator() ACC
	Add(v IN, acc ACC) ACC
	GetResult(acc ACC) OUT
	Merge(a, b ACC) ACC
}

// emitter passes a fired window's contents to the window function.
type emitter[K comparable, R, U any] func(ctx WindowContext[K], r R, out Collector[U]) error

// WindowReduce combines each window's elements with reduce, incrementally:
// one value per key and window is kept. reduce may change a in place and
// return it (see AggregateFunction).
// It must be associative: sliding windows combine partial results of
// slices of the window (docs/windows.md, decision 29), in time order.
func WindowReduce[K comparable, T any](w WindowedStream[K, T], reduce func(a, b T) T) DataStream[T] {
	return windowOperator[K, T, T, T](w, "Window(Reduce)", evictable(w, reducer[T](reduce), reduceAll(reduce)), emitAsIs[K, T])
}

// WindowReduceProcess reduces incrementally, then passes each fired
// window's value to fn with the window's metadata.
func WindowReduceProcess[K comparable, T, U any](w WindowedStream[K, T], reduce func(a, b T) T, fn ProcessWindowFunction[K, T, U]) DataStream[U] {
	checkHooks(w.ks.env, "WindowReduceProcess", fn, windowHooks())
	return windowOperator[K, T, T, U](w, "Window(Reduce)", evictable(w, reducer[T](reduce), reduceAll(reduce)), emitOne(fn))
}

// WindowAggregate aggregates each window's elements incrementally with agg.
func WindowAggregate[K comparable, T, ACC, R any](w WindowedStream[K, T], agg AggregateFunction[T, ACC, R]) DataStream[R] {
	return windowOperator[K, T, R, R](w, "Window(Aggregate)", evictable(w, aggregator[T, ACC, R](agg), aggregateAll(agg)), emitAsIs[K, R])
}

// WindowAggregateProcess aggregates incrementally, then passes each fired
// window's result to fn with the window's metadata.
func WindowAggregateProcess[K comparable, T, ACC, R, U any](w WindowedStream[K, T], agg AggregateFunction[T, ACC, R], fn ProcessWindowFunction[K, R, U]) DataStream[U] {
	checkHooks(w.ks.env, "WindowAggregateProcess", fn, windowHooks())
	return windowOperator[K, T, R, U](w, "Window(Aggregate)", evictable(w, aggregator[T, ACC, R](agg), aggregateAll(agg)), emitOne(fn))
}

// WindowProcess keeps every element of each window and passes them all to
// fn when the window fires.
func WindowProcess[K comparable, T, U any](w WindowedStream[K, T], fn ProcessWindowFunction[K, T, U]) DataStream[U] {
	checkHooks(w.ks.env, "WindowProcess", fn, windowHooks())
	return windowOperator[K, T, []T, U](w, "Window(Process)", evictable(w, lister[T](), listAll[T]), func() (emitter[K, []T, U], any) {
		f := instanceOf(fn)
		return f.Process, f
	})
}

func lister[T any]() func() (windowContents[T, []T], error) {
	c, err := codec.For[T]()
	return func() (windowContents[T, []T], error) {
		if err != nil {
			return nil, fmt.Errorf("window contents need a codec for the element type: %w", err)
		}
		return &listContents[T]{codec: c}, nil
	}
}

func emitAsIs[K comparable, R any]() (emitter[K, R, R], any) {
	return func(_ WindowContext[K], r R, out Collector[R]) error { out.Collect(r); return nil }, nil
}

// emitOne hands a process window function the one incremental result.
func emitOne[K comparable, R, U any](fn ProcessWindowFunction[K, R, U]) func() (emitter[K, R, U], any) {
	return func() (emitter[K, R, U], any) {
		f := instanceOf(fn)
		buf := make([]R, 1)
		return func(ctx WindowContext[K], r R, out Collector[U]) error {
			buf[0] = r
			return f.Process(ctx, buf, out)
		}, f
	}
}

func reducer[T any](reduce func(a, b T) T) func() (windowContents[T, T], error) {
	c, err := codec.For[T]()
	return func() (windowContents[T, T], error) {
		if err != nil {
			return nil, fmt.Errorf("window contents need a codec for the element type: %w", err)
		}
		cp := valuecopy.Func(c) // nil: T cannot be changed in place
		return &valueContents[T, T, T]{codec: c, name: "window-reduce",
			addFn: func(acc T, ok bool, v T) T {
				if !ok {
					if cp != nil {
						// The element may go to other windows too, whose
						// reduce would change it in place.
						return cp(v)
					}
					return v
				}
				return reduce(acc, v)
			},
			mergeFn: ownedMerge(reduce, cp), resultFn: func(acc T) T { return acc }}, nil
	}
}

func aggregator[T, ACC, R any](agg AggregateFunction[T, ACC, R]) func() (windowContents[T, R], error) {
	c, err := codec.For[ACC]()
	return func() (windowContents[T, R], error) {
		if err != nil {
			return nil, fmt.Errorf("window contents need a codec for the accumulator type: %w", err)
		}
		return &valueContents[T, ACC, R]{codec: c, name: "window-aggregate",
			addFn: func(acc ACC, ok bool, v T) ACC {
				if !ok {
					acc = agg.CreateAccumulator()
				}
				return agg.Add(v, acc)
			},
			mergeFn: ownedMerge(agg.Merge, valuecopy.Func(c)), resultFn: agg.GetResult}, nil
	}
}

// ownedMerge is merge for accumulators the operator keeps: stored ones
// (which a snapshot may be reading) and those of a sliding window's
// cached slices (window.Stacks), which later merges read again. A user's
// Merge may change either argument in place, so for an accumulator type
// that can be changed in place (cp non-nil) it gets copies of both; a
// value type is copied by the call itself.
func ownedMerge[A any](merge func(a, b A) A, cp func(A) A) func(a, b A) A {
	if cp == nil {
		return merge
	}
	return func(a, b A) A { return merge(cp(a), cp(b)) }
}

// windowContents keeps a window's elements in keyed state under the
// current key and namespace (the window): folded into one accumulator, or
// as a list.
type windowContents[T, R any] interface {
	open(store state.KeyedStore)
	// add adds v; fresh is true when the window had no contents before (or
	// the kind of contents cannot tell cheaply).
	add(v T) (fresh bool)
	// get is what the window function gets; false when the window is empty.
	get() (R, bool)
	// take returns the current namespace's contents and clears them;
	// absorb adds such contents to the current namespace (session merges).
	take() (any, bool)
	absorb(raw any)
	clear()
}

type valueContents[T, ACC, R any] struct {
	codec codec.Codec[ACC]
	name  string
	st    state.ValueState[ACC]
	// tab is st's heap table when st is a plain heap value (no TTL): add
	// reads and updates it without two interface calls.
	tab      *typedstore.Table[ACC]
	addFn    func(acc ACC, ok bool, v T) ACC
	mergeFn  func(a, b ACC) ACC
	resultFn func(ACC) R
}

func (c *valueContents[T, ACC, R]) open(store state.KeyedStore) {
	c.st = state.GetValueState(store, state.ValueDescriptor[ACC]{Name: c.name, Codec: c.codec})
	if h, ok := c.st.(spi.DirectTable[ACC]); ok {
		c.tab = h.TypedTable()
	}
}

func (c *valueContents[T, ACC, R]) add(v T) bool {
	if t := c.tab; t != nil {
		// As st.Value then st.Update, on the table.
		if e := t.Lookup(); e != nil {
			e = t.Writable(e)
			e.Val = c.addFn(e.Val, true, v)
			return false
		}
		var zero ACC
		acc := c.addFn(zero, false, v)
		t.Insert().Val = acc
		return true
	}
	acc, ok := c.st.Value()
	c.st.Update(c.addFn(acc, ok, v))
	return !ok
}

func (c *valueContents[T, ACC, R]) get() (R, bool) {
	acc, ok := c.st.Value()
	if !ok {
		var zero R
		return zero, false
	}
	return c.resultFn(acc), true
}

func (c *valueContents[T, ACC, R]) take() (any, bool) {
	acc, ok := c.st.Value()
	if ok {
		c.st.Clear()
	}
	return acc, ok
}

func (c *valueContents[T, ACC, R]) absorb(raw any) {
	in := raw.(ACC)
	if acc, ok := c.st.Value(); ok {
		in = c.mergeFn(acc, in)
	}
	c.st.Update(in)
}

func (c *valueContents[T, ACC, R]) clear() { c.st.Clear() }

type listContents[T any] struct {
	codec codec.Codec[T]
	st    state.ListState[T]
}

func (c *listContents[T]) open(store state.KeyedStore) {
	c.st = state.GetListState(store, state.ListDescriptor[T]{Name: "window-contents", Codec: c.codec})
}

func (c *listContents[T]) add(v T) bool { c.st.Add(v); return true }

func (c *listContents[T]) get() ([]T, bool) {
	l := c.st.Get()
	return l, len(l) > 0
}

func (c *listContents[T]) take() (any, bool) {
	l := c.st.Get()
	if len(l) == 0 {
		return nil, false
	}
	c.st.Clear()
	return l, true
}

func (c *listContents[T]) absorb(raw any) { c.st.AddAll(raw.([]T)) }
func (c *listContents[T]) clear()         { c.st.Clear() }

// windowOperator declares the window operator of w with the given contents
// and window function.
func windowOperator[K comparable, T, R, U any](w WindowedStream[K, T], name string,
	contents func() (windowContents[T, R], error), emit func() (emitter[K, R, U], any)) DataStream[U] {
	ks := w.ks
	requireKeyCodec(ks, name)
	// The contents' codecs are derived now: a type without one is refused
	// at Execute, naming the operator, not by its tasks once they run.
	if _, err := contents(); err != nil {
		ks.env.fail(fmt.Errorf("weir: %s: %w", name, err))
	}
	keyCodec, codecErr := ks.keyCodec, ks.codecErr
	assigner, lateness, lateTag := w.assigner, w.lateness.Milliseconds(), w.lateTag
	_, merging := assigner.(MergingWindowAssigner)
	byElement, _ := assigner.(ElementWindowAssigner[T])
	if assigner != nil && !assigner.IsEventTime() {
		lateness = 0 // Flink ignores allowed lateness for processing time
	}
	trigger := w.trigger
	if trigger == nil && w.evictor != nil && assigner != nil {
		// An evictor keeps every element: the default trigger runs through
		// the trigger path, which handles contents that are not incremental.
		if assigner.IsEventTime() {
			trigger = EventTimeTrigger[T]()
		} else {
			trigger = ProcessingTimeTrigger[T]()
		}
	}
	evictor := w.evictor
	sliced := slicedEligible(w) // nil: not event-time tumbling or sliding windows (windowslice.go)
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		if keyCodec == nil {
			return operator.Instance{}, errNoKeyCodec(codecErr)
		}
		if assigner == nil {
			return operator.Instance{}, errors.New("no window assigner")
		}
		c, err := contents()
		if err != nil {
			return operator.Instance{}, failure.Permanent(err)
		}
		em, fn := emit()
		if inst, ok := slicedInstance(sliced, ctx, out, c, em, fn, ks.key, keyCodec, assigner.IsEventTime(), lateness, lateTag); ok {
			return inst, nil
		}
		op := &windowOp[K, T, R, U]{fnHooks: fnHooks{fn}, fn: fn, key: ks.key, keyCodec: keyCodec,
			assigner: assigner, byElement: byElement, eventTime: assigner.IsEventTime(), merging: merging,
			clockFree: isGlobal(assigner),
			lateness:  lateness, contents: c, emit: em,
			col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}}
		if trigger != nil {
			op.trigger = triggerInstance(trigger)
		}
		if ev, ok := c.(evictingHooks); ok && evictor != nil {
			op.evicting = ev
			ev.setEvictor(instanceOf(evictor), &op.wctx)
		}
		if lateTag != "" {
			op.late = sideInput[T](ctx, lateTag)
		}
		if sized, ok := assigner.(interface{ windowSize() int64 }); ok && !merging {
			op.size = sized.windowSize()
		}
		return operator.Instance{Op: op, Keyed: true, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[U](ks.env, addNode[U](ks.env, name, fac, false, ks.ends))
}

// windowOp is Flink's WindowOperator. Without a trigger field it runs the
// fast path with the default triggers inlined: the event-time trigger (fire
// when the watermark reaches the window's max timestamp; at once for an
// element of a window already past it) or the processing-time trigger.
// With one (a custom trigger, or any evictor) it runs the trigger path of
// windowtrigger.go (EvictingWindowOperator too, when evicting is set). See
// docs/windows.md (decisions 3, 16-18).
type windowOp[K comparable, T, R, U any] struct {
	fnHooks
	fn        any // the user's window function, for Open/Close hooks
	key       func(T) K
	keyCodec  codec.Codec[K]
	assigner  WindowAssigner
	byElement ElementWindowAssigner[T]
	eventTime bool
	merging   bool
	// clockFree: the assigner needs no processing time (GlobalWindows,
	// count windows): no clock read per element.
	clockFree bool
	lateness  int64
	contents  windowContents[T, R]
	sessions  state.ValueState[[]TimeWindow] // merging: the key's live windows
	// sessTab is sessions' heap table on the heap backend (the session
	// fast path reads and updates it directly); merged and raws are its
	// buffers for a merge of several sessions.
	sessTab *typedstore.Table[[]TimeWindow]
	// hot is what the session fast path knows of the current key on the
	// heap backend (windowsession.go).
	hot      sessionHot
	merged   []TimeWindow
	raws     []any
	emit     emitter[K, R, U]
	late     operator.Input[T] // nil: late elements are dropped
	dropped  *operator.Counter // numLateRecordsDropped: late elements without a late output
	trigger  Trigger[T]        // nil: the default time trigger, inlined (the fast path)
	evicting evictingHooks     // non-nil: contents are evicting (every element with its timestamp)
	tctx     triggerContext[K]
	saved    watermarkState
	size     int64 // > 0: windows have this size, namespaces hold only the start

	core *keyedruntime.Core[K]
	ctx  *operator.Context
	col  collector[U]
	wctx windowContext[K]
	wins []TimeWindow
	ns   []byte
	fire func(timers.Timer) // event-time timers
	// fireProc fires processing-time timers: the same as fire on the fast
	// path (its timers are all of the window's domain); a trigger needs to
	// know the domain.
	fireProc func(timers.Timer)
}

// openWindowCore opens the keyed core of a window operator (windowOp,
// slicedOp): restored processing-time timers armed, the restored watermark
// back, and its numLateRecordsDropped counter.
func openWindowCore[K comparable](ctx *operator.Context, keyCodec codec.Codec[K], saved *watermarkState) (*keyedruntime.Core[K], *operator.Counter, error) {
	core, err := keyedruntime.NewCore(ctx, keyCodec)
	if err != nil {
		return nil, nil, err
	}
	core.ArmProcessingTime() // restored timers
	if wm, ok := saved.open(ctx, "window-watermark"); ok {
		core.RestoreWatermark(wm)
	}
	return core, ctx.Counter("numLateRecordsDropped"), nil
}

func (o *windowOp[K, T, R, U]) Open(ctx *operator.Context) error {
	core, dropped, err := openWindowCore(ctx, o.keyCodec, &o.saved)
	if err != nil {
		return err
	}
	o.core, o.ctx, o.dropped = core, ctx, dropped
	o.contents.open(core.Store())
	if o.merging {
		c, err := codec.For[[]TimeWindow]()
		if err != nil {
			return err
		}
		o.sessions = state.GetValueState(core.Store(), state.ValueDescriptor[[]TimeWindow]{Name: "window-sessions", Codec: c})
		if h, ok := o.sessions.(spi.DirectTable[[]TimeWindow]); ok {
			o.sessTab = h.TypedTable()
			o.hot.store = o.sessTab.Store()
		}
	}
	o.wctx = windowContext[K]{runtimeContext: runtimeContext{ctx}, core: core}
	o.fire = o.onTimer
	if o.trigger != nil {
		o.tctx = triggerContext[K]{core: core, setWindow: o.setWindow}
		o.fire = func(tm timers.Timer) { o.onTriggerTimer(tm, true) }
		o.fireProc = func(tm timers.Timer) { o.onTriggerTimer(tm, false) }
	} else {
		o.fireProc = o.fire
	}
	return openFn(o.fn, keyedRuntimeContext{runtimeContext{ctx}, core.Store()})
}

func (o *windowOp[K, T, R, U]) Finish() error { return nil }

// SnapshotState implements operator.Snapshotter: the watermark goes into
// the checkpoint (see watermarkState), then the function's own hook runs.
func (o *windowOp[K, T, R, U]) SnapshotState(id int64) error {
	o.saved.save(o.core.CheckpointWatermark())
	return o.fnHooks.SnapshotState(id)
}
func (o *windowOp[K, T, R, U]) Close() error { return closeFn(o.fn) }

// setWindow makes w the namespace of state and timers.
func (o *windowOp[K, T, R, U]) setWindow(w TimeWindow) {
	o.core.SetNamespace(o.appendNamespace(w))
}

// setStateWindow makes w the namespace of state only; setTimerWindow of
// timers only.
func (o *windowOp[K, T, R, U]) setStateWindow(w TimeWindow) {
	o.core.SetStateNamespace(o.appendNamespace(w))
}

func (o *windowOp[K, T, R, U]) setTimerWindow(w TimeWindow) {
	o.core.SetTimerNamespace(o.appendNamespace(w))
}

// appendNamespace is w's namespace, in o.ns.
func (o *windowOp[K, T, R, U]) appendNamespace(w TimeWindow) []byte {
	if o.size > 0 {
		o.ns = window.AppendCompactNamespace(o.ns[:0], window.Window(w))
	} else {
		o.ns = window.AppendNamespace(o.ns[:0], window.Window(w))
	}
	return o.ns
}

func (o *windowOp[K, T, R, U]) parseWindow(ns []byte) (window.Window, error) {
	if o.size > 0 {
		return window.ParseNamespaceSized(ns, o.size)
	}
	return window.ParseNamespace(ns)
}

func (o *windowOp[K, T, R, U]) ProcessElement(v T, ts int64) {
	o.ctx.Enter()
	o.core.SetKey(o.key(v))
	var now int64
	if !o.eventTime {
		if !o.clockFree {
			now = o.ctx.Clock.NowMillis()
		}
	} else if ts == NoTimestamp {
		operator.Fail(errors.New("an element without a timestamp reached an event-time window: assign timestamps first (AssignTimestampsAndWatermarks)"))
	}
	if o.byElement != nil {
		o.wins = o.byElement.AssignElement(o.wins[:0], v, ts, now)
	} else {
		o.wins = o.assigner.AssignWindows(o.wins[:0], ts, now)
	}
	wm := o.core.CurrentWatermark()
	skipped := true
	for _, w := range o.wins {
		if o.merging && o.trigger == nil {
			// The session fast path (windowsession.go).
			if o.sessionElement(v, w, wm, now) {
				skipped = false
			}
			continue
		}
		if o.merging {
			var ok bool
			if w, ok = o.mergeSession(w, wm, now); !ok {
				continue
			}
		} else if o.isLate(w, wm) {
			continue
		}
		skipped = false
		o.setWindow(w)
		if o.trigger != nil {
			o.elementWithTrigger(v, ts, w)
			continue
		}
		fresh := o.contents.add(v)
		// A window's timers are registered with its first element: they
		// live as long as its contents (Flink registers them again for
		// every element; the timer service would only find them there).
		if fresh || o.merging {
			o.onElement(w, wm)
			o.registerCleanup(w)
		} else if o.eventTime && w.MaxTimestamp() <= wm {
			o.fireWindow(w) // a late firing
		}
	}
	// A late element goes to the late side output, if the job asked for
	// one; otherwise it is dropped and counted (Flink's numLateRecordsDropped).
	if o.late != nil && skipped && o.eventTime && window.IsElementLate(ts, o.lateness, wm) {
		o.late.ProcessElement(v, ts)
		o.ctx.Enter()
	} else if o.late == nil && skipped && o.eventTime && window.IsElementLate(ts, o.lateness, wm) {
		o.dropped.Inc()
	}
}

func (o *windowOp[K, T, R, U]) isLate(w TimeWindow, wm int64) bool {
	return o.eventTime && window.IsWindowLate(window.Window(w), o.lateness, wm)
}

// onElement is the default trigger's onElement: an event-time window whose
// end the watermark passed fires at once (a late firing); otherwise a
// timer fires it at its max timestamp.
func (o *windowOp[K, T, R, U]) onElement(w TimeWindow, wm int64) {
	switch {
	case !o.eventTime:
		o.core.RegisterProcessingTimeTimer(w.MaxTimestamp())
	case w.MaxTimestamp() <= wm:
		o.fireWindow(w)
	default:
		o.core.RegisterEventTimeTimer(w.MaxTimestamp())
	}
}

// registerCleanup registers the timer that clears the window's state:
// none for a window that ends at the end of time.
func (o *windowOp[K, T, R, U]) registerCleanup(w TimeWindow) {
	t := o.cleanupTime(w)
	if t == math.MaxInt64 {
		return
	}
	if o.eventTime {
		o.core.RegisterEventTimeTimer(t)
	} else {
		o.core.RegisterProcessingTimeTimer(t)
	}
}

func (o *windowOp[K, T, R, U]) deleteTimers(w TimeWindow) {
	t := window.CleanupTime(window.Window(w), o.lateness)
	if o.eventTime {
		o.core.DeleteEventTimeTimer(w.MaxTimestamp())
		if t != w.MaxTimestamp() { // without lateness, the same timer
			o.core.DeleteEventTimeTimer(t)
		}
	} else {
		o.core.DeleteProcessingTimeTimer(w.MaxTimestamp())
	}
}

// mergeSession adds w to the current key's sessions, merging the sessions
// it touches into one window whose state holds all of theirs. It returns
// the window the element goes to, or false when that window is late (the
// element is then skipped).
func (o *windowOp[K, T, R, U]) mergeSession(w TimeWindow, wm, now int64) (TimeWindow, bool) {
	o.core.SetNamespace(nil)
	cur, _ := o.sessions.Value()
	sessions, r, merged := window.MergeSession(cur, w)
	if len(merged) > 0 {
		if o.isLate(r, wm) {
			// Merging never moves a window's end back, so a merged window
			// is late only if a trigger failed to clean up: Flink fails too.
			operator.Fail(fmt.Errorf("window merging produced the late window %v at watermark %d", r, wm))
		}
		var raws []any
		for _, m := range merged {
			o.setWindow(m)
			if o.trigger == nil {
				o.deleteTimers(m)
			}
			if raw, ok := o.contents.take(); ok {
				raws = append(raws, raw)
			}
		}
		o.setWindow(r)
		for _, raw := range raws {
			o.contents.absorb(raw)
		}
		if o.trigger != nil {
			o.mergeTrigger(r, merged)
		} else if o.eventTime && r.MaxTimestamp() > wm { // the default trigger's onMerge: a timer for the merged window's end
			o.core.RegisterEventTimeTimer(r.MaxTimestamp())
		} else if !o.eventTime && r.MaxTimestamp() > now {
			o.core.RegisterProcessingTimeTimer(r.MaxTimestamp())
		}
	} else if r != w {
		return r, true // w fell inside an existing session: the list is unchanged
	} else if o.isLate(r, wm) {
		return r, false // a new, lone late window: never stored (Flink retires it)
	}
	o.core.SetNamespace(nil)
	o.sessions.Update(sessions)
	return r, true
}

// fireWindow emits the contents of window w of the current key.
func (o *windowOp[K, T, R, U]) fireWindow(w TimeWindow) {
	if o.evicting != nil {
		o.evicting.firing(w)
		defer o.evicting.fired() // evictAfter, and the kept elements written back
	}
	r, ok := o.contents.get()
	if !ok {
		return
	}
	ts := w.MaxTimestamp()
	o.col.ts = ts
	o.wctx.window, o.wctx.ts = w, ts
	if err := o.emit(&o.wctx, r, &o.col); err != nil {
		operator.Fail(err)
	}
	o.ctx.Enter()
}

// timerWindow makes a timer's key current and returns the window its
// namespace names and, for sessions, the key's live sessions; false for a
// timer of a session merged away (its timers were deleted, or Clear should
// have deleted them; a restored one may remain).
func (o *windowOp[K, T, R, U]) timerWindow(tm timers.Timer) (w TimeWindow, sessions []TimeWindow, ok bool) {
	o.core.SetKeyBytes(tm.Key)
	ww, err := o.parseWindow(tm.Namespace)
	if err != nil {
		operator.Fail(fmt.Errorf("a window timer: %w", err))
	}
	w = TimeWindow(ww)
	if !o.merging {
		return w, nil, true
	}
	o.core.SetNamespace(nil)
	sessions, _ = o.sessions.Value()
	return w, sessions, slices.Contains(sessions, w)
}

// onTimer fires or cleans up the window a timer's namespace names.
func (o *windowOp[K, T, R, U]) onTimer(tm timers.Timer) {
	w, sessions, ok := o.timerWindow(tm)
	if !ok {
		return
	}
	if o.merging {
		sw, _ := sessionState(sessions, w)
		o.setWindow(sw) // the contents' namespace (timers are in w's)
	} else {
		o.setWindow(w)
	}
	if tm.Timestamp == w.MaxTimestamp() {
		o.fireWindow(w)
	}
	if tm.Timestamp == window.CleanupTime(window.Window(w), o.lateness) {
		o.contents.clear()
		if o.merging {
			o.retireSession(w, sessions)
		}
	}
}

// retireSession removes the cleaned-up window w from the key's sessions.
func (o *windowOp[K, T, R, U]) retireSession(w TimeWindow, sessions []TimeWindow) {
	o.core.SetNamespace(nil)
	// A new slice: the one Value returned may be the stored value,
	// which a snapshot being written still reads.
	rest := make([]TimeWindow, 0, len(sessions))
	for i := 0; i < len(sessions); i++ {
		if s := sessions[i]; s != w {
			rest = append(rest, s)
		} else if i+1 < len(sessions) && isStateMarker(sessions[i+1]) {
			i++ // w's state marker goes with it
		}
	}
	if len(rest) == 0 {
		o.sessions.Clear()
	} else {
		o.sessions.Update(rest)
	}
}

// ProcessWatermark fires the windows the watermark passed, then forwards it.
// A watermark at or below the restored one is not forwarded again.
func (o *windowOp[K, T, R, U]) ProcessWatermark(wm int64) {
	o.ctx.Enter()
	if wm <= o.core.CurrentWatermark() {
		return
	}
	o.core.AdvanceWatermark(wm, o.fire)
	o.col.out.ProcessWatermark(wm)
}

// OnProcessingTime implements operator.ProcessingTimer.
func (o *windowOp[K, T, R, U]) OnProcessingTime(now int64) {
	o.ctx.Enter()
	o.core.FireProcessingTime(now, o.fireProc)
}

// windowContext implements WindowContext.
type windowContext[K comparable] struct {
	runtimeContext
	core   *keyedruntime.Core[K]
	window TimeWindow
	ts     int64
}

func (c *windowContext[K]) Timestamp() int64             { return c.ts }
func (c *windowContext[K]) Window() TimeWindow           { return c.window }
func (c *windowContext[K]) CurrentKey() K                { return c.core.Current() }
func (c *windowContext[K]) CurrentWatermark() int64      { return c.core.CurrentWatermark() }
func (c *windowContext[K]) CurrentProcessingTime() int64 { return c.core.CurrentProcessingTime() }

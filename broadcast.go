package weir

import (
	"fmt"
	"reflect"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/state"
)

// BroadcastStream is a stream whose every element reaches every subtask of
// the operator it is connected to; see ConnectBroadcast.
type BroadcastStream[B any] struct {
	env  *Environment
	ends []end
}

// BroadcastTo turns a stream into a broadcast stream for ConnectBroadcast
// (Flink's stream.broadcast(descriptor)).
func BroadcastTo[B any](s DataStream[B]) BroadcastStream[B] {
	return BroadcastStream[B]{env: s.env, ends: s.Broadcast().ends}
}

// BroadcastContext is the context of a broadcast element, the only place
// where broadcast state may be written (state.GetBroadcastState). Broadcast
// state written here must be written the same way on every subtask: it is
// replicated, not shared, so the writes may depend only on the broadcast
// elements and the broadcast state.
type BroadcastContext interface {
	Context
	// Broadcast is the operator's store of broadcast (and operator) state.
	Broadcast() *state.OperatorStore
}

// KeyedBroadcastSideContext is the context of a broadcast element of a
// keyed broadcast function (Flink's KeyedBroadcastProcessFunction.Context):
// a BroadcastContext from which ApplyToKeyedState reaches the keyed state
// of every key of the subtask.
type KeyedBroadcastSideContext[K comparable] interface {
	BroadcastContext
	keyedSide() *keyedBroadcastSideContext[K]
}

// ReadOnlyBroadcastContext is the context of an element of a non-keyed
// stream connected to a broadcast stream (Flink's
// BroadcastProcessFunction.ReadOnlyContext): the broadcast state can only
// be read (state.GetReadOnlyBroadcastState).
type ReadOnlyBroadcastContext interface {
	Context
	Broadcast() state.ReadOnlyBroadcastStore
}

// KeyedBroadcastContext is the context of a keyed element of a connected
// stream (Flink's KeyedBroadcastProcessFunction.ReadOnlyContext): keyed
// state and timers for the current key, and the broadcast state, which
// this side can only read (state.GetReadOnlyBroadcastState).
type KeyedBroadcastContext[K comparable] interface {
	KeyedContext[K]
	Broadcast() state.ReadOnlyBroadcastStore
}

// KeyedBroadcastOnTimerContext is the context of a timer of a keyed
// broadcast function: the timer's key, state and time domain, and the
// broadcast state, read-only.
type KeyedBroadcastOnTimerContext[K comparable] interface {
	OnTimerContext[K]
	Broadcast() state.ReadOnlyBroadcastStore
}

// KeyedBroadcastProcessFunction processes a keyed stream connected to a
// broadcast stream (Flink's broadcast state pattern): rules or configuration
// arrive on the broadcast side and are kept in broadcast state; events
// arrive keyed and are checked against them.
//
// Broadcast state is written only by ProcessBroadcastElement. A write from
// anywhere else (ProcessElement, OnTimer, Open, through any handle) fails
// the job at once, naming the function: each subtask keeps its own copy,
// and a write from the keyed side would change one copy only.
type KeyedBroadcastProcessFunction[K comparable, T, B, U any] interface {
	ProcessElement(ctx KeyedBroadcastContext[K], v T, out Collector[U]) error
	ProcessBroadcastElement(ctx KeyedBroadcastSideContext[K], b B, out Collector[U]) error
}

// KeyedBroadcastTimerFunction is implemented by keyed broadcast functions
// that handle timers and read broadcast state when they fire (Flink's
// KeyedBroadcastProcessFunction.onTimer). A keyed broadcast function may
// implement TimerFunction[K, U] instead; its context then also implements
// KeyedBroadcastOnTimerContext[K].
type KeyedBroadcastTimerFunction[K comparable, U any] interface {
	OnTimer(ctx KeyedBroadcastOnTimerContext[K], ts int64, out Collector[U]) error
}

// BroadcastProcessFunction processes a non-keyed stream connected to a
// broadcast stream (Flink's BroadcastProcessFunction). As with
// KeyedBroadcastProcessFunction, only ProcessBroadcastElement may write
// broadcast state.
type BroadcastProcessFunction[T, B, U any] interface {
	ProcessElement(ctx ReadOnlyBroadcastContext, v T, out Collector[U]) error
	ProcessBroadcastElement(ctx BroadcastContext, b B, out Collector[U]) error
}

// ApplyToKeyedState calls fn for every key of this subtask that has the
// keyed state d describes, with that key current and the state's handle
// (Flink's KeyedBroadcastProcessFunction.Context.applyToKeyedState): to
// update or clear every key's state when a rule changes, say. fn may read,
// update and clear the state; keys it adds may or may not be visited.
// Call it from ProcessBroadcastElement with its context; it works on
// either state backend. The first error of fn stops it and is returned.
// (A function rather than a method of the context: Go methods have no
// type parameters of their own.)
func ApplyToKeyedState[K comparable, S any](ctx KeyedBroadcastSideContext[K], d state.KeyedDescriptor[S], fn func(key K, s S) error) error {
	c := ctx.keyedSide()
	if !c.active {
		return fmt.Errorf("ApplyToKeyedState of keyed state %q called outside ProcessBroadcastElement of %s: "+
			"call it from ProcessBroadcastElement, with the context it gets", d.StateName(), c.fnName)
	}
	s := d.State(c.store)
	return c.core.ForEachKey(d.StateName(), func(k K) error { return fn(k, s) })
}

// ConnectBroadcast connects a keyed stream with a broadcast stream. If fn
// implements KeyedBroadcastTimerFunction[K, U] (or TimerFunction[K, U]), it
// handles the keyed side's timers.
func ConnectBroadcast[K comparable, T, B, U any](ks KeyedStream[K, T], bs BroadcastStream[B], fn KeyedBroadcastProcessFunction[K, T, B, U]) DataStream[U] {
	checkHooks(ks.env, "ConnectBroadcast", fn, append(keyedProcessHooks[K, U](), reflect.TypeFor[KeyedBroadcastTimerFunction[K, U]]()))
	requireKeyCodec(ks, "ConnectBroadcast")
	keyCodec, codecErr := ks.keyCodec, ks.codecErr
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		if keyCodec == nil {
			return operator.Instance{}, errNoKeyCodec(codecErr)
		}
		f := instanceOf(fn)
		op := &broadcastOp[K, T, B, U]{fnHooks: fnHooks{f}, fn: f, key: ks.key, keyCodec: keyCodec,
			col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}, wm: newTwoWatermarks()}
		return operator.Instance{Op: op, Keyed: true, Inputs: []any{operator.Input[T](keyedSide[K, T, B, U]{op}), operator.Input[B](broadcastSide[K, T, B, U]{op})}}, nil
	})
	n := addNode[U](ks.env, "Co-Process-Broadcast-Keyed", fac, false, ks.ends, bs.ends)
	broadcastSecond(n)
	return newStream[U](ks.env, n)
}

// ConnectBroadcastNonKeyed connects a (non-keyed) stream with a broadcast
// stream: fn sees each element of s with the broadcast state, read-only.
func ConnectBroadcastNonKeyed[T, B, U any](s DataStream[T], bs BroadcastStream[B], fn BroadcastProcessFunction[T, B, U]) DataStream[U] {
	checkHooks(s.env, "ConnectBroadcastNonKeyed", fn, processHooks[U]())
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		f := instanceOf(fn)
		op := &broadcastNonKeyedOp[T, B, U]{fnHooks: fnHooks{f}, fn: f, col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}, wm: newTwoWatermarks()}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](nonKeyedSide[T, B, U]{op}), operator.Input[B](nonKeyedBroadcastSide[T, B, U]{op})}}, nil
	})
	n := addNode[U](s.env, "Co-Process-Broadcast", fac, false, s.ends, bs.ends)
	broadcastSecond(n)
	return newStream[U](s.env, n)
}

// broadcastSecond makes the second input of n a broadcast.
func broadcastSecond(n *graph.Node) {
	for i := range n.Inputs {
		if n.Inputs[i].Input == 1 {
			n.Inputs[i].Partition = graph.Broadcast
		}
	}
}

// broadcastGuard switches an operator's broadcast state between writable
// (while a broadcast element is processed) and read-only (everywhere else,
// naming where the code runs for the error of a write).
type broadcastGuard struct {
	ops                    *state.OperatorStore
	fnName                 string
	outside, element, time string
}

func (g *broadcastGuard) init(ctx *operator.Context, fn any) {
	g.ops = ctx.OperatorState()
	g.fnName = fmt.Sprintf("%T (operator %q)", fn, ctx.OperatorName)
	g.outside = "outside ProcessBroadcastElement of " + g.fnName
	g.element = "ProcessElement of " + g.fnName
	g.time = "OnTimer of " + g.fnName
	g.ops.SetBroadcastReadOnly(g.outside)
}

// enter makes the broadcast state writable ("") or read-only from where;
// leave makes it read-only from outside.
func (g *broadcastGuard) enter(where string) { g.ops.SetBroadcastReadOnly(where) }
func (g *broadcastGuard) leave()             { g.ops.SetBroadcastReadOnly(g.outside) }

type broadcastOp[K comparable, T, B, U any] struct {
	keyedTimers[K, U]
	fnHooks
	guard    broadcastGuard
	fn       KeyedBroadcastProcessFunction[K, T, B, U]
	key      func(T) K
	keyCodec codec.Codec[K]
	col      collector[U]
	kctx     keyedBroadcastContext[K]
	bctx     keyedBroadcastSideContext[K]
	wm       twoWatermarks
}

// keyedBroadcastContext implements KeyedBroadcastContext and
// KeyedBroadcastOnTimerContext.
type keyedBroadcastContext[K comparable] struct {
	keyedProcessContext[K]
	ro state.ReadOnlyBroadcastStore
}

func (c *keyedBroadcastContext[K]) Broadcast() state.ReadOnlyBroadcastStore { return c.ro }

type broadcastContext struct {
	runtimeContext
	ops *state.OperatorStore
	ts  int64
}

func (c *broadcastContext) Timestamp() int64                { return c.ts }
func (c *broadcastContext) Broadcast() *state.OperatorStore { return c.ops }

// keyedBroadcastSideContext implements KeyedBroadcastSideContext; active
// while ProcessBroadcastElement runs.
type keyedBroadcastSideContext[K comparable] struct {
	broadcastContext
	core   *keyedruntime.Core[K]
	store  state.KeyedStore
	fnName string
	active bool
}

func (c *keyedBroadcastSideContext[K]) keyedSide() *keyedBroadcastSideContext[K] { return c }

// readOnlyContext implements ReadOnlyBroadcastContext.
type readOnlyContext struct {
	processContext
	ro state.ReadOnlyBroadcastStore
}

func (c *readOnlyContext) Broadcast() state.ReadOnlyBroadcastStore { return c.ro }

func (o *broadcastOp[K, T, B, U]) Open(ctx *operator.Context) error {
	core, err := keyedruntime.NewCore(ctx, o.keyCodec)
	if err != nil {
		return err
	}
	core.ArmProcessingTime() // restored timers
	o.guard.init(ctx, o.fn)
	rc := runtimeContext{ctx}
	krc := keyedRuntimeContext{rc, core.Store()}
	o.kctx = keyedBroadcastContext[K]{keyedProcessContext: keyedProcessContext[K]{keyedRuntimeContext: krc, core: core}, ro: o.guard.ops.ReadOnly()}
	o.bctx = keyedBroadcastSideContext[K]{broadcastContext: broadcastContext{runtimeContext: rc, ops: o.guard.ops},
		core: core, store: core.Store(), fnName: o.guard.fnName}
	var onTimer any
	if _, ok := o.fn.(KeyedBroadcastTimerFunction[K, U]); ok {
		onTimer = broadcastTimers[K, T, B, U]{o}
	} else if _, ok := o.fn.(TimerFunction[K, U]); ok {
		onTimer = broadcastTimers[K, T, B, U]{o}
	}
	o.keyedTimers.init(core, onTimer, &o.col, &o.kctx.keyedProcessContext)
	return openFn(o.fn, krc)
}

// broadcastTimers hands the keyed broadcast function's timers its
// KeyedBroadcastOnTimerContext, with the broadcast state read-only.
type broadcastTimers[K comparable, T, B, U any] struct{ o *broadcastOp[K, T, B, U] }

func (b broadcastTimers[K, T, B, U]) OnTimer(_ OnTimerContext[K], ts int64, out Collector[U]) error {
	o := b.o
	o.guard.enter(o.guard.time)
	defer o.guard.leave()
	if f, ok := o.fn.(KeyedBroadcastTimerFunction[K, U]); ok {
		return f.OnTimer(&o.kctx, ts, out)
	}
	return o.fn.(TimerFunction[K, U]).OnTimer(&o.kctx, ts, out)
}

// keyedSide and broadcastSide are the operator's two inputs.
type keyedSide[K comparable, T, B, U any] struct{ o *broadcastOp[K, T, B, U] }

func (s keyedSide[K, T, B, U]) ProcessElement(v T, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.core.SetKey(o.key(v))
	o.col.ts, o.kctx.ts = ts, ts
	o.guard.enter(o.guard.element)
	err := o.fn.ProcessElement(&o.kctx, v, &o.col)
	o.guard.leave()
	if err != nil {
		operator.Fail(err)
	}
}

func (s keyedSide[K, T, B, U]) ProcessWatermark(wm int64) { s.o.watermark(0, wm) }

type broadcastSide[K comparable, T, B, U any] struct{ o *broadcastOp[K, T, B, U] }

func (s broadcastSide[K, T, B, U]) ProcessElement(v B, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.col.ts, o.bctx.ts = ts, ts
	o.guard.enter("")
	o.bctx.active = true
	err := o.fn.ProcessBroadcastElement(&o.bctx, v, &o.col)
	o.bctx.active = false
	o.guard.leave()
	if err != nil {
		operator.Fail(err)
	}
}

func (s broadcastSide[K, T, B, U]) ProcessWatermark(wm int64) { s.o.watermark(1, wm) }

// watermark combines the two inputs' watermarks (twoWatermarks: the
// minimum over the inputs that are not idle), fires the keyed side's
// event-time timers and forwards the combined watermark.
func (o *broadcastOp[K, T, B, U]) watermark(input int, wm int64) {
	o.col.ctx.Enter()
	if o.wm.update(input, wm) {
		o.advance(o.wm.wm)
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

// ProcessInputStatus implements operator.InputStatusReceiver: a quiet
// broadcast side (rules that rarely change) marked idle no longer holds
// back the keyed side's timers.
func (o *broadcastOp[K, T, B, U]) ProcessInputStatus(input int, idle bool) {
	o.col.ctx.Enter()
	if o.wm.setIdle(input, idle) {
		o.advance(o.wm.wm)
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

func (o *broadcastOp[K, T, B, U]) Finish() error { return finishFn[U](o.fn, &o.col) }

func (o *broadcastOp[K, T, B, U]) Close() error { return closeFn(o.fn) }

// finishFn runs fn's Finish, if it is a Finisher.
func finishFn[U any](fn any, col *collector[U]) error {
	if f, ok := fn.(Finisher[U]); ok {
		col.ts = NoTimestamp
		return f.Finish(col)
	}
	return nil
}

// broadcastNonKeyedOp runs a BroadcastProcessFunction.
type broadcastNonKeyedOp[T, B, U any] struct {
	fnHooks
	guard broadcastGuard
	fn    BroadcastProcessFunction[T, B, U]
	col   collector[U]
	ectx  readOnlyContext
	bctx  broadcastContext
	wm    twoWatermarks
}

func (o *broadcastNonKeyedOp[T, B, U]) Open(ctx *operator.Context) error {
	o.guard.init(ctx, o.fn)
	rc := runtimeContext{ctx}
	o.ectx = readOnlyContext{processContext: processContext{runtimeContext: rc}, ro: o.guard.ops.ReadOnly()}
	o.bctx = broadcastContext{runtimeContext: rc, ops: o.guard.ops}
	if op, ok := o.fn.(Opener); ok {
		return op.Open(rc)
	}
	return nil
}

func (o *broadcastNonKeyedOp[T, B, U]) watermark(input int, wm int64) {
	o.col.ctx.Enter()
	if o.wm.update(input, wm) {
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

// ProcessInputStatus implements operator.InputStatusReceiver.
func (o *broadcastNonKeyedOp[T, B, U]) ProcessInputStatus(input int, idle bool) {
	o.col.ctx.Enter()
	if o.wm.setIdle(input, idle) {
		o.col.out.ProcessWatermark(o.wm.wm)
	}
}

func (o *broadcastNonKeyedOp[T, B, U]) Finish() error { return finishFn[U](o.fn, &o.col) }

func (o *broadcastNonKeyedOp[T, B, U]) Close() error { return closeFn(o.fn) }

type nonKeyedSide[T, B, U any] struct{ o *broadcastNonKeyedOp[T, B, U] }

func (s nonKeyedSide[T, B, U]) ProcessElement(v T, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.col.ts, o.ectx.ts = ts, ts
	o.guard.enter(o.guard.element)
	err := o.fn.ProcessElement(&o.ectx, v, &o.col)
	o.guard.leave()
	if err != nil {
		operator.Fail(err)
	}
}

func (s nonKeyedSide[T, B, U]) ProcessWatermark(wm int64) { s.o.watermark(0, wm) }

type nonKeyedBroadcastSide[T, B, U any] struct{ o *broadcastNonKeyedOp[T, B, U] }

func (s nonKeyedBroadcastSide[T, B, U]) ProcessElement(v B, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.col.ts, o.bctx.ts = ts, ts
	o.guard.enter("")
	err := o.fn.ProcessBroadcastElement(&o.bctx, v, &o.col)
	o.guard.leave()
	if err != nil {
		operator.Fail(err)
	}
}

func (s nonKeyedBroadcastSide[T, B, U]) ProcessWatermark(wm int64) { s.o.watermark(1, wm) }

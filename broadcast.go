package weir

import (
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/keyed"
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

// BroadcastContext is the context of a broadcast element. Broadcast state
// written here must be written the same way on every subtask: it is
// replicated, not shared.
type BroadcastContext interface {
	Context
	// Broadcast is the operator's store of broadcast (and operator) state.
	Broadcast() *state.OperatorStore
}

// KeyedBroadcastContext is the context of a keyed element of a connected
// stream: keyed state and timers for the current key, and the broadcast
// state, which this side may only read.
type KeyedBroadcastContext[K comparable] interface {
	KeyedContext[K]
	Broadcast() *state.OperatorStore
}

// KeyedBroadcastProcessFunction processes a keyed stream connected to a
// broadcast stream (Flink's broadcast state pattern): rules or configuration
// arrive on the broadcast side and are kept in broadcast state; events
// arrive keyed and are checked against them.
type KeyedBroadcastProcessFunction[K comparable, T, B, U any] interface {
	ProcessElement(ctx KeyedBroadcastContext[K], v T, out Collector[U]) error
	ProcessBroadcastElement(ctx BroadcastContext, b B, out Collector[U]) error
}

// ConnectBroadcast connects a keyed stream with a broadcast stream. If fn
// implements TimerFunction[K, U], it handles the keyed side's timers.
func ConnectBroadcast[K comparable, T, B, U any](ks KeyedStream[K, T], bs BroadcastStream[B], fn KeyedBroadcastProcessFunction[K, T, B, U]) DataStream[U] {
	keyCodec, codecErr := ks.keyCodec, ks.codecErr
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		if keyCodec == nil {
			return operator.Instance{}, errNoKeyCodec(codecErr)
		}
		op := &broadcastOp[K, T, B, U]{fn: instanceOf(fn), key: ks.key, keyCodec: keyCodec,
			col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}, wm: newTwoWatermarks()}
		return operator.Instance{Op: op, Keyed: true, Inputs: []any{operator.Input[T](keyedSide[K, T, B, U]{op}), operator.Input[B](broadcastSide[K, T, B, U]{op})}}, nil
	})
	n := addNode[U](ks.env, "Co-Process-Broadcast-Keyed", fac, false, ks.ends, bs.ends)
	for i := range n.Inputs {
		if n.Inputs[i].Input == 1 {
			n.Inputs[i].Partition = graph.Broadcast
		}
	}
	return newStream[U](ks.env, n)
}

type broadcastOp[K comparable, T, B, U any] struct {
	keyedTimers[K, U]
	fn       KeyedBroadcastProcessFunction[K, T, B, U]
	key      func(T) K
	keyCodec codec.Codec[K]
	ops      *state.OperatorStore
	col      collector[U]
	kctx     keyedBroadcastContext[K]
	bctx     broadcastContext
	wm       twoWatermarks
}

type keyedBroadcastContext[K comparable] struct {
	keyedProcessContext[K]
	ops *state.OperatorStore
}

func (c *keyedBroadcastContext[K]) Broadcast() *state.OperatorStore { return c.ops }

type broadcastContext struct {
	runtimeContext
	ops *state.OperatorStore
	ts  int64
}

func (c *broadcastContext) Timestamp() int64                { return c.ts }
func (c *broadcastContext) Broadcast() *state.OperatorStore { return c.ops }

func (o *broadcastOp[K, T, B, U]) Open(ctx *operator.Context) error {
	core, err := keyed.NewCore(ctx, o.keyCodec)
	if err != nil {
		return err
	}
	core.ArmProcessingTime() // restored timers
	o.ops = ctx.OperatorState()
	rc := runtimeContext{ctx}
	o.kctx = keyedBroadcastContext[K]{keyedProcessContext: keyedProcessContext[K]{keyedRuntimeContext: keyedRuntimeContext{rc, core.Store()}, core: core}, ops: o.ops}
	o.bctx = broadcastContext{runtimeContext: rc, ops: o.ops}
	o.keyedTimers.init(core, o.fn, &o.col, &o.kctx.keyedProcessContext)
	if op, ok := o.fn.(KeyedOpener); ok {
		return op.Open(o.kctx.keyedRuntimeContext)
	}
	return nil
}

// keyedSide and broadcastSide are the operator's two inputs.
type keyedSide[K comparable, T, B, U any] struct{ o *broadcastOp[K, T, B, U] }

func (s keyedSide[K, T, B, U]) ProcessElement(v T, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.core.SetKey(o.key(v))
	o.col.ts, o.kctx.ts = ts, ts
	if err := o.fn.ProcessElement(&o.kctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}

func (s keyedSide[K, T, B, U]) ProcessWatermark(wm int64) { s.o.watermark(0, wm) }

type broadcastSide[K comparable, T, B, U any] struct{ o *broadcastOp[K, T, B, U] }

func (s broadcastSide[K, T, B, U]) ProcessElement(v B, ts int64) {
	o := s.o
	o.col.ctx.Enter()
	o.col.ts, o.bctx.ts = ts, ts
	if err := o.fn.ProcessBroadcastElement(&o.bctx, v, &o.col); err != nil {
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

func (o *broadcastOp[K, T, B, U]) Finish() error { return nil }

func (o *broadcastOp[K, T, B, U]) Close() error { return closeFn(o.fn) }

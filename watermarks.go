package weir

import (
	"math"
	"time"

	"github.com/weirhq/weir/internal/operator"
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
	// Interval is how often watermarks are emitted (default 200ms, Flink's
	// pipeline.auto-watermark-interval).
	Interval time.Duration
}

// AssignTimestampsAndWatermarks sets each element's timestamp and emits
// watermarks per the strategy. Watermarks from upstream are dropped, except
// the final one that ends the input.
func AssignTimestampsAndWatermarks[T any](s DataStream[T], ws WatermarkStrategy[T]) DataStream[T] {
	interval := ws.Interval
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		op := &watermarkOp[T]{ts: ws.Timestamp, delay: ws.MaxOutOfOrderness.Milliseconds(), interval: interval.Milliseconds(),
			out: out.(operator.Input[T]), ctx: ctx, max: math.MinInt64, emitted: math.MinInt64}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[T](s.env, addNode[T](s.env, "Timestamps/Watermarks", fac, false, s.ends))
}

type watermarkOp[T any] struct {
	noLifecycle
	ts              func(T) int64
	delay, interval int64
	out             operator.Input[T]
	ctx             *operator.Context
	max, emitted    int64
}

func (o *watermarkOp[T]) Open(ctx *operator.Context) error {
	ctx.WakeAt(ctx.Clock.NowMillis() + o.interval)
	return nil
}

func (o *watermarkOp[T]) ProcessElement(v T, _ int64) {
	o.ctx.Enter()
	ts := o.ts(v)
	if ts > o.max {
		o.max = ts
	}
	o.out.ProcessElement(v, ts)
}

func (o *watermarkOp[T]) ProcessWatermark(wm int64) {
	if wm == math.MaxInt64 && o.emitted != wm {
		o.emitted = wm
		o.out.ProcessWatermark(wm)
	}
}

func (o *watermarkOp[T]) OnProcessingTime(now int64) {
	// max - delay - 1 without wrapping below math.MinInt64: the distance of
	// max from the minimum, in uint64, must exceed delay.
	if uint64(o.max)-(1<<63) > uint64(o.delay) {
		if wm := o.max - o.delay - 1; wm > o.emitted {
			o.emitted = wm
			o.out.ProcessWatermark(wm)
		}
	}
	o.ctx.WakeAt(now + o.interval)
}

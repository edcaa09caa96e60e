package weir

import (
	"fmt"
	"math"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/state"
)

// IntervalJoinBuilder is the first step of an interval join (Flink's
// KeyedStream.intervalJoin): give the bounds with Between.
type IntervalJoinBuilder[K comparable, A, B any] struct {
	c KeyedConnectedStreams[K, A, B]
}

// IntervalJoin joins two keyed streams in event time: each left element at
// time t meets the right elements with the same key and a timestamp in
// [t+lower, t+upper] (see Between).
func IntervalJoin[K comparable, A, B any](left KeyedStream[K, A], right KeyedStream[K, B]) IntervalJoinBuilder[K, A, B] {
	return IntervalJoinBuilder[K, A, B]{c: ConnectKeyed(left, right)}
}

// Between sets the bounds, inclusive unless made exclusive; lower may be
// negative. A lower above upper fails the job.
func (b IntervalJoinBuilder[K, A, B]) Between(lower, upper time.Duration) IntervalJoined[K, A, B] {
	if lower > upper {
		b.c.first.env.fail(fmt.Errorf("weir: interval join: lower bound %v is above upper bound %v", lower, upper))
	}
	return IntervalJoined[K, A, B]{c: b.c, lower: lower.Milliseconds(), upper: upper.Milliseconds()}
}

// IntervalJoined is an interval join with its bounds; run it with
// ProcessIntervalJoin.
type IntervalJoined[K comparable, A, B any] struct {
	c                    KeyedConnectedStreams[K, A, B]
	lower, upper         int64
	lowerExcl, upperExcl bool
	lateLeft, lateRight  string
	leftCodec            codec.Codec[A]
	rightCodec           codec.Codec[B]
}

// LowerBoundExclusive excludes t+lower.
func (j IntervalJoined[K, A, B]) LowerBoundExclusive() IntervalJoined[K, A, B] {
	j.lowerExcl = true
	return j
}

// UpperBoundExclusive excludes t+upper.
func (j IntervalJoined[K, A, B]) UpperBoundExclusive() IntervalJoined[K, A, B] {
	j.upperExcl = true
	return j
}

// SideOutputLeftLateData sends left elements that arrive behind the
// watermark to tag instead of dropping them (Flink's sideOutputLeftLateData).
func (j IntervalJoined[K, A, B]) SideOutputLeftLateData(tag OutputTag[A]) IntervalJoined[K, A, B] {
	j.lateLeft = tag.id
	return j
}

// SideOutputRightLateData is SideOutputLeftLateData for the right side.
func (j IntervalJoined[K, A, B]) SideOutputRightLateData(tag OutputTag[B]) IntervalJoined[K, A, B] {
	j.lateRight = tag.id
	return j
}

// WithCodecs sets the codecs that buffer the two sides in keyed state
// (default: derived from A and B).
func (j IntervalJoined[K, A, B]) WithCodecs(left codec.Codec[A], right codec.Codec[B]) IntervalJoined[K, A, B] {
	j.leftCodec, j.rightCodec = left, right
	return j
}

// ProcessJoinContext is the context of one joined pair: Timestamp is the
// result's timestamp, the larger of the two.
type ProcessJoinContext interface {
	Context
	LeftTimestamp() int64
	RightTimestamp() int64
}

// ProcessJoinFunction handles each pair an interval join finds.
type ProcessJoinFunction[A, B, U any] interface {
	ProcessElement(ctx ProcessJoinContext, left A, right B, out Collector[U]) error
}

// ProcessJoinFunc adapts a function to ProcessJoinFunction.
type ProcessJoinFunc[A, B, U any] func(ctx ProcessJoinContext, left A, right B, out Collector[U]) error

// ProcessElement implements ProcessJoinFunction.
func (f ProcessJoinFunc[A, B, U]) ProcessElement(ctx ProcessJoinContext, left A, right B, out Collector[U]) error {
	return f(ctx, left, right, out)
}

// ProcessIntervalJoin runs an interval join as Flink's IntervalJoinOperator
// does: each side is buffered in keyed map state by timestamp; an element
// joins the other side's buffer, and an event-time timer removes it once the
// watermark shows that no partner can come any more. Elements behind the
// watermark are late: dropped, or sent to the late side outputs.
func ProcessIntervalJoin[K comparable, A, B, U any](j IntervalJoined[K, A, B], fn ProcessJoinFunction[A, B, U]) DataStream[U] {
	lower, upper := j.lower, j.upper
	if j.lowerExcl {
		lower++
	}
	if j.upperExcl {
		upper--
	}
	if lower > upper {
		j.c.first.env.fail(fmt.Errorf("weir: interval join: bounds [%d, %d] ms (after exclusion) are empty", lower, upper))
	}
	ca, cb := j.leftCodec, j.rightCodec
	var codecErr error
	if ca == nil {
		ca, codecErr = codec.For[A]()
	}
	if cb == nil && codecErr == nil {
		cb, codecErr = codec.For[B]()
	}
	newFn := func() KeyedCoProcessFunction[K, A, B, U] {
		return &intervalJoinFn[K, A, B, U]{fn: instanceOf(fn), lower: lower, upper: upper, ca: ca, cb: cb, codecErr: codecErr,
			lateLeft: j.lateLeft, lateRight: j.lateRight}
	}
	return keyedCoProcess(j.c, newFn, "Interval-Join")
}

// intervalJoinFn is the interval join as a keyed co-process function with
// inclusive bounds lower <= upper (exclusive bounds already folded in).
type intervalJoinFn[K comparable, A, B, U any] struct {
	fn                  ProcessJoinFunction[A, B, U]
	lower, upper        int64
	ca                  codec.Codec[A]
	cb                  codec.Codec[B]
	codecErr            error
	lateLeft, lateRight string
	left                state.MapState[int64, []A]
	right               state.MapState[int64, []B]
	jctx                joinContext
	// The element being joined and the visitors of the other side's
	// buckets, built once in Open: a range-over-func loop body would be a
	// new closure per element (the iterator is called through an interface).
	curA      A
	curB      B
	curTs     int64
	col       *collector[U]
	err       error
	joinLeft  func(int64, []B) bool
	joinRight func(int64, []A) bool

	// dropped is Flink's numLateRecordsDropped: late elements of either
	// side without a late output.
	dropped *operator.Counter
}

type joinContext struct {
	Context
	left, right int64
}

func (c *joinContext) Timestamp() int64      { return max(c.left, c.right) }
func (c *joinContext) LeftTimestamp() int64  { return c.left }
func (c *joinContext) RightTimestamp() int64 { return c.right }

func (f *intervalJoinFn[K, A, B, U]) Open(ctx KeyedRuntimeContext) error {
	if f.codecErr != nil {
		return fmt.Errorf("interval join buffers need codecs for both sides: %w (use WithCodecs)", f.codecErr)
	}
	f.left = state.GetMapState(ctx.State(), state.MapDescriptor[int64, []A]{Name: "interval-join-left", UserKeyCodec: codec.Int64(), ValueCodec: codec.Slice(f.ca)})
	f.right = state.GetMapState(ctx.State(), state.MapDescriptor[int64, []B]{Name: "interval-join-right", UserKeyCodec: codec.Int64(), ValueCodec: codec.Slice(f.cb)})
	f.joinLeft, f.joinRight = f.visitRight, f.visitLeft
	f.dropped = &operator.Counter{}
	if oc, ok := ctx.(interface{ op() *operator.Context }); ok {
		f.dropped = oc.op().Counter("numLateRecordsDropped")
	}
	if op, ok := f.fn.(Opener); ok {
		return op.Open(ctx)
	}
	return nil
}

// visitRight joins the current left element with one right bucket.
func (f *intervalJoinFn[K, A, B, U]) visitRight(rts int64, bs []B) bool {
	ts := f.curTs
	if rts < ts+f.lower || rts > ts+f.upper {
		return true
	}
	f.jctx.right = rts
	f.col.ts = max(ts, rts)
	for i := range bs {
		if f.err = f.fn.ProcessElement(&f.jctx, f.curA, bs[i], f.col); f.err != nil {
			return false
		}
	}
	return true
}

// visitLeft joins the current right element with one left bucket.
func (f *intervalJoinFn[K, A, B, U]) visitLeft(lts int64, as []A) bool {
	ts := f.curTs
	if lts < ts-f.upper || lts > ts-f.lower {
		return true
	}
	f.jctx.left = lts
	f.col.ts = max(ts, lts)
	for i := range as {
		if f.err = f.fn.ProcessElement(&f.jctx, as[i], f.curB, f.col); f.err != nil {
			return false
		}
	}
	return true
}

func (f *intervalJoinFn[K, A, B, U]) Close() error { return closeFn(f.fn) }

// late says whether an element at ts is behind the operator's watermark
// (Flink's rule: strictly below it), failing on elements without timestamp.
func late[K comparable](ctx KeyedContext[K], side string) (int64, bool, error) {
	ts := ctx.Timestamp()
	if ts == NoTimestamp {
		return ts, false, fmt.Errorf("interval join: a %s element has no timestamp (assign timestamps and watermarks first)", side)
	}
	wm := ctx.TimerService().CurrentWatermark()
	return ts, wm != math.MinInt64 && ts < wm, nil
}

func (f *intervalJoinFn[K, A, B, U]) ProcessElement1(ctx KeyedContext[K], a A, out Collector[U]) error {
	ts, isLate, err := late(ctx, "left")
	if err != nil || isLate {
		if isLate && f.lateLeft != "" {
			NewOutputTag[A](f.lateLeft).Output(ctx, a)
		} else if isLate {
			f.dropped.Inc()
		}
		return err
	}
	bucket, _ := f.left.Get(ts)
	f.left.Put(ts, append(bucket, a))
	f.col, f.curA, f.curTs = out.(*collector[U]), a, ts
	f.jctx.Context, f.jctx.left = ctx, ts
	f.right.All()(f.joinLeft)
	var zero A
	f.curA = zero // do not keep the element alive
	if f.err != nil {
		return f.err
	}
	// The left element can meet right elements up to ts+upper; once the
	// watermark passes that, none can come (they would be late).
	cleanup := ts
	if f.upper > 0 {
		cleanup = ts + f.upper
	}
	ctx.TimerService().RegisterEventTimeTimer(cleanup)
	return nil
}

func (f *intervalJoinFn[K, A, B, U]) ProcessElement2(ctx KeyedContext[K], b B, out Collector[U]) error {
	ts, isLate, err := late(ctx, "right")
	if err != nil || isLate {
		if isLate && f.lateRight != "" {
			NewOutputTag[B](f.lateRight).Output(ctx, b)
		} else if isLate {
			f.dropped.Inc()
		}
		return err
	}
	bucket, _ := f.right.Get(ts)
	f.right.Put(ts, append(bucket, b))
	f.col, f.curB, f.curTs = out.(*collector[U]), b, ts
	f.jctx.Context, f.jctx.right = ctx, ts
	f.left.All()(f.joinRight)
	var zero B
	f.curB = zero
	if f.err != nil {
		return f.err
	}
	cleanup := ts
	if f.lower < 0 {
		cleanup = ts - f.lower
	}
	ctx.TimerService().RegisterEventTimeTimer(cleanup)
	return nil
}

// OnTimer removes the buffers whose cleanup time this is. Timers have no
// namespaces here (Flink uses one per side), so one timer may serve both
// sides; that is safe because cleanup time is a bijection of the timestamp
// per side: the buckets at the inverse timestamps are due exactly now.
func (f *intervalJoinFn[K, A, B, U]) OnTimer(ctx OnTimerContext[K], t int64, _ Collector[U]) error {
	lts := t
	if f.upper > 0 {
		lts = t - f.upper
	}
	f.left.Remove(lts)
	rts := t
	if f.lower < 0 {
		rts = t + f.lower
	}
	f.right.Remove(rts)
	return nil
}

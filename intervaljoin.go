package weir

import (
	"fmt"
	"github.com/weirhq/weir/failure"
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
	checkHooks(j.c.first.env, "ProcessIntervalJoin", fn, openCloseHooks())
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
	if codecErr != nil {
		j.c.first.env.fail(fmt.Errorf("weir: ProcessIntervalJoin: interval join buffers need codecs for both sides: %w (export the fields, or use WithCodecs)", codecErr))
	}
	newFn := func() KeyedCoProcessFunction[K, A, B, U] {
		return &intervalJoinFn[K, A, B, U]{fn: instanceOf(fn), lower: lower, upper: upper, ca: ca, cb: cb, codecErr: codecErr,
			lateLeft: j.lateLeft, lateRight: j.lateRight}
	}
	return keyedCoProcess(j.c, newFn, "Interval-Join")
}

// intervalJoinFn is the interval join as a keyed co-process function with
// inclusive bounds lower <= upper (exclusive bounds already folded in).
//
// Cleanup is coarser than Flink's, with the same results. Flink registers
// one timer per buffered timestamp, at the time after which no partner can
// come (cleanup time: ts+max(upper,0) on the left, ts+max(-lower,0) on the
// right), and removes the bucket when it fires. Here a bucket's timer is
// its cleanup time rounded up to a multiple of the bucket width (twice the
// span upper-lower), one timer per key and width that serves both sides
// and removes every bucket due by then: several times fewer timers, which
// were two thirds of the operator's time. A bucket can therefore outlive the
// watermark that would have removed it in Flink, so the join skips buckets
// that Flink would no longer hold (cleanup time <= watermark; see visible).
type intervalJoinFn[K comparable, A, B, U any] struct {
	fn                  ProcessJoinFunction[A, B, U]
	lower, upper        int64
	leftKeep, rightKeep int64 // cleanup time minus timestamp, per side
	width               int64 // cleanup timers are multiples of width
	ca                  codec.Codec[A]
	cb                  codec.Codec[B]
	codecErr            error
	lateLeft, lateRight string
	// The buffers: on the heap backend hl and hr, else left and right
	// (the same snapshot either way; see heapJoinSide).
	left  state.MapState[int64, []A]
	right state.MapState[int64, []B]
	hl    *heapJoinSide[A]
	hr    *heapJoinSide[B]
	jctx  joinContext
	// The element being joined and the visitors of the other side's
	// buckets, built once in Open: a range-over-func loop body would be a
	// new closure per element (the iterator is called through an interface).
	curA   A
	curB   B
	curTs  int64
	curKey K
	wm     int64 // the watermark while joining the current element
	// minKeep is the earliest cleanup time among the other side's buckets
	// of the current key (math.MaxInt64 if none), found while joining.
	minKeep   int64
	col       *collector[U]
	err       error
	joinLeft  func(int64, []B) bool
	joinRight func(int64, []A) bool
	// edgeLeft and edgeRight count, per key, the elements buffered while
	// the watermark already equalled their cleanup time (possible only at
	// ts == watermark on a side whose bound is <= 0, an element the
	// watermark said would not come). Flink still holds those until its
	// timer fires at the next watermark advance, so they stay visible until
	// then; they get an exact timer, which fires at that advance, and any
	// timer of their key clears the count (a timer only fires in an
	// advance, after which they are due like any other). Empty in practice.
	edgeLeft, edgeRight map[K]int
	due                 []int64 // scratch: bucket timestamps being removed

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
		return failure.Permanent(fmt.Errorf("interval join buffers need codecs for both sides: %w (use WithCodecs)", f.codecErr))
	}
	if hs := heapStoreOf(ctx.State()); hs != nil {
		var err error
		if f.hl, err = newHeapJoinSide(hs, "interval-join-left", f.ca); err != nil {
			return err
		}
		if f.hr, err = newHeapJoinSide(hs, "interval-join-right", f.cb); err != nil {
			return err
		}
	} else {
		f.left = state.GetMapState(ctx.State(), state.MapDescriptor[int64, []A]{Name: "interval-join-left", UserKeyCodec: codec.Int64(), ValueCodec: codec.Slice(f.ca)})
		f.right = state.GetMapState(ctx.State(), state.MapDescriptor[int64, []B]{Name: "interval-join-right", UserKeyCodec: codec.Int64(), ValueCodec: codec.Slice(f.cb)})
	}
	f.joinLeft, f.joinRight = f.visitRight, f.visitLeft
	f.leftKeep, f.rightKeep = max(f.upper, 0), max(-f.lower, 0)
	// Twice the span: a bucket outlives Flink's by at most two spans, and
	// on the heap backend only while its key gets no element (add drops
	// what is due); docs/benchmarks.md has the width's effect. A negative
	// span (upper-lower overflowed) gives exact timers.
	f.width = 1
	if span := f.upper - f.lower; span > 1 {
		f.width = span
		if span <= math.MaxInt64/2 {
			f.width = 2 * span
		}
	}
	f.edgeLeft, f.edgeRight = map[K]int{}, map[K]int{}
	f.dropped = &operator.Counter{}
	if oc, ok := ctx.(interface{ op() *operator.Context }); ok {
		f.dropped = oc.op().Counter("numLateRecordsDropped")
	}
	if op, ok := f.fn.(Opener); ok {
		return op.Open(ctx)
	}
	return nil
}

// cleanupTimer is the timer that removes a bucket with cleanup time c: c
// rounded up to a multiple of the width (saturating at the maximum).
func (f *intervalJoinFn[K, A, B, U]) cleanupTimer(c int64) int64 {
	r := c % f.width
	if r < 0 {
		r += f.width
	}
	if r == 0 {
		return c
	}
	if c > math.MaxInt64-(f.width-r) {
		return math.MaxInt64
	}
	return c + f.width - r
}

// addTs is ts+d saturated at the maximum (d >= 0).
func addTs(ts, d int64) int64 {
	if ts > math.MaxInt64-d {
		return math.MaxInt64
	}
	return ts + d
}

// visible returns how many elements, from the end, of a bucket of the other
// side with timestamp ts and cleanup time c Flink would still hold: all of
// them before the watermark reaches c, then only the edge elements.
func (f *intervalJoinFn[K, A, B, U]) visible(ts, c int64, n int, edge map[K]int) int {
	if c > f.wm || f.wm == math.MinInt64 {
		return n
	}
	if c == f.wm && ts == f.wm && len(edge) > 0 {
		return min(edge[f.curKey], n)
	}
	return 0
}

// visitRight joins the current left element with one right bucket.
func (f *intervalJoinFn[K, A, B, U]) visitRight(rts int64, bs []B) bool {
	ts := f.curTs
	c := addTs(rts, f.rightKeep)
	f.minKeep = min(f.minKeep, c)
	if rts < ts+f.lower || rts > ts+f.upper {
		return true
	}
	bs = bs[len(bs)-f.visible(rts, c, len(bs), f.edgeRight):]
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
	c := addTs(lts, f.leftKeep)
	f.minKeep = min(f.minKeep, c)
	if lts < ts-f.upper || lts > ts-f.lower {
		return true
	}
	as = as[len(as)-f.visible(lts, c, len(as), f.edgeLeft):]
	f.jctx.left = lts
	f.col.ts = max(ts, lts)
	for i := range as {
		if f.err = f.fn.ProcessElement(&f.jctx, as[i], f.curB, f.col); f.err != nil {
			return false
		}
	}
	return true
}

// joinHeapRight joins the current left element with the right buffer of
// its key on the heap backend: the runs of one timestamp within the bounds
// (the buffer is sorted, so the scan stops past the upper bound).
func (f *intervalJoinFn[K, A, B, U]) joinHeapRight() {
	es := f.hr.elems()
	if len(es) == 0 {
		return
	}
	f.minKeep = addTs(es[0].ts, f.rightKeep)
	lo, hi := f.curTs+f.lower, f.curTs+f.upper
	i := 0
	for i < len(es) && es[i].ts < lo {
		i++
	}
	for i < len(es) && es[i].ts <= hi {
		rts := es[i].ts
		j := i + 1
		for j < len(es) && es[j].ts == rts {
			j++
		}
		run := es[i:j]
		i = j
		run = run[len(run)-f.visible(rts, addTs(rts, f.rightKeep), len(run), f.edgeRight):]
		f.jctx.right = rts
		f.col.ts = max(f.curTs, rts)
		for k := range run {
			if f.err = f.fn.ProcessElement(&f.jctx, f.curA, run[k].v, f.col); f.err != nil {
				return
			}
		}
	}
}

// joinHeapLeft is joinHeapRight for a right element.
func (f *intervalJoinFn[K, A, B, U]) joinHeapLeft() {
	es := f.hl.elems()
	if len(es) == 0 {
		return
	}
	f.minKeep = addTs(es[0].ts, f.leftKeep)
	lo, hi := f.curTs-f.upper, f.curTs-f.lower
	i := 0
	for i < len(es) && es[i].ts < lo {
		i++
	}
	for i < len(es) && es[i].ts <= hi {
		lts := es[i].ts
		j := i + 1
		for j < len(es) && es[j].ts == lts {
			j++
		}
		run := es[i:j]
		i = j
		run = run[len(run)-f.visible(lts, addTs(lts, f.leftKeep), len(run), f.edgeLeft):]
		f.jctx.left = lts
		f.col.ts = max(f.curTs, lts)
		for k := range run {
			if f.err = f.fn.ProcessElement(&f.jctx, run[k].v, f.curB, f.col); f.err != nil {
				return
			}
		}
	}
}

func (f *intervalJoinFn[K, A, B, U]) Close() error { return closeFn(f.fn) }

// late says whether an element at ts is behind the operator's watermark
// (Flink's rule: strictly below it), failing on elements without timestamp.
func late[K comparable](ctx KeyedContext[K], side string) (ts, wm int64, isLate bool, err error) {
	ts = ctx.Timestamp()
	if ts == NoTimestamp {
		return ts, 0, false, fmt.Errorf("interval join: a %s element has no timestamp (assign timestamps and watermarks first)", side)
	}
	wm = ctx.TimerService().CurrentWatermark()
	return ts, wm, wm != math.MinInt64 && ts < wm, nil
}

// buffered registers the cleanup of a bucket with cleanup time c that got
// an element; edge counts the element if the watermark already reached c.
//
// The invariant that keeps buffers bounded: every bucket with cleanup time
// c has a pending timer of its key at or before cleanupTimer(c), and
// OnTimer re-registers cleanupTimer of the earliest bucket it leaves. So a
// bucket is gone once the watermark passes cleanupTimer(c), and an element
// needs no timer of its own when its bucket existed (same c) or the other
// side holds a bucket whose cleanupTimer is not later than its own: its
// pending timer comes first, and OnTimer carries on from there. This skips
// most registrations, each a map lookup in the timer service.
func (f *intervalJoinFn[K, A, B, U]) buffered(ctx KeyedContext[K], c int64, existed bool, edge map[K]int) {
	if f.wm != math.MinInt64 && c <= f.wm {
		// Flink's timer at c would fire at the next advance: so does ours.
		edge[f.curKey]++
		ctx.TimerService().RegisterEventTimeTimer(c)
		return
	}
	if existed {
		return
	}
	t := f.cleanupTimer(c)
	if f.minKeep != math.MaxInt64 && f.cleanupTimer(f.minKeep) <= t {
		return
	}
	ctx.TimerService().RegisterEventTimeTimer(t)
}

func (f *intervalJoinFn[K, A, B, U]) ProcessElement1(ctx KeyedContext[K], a A, out Collector[U]) error {
	ts, wm, isLate, err := late(ctx, "left")
	if err != nil || isLate {
		if isLate && f.lateLeft != "" {
			NewOutputTag[A](f.lateLeft).Output(ctx, a)
		} else if isLate {
			f.dropped.Inc()
		}
		return err
	}
	f.col, f.curA, f.curTs, f.wm, f.curKey = out.(*collector[U]), a, ts, wm, ctx.CurrentKey()
	f.jctx.Context, f.jctx.left = ctx, ts
	f.minKeep = math.MaxInt64
	// Join first, then buffer: the element's own side is not visited, so
	// the order does not change the result.
	if f.hr != nil {
		f.joinHeapRight()
	} else {
		f.right.All()(f.joinLeft)
	}
	var zero A
	f.curA = zero // do not keep the element alive
	if f.err != nil {
		return f.err
	}
	var existed bool
	if f.hl != nil {
		existed = f.hl.add(ts, a, f.leftKeep, f.wm)
	} else {
		var bucket []A
		bucket, existed = f.left.Get(ts)
		f.left.Put(ts, append(bucket, a))
	}
	// The left element can meet right elements up to ts+upper; once the
	// watermark passes that, none can come (they would be late).
	f.buffered(ctx, addTs(ts, f.leftKeep), existed, f.edgeLeft)
	return nil
}

func (f *intervalJoinFn[K, A, B, U]) ProcessElement2(ctx KeyedContext[K], b B, out Collector[U]) error {
	ts, wm, isLate, err := late(ctx, "right")
	if err != nil || isLate {
		if isLate && f.lateRight != "" {
			NewOutputTag[B](f.lateRight).Output(ctx, b)
		} else if isLate {
			f.dropped.Inc()
		}
		return err
	}
	f.col, f.curB, f.curTs, f.wm, f.curKey = out.(*collector[U]), b, ts, wm, ctx.CurrentKey()
	f.jctx.Context, f.jctx.right = ctx, ts
	f.minKeep = math.MaxInt64
	if f.hl != nil {
		f.joinHeapLeft()
	} else {
		f.left.All()(f.joinRight)
	}
	var zero B
	f.curB = zero
	if f.err != nil {
		return f.err
	}
	var existed bool
	if f.hr != nil {
		existed = f.hr.add(ts, b, f.rightKeep, f.wm)
	} else {
		var bucket []B
		bucket, existed = f.right.Get(ts)
		f.right.Put(ts, append(bucket, b))
	}
	f.buffered(ctx, addTs(ts, f.rightKeep), existed, f.edgeRight)
	return nil
}

// OnTimer removes the key's buckets of both sides whose cleanup time is at
// or before t (a timer may serve both sides and several buckets; a timer
// of an older checkpoint, one per bucket at its exact cleanup time, removes
// that bucket the same way), and registers the timer of the earliest bucket
// left (see buffered).
func (f *intervalJoinFn[K, A, B, U]) OnTimer(ctx OnTimerContext[K], t int64, _ Collector[U]) error {
	if len(f.edgeLeft) > 0 || len(f.edgeRight) > 0 {
		k := ctx.CurrentKey()
		delete(f.edgeLeft, k)
		delete(f.edgeRight, k)
	}
	next := int64(math.MaxInt64)
	if f.hl != nil {
		if c, ok := f.hl.removeDue(t, f.leftKeep); ok {
			next = c
		}
		if c, ok := f.hr.removeDue(t, f.rightKeep); ok {
			next = min(next, c)
		}
		if next != math.MaxInt64 {
			ctx.TimerService().RegisterEventTimeTimer(f.cleanupTimer(next))
		}
		return nil
	}
	f.due = f.due[:0]
	for ts := range f.left.Keys() {
		if c := addTs(ts, f.leftKeep); c <= t {
			f.due = append(f.due, ts)
		} else {
			next = min(next, c)
		}
	}
	for _, ts := range f.due {
		f.left.Remove(ts)
	}
	f.due = f.due[:0]
	for ts := range f.right.Keys() {
		if c := addTs(ts, f.rightKeep); c <= t {
			f.due = append(f.due, ts)
		} else {
			next = min(next, c)
		}
	}
	for _, ts := range f.due {
		f.right.Remove(ts)
	}
	if next != math.MaxInt64 {
		ctx.TimerService().RegisterEventTimeTimer(f.cleanupTimer(next))
	}
	return nil
}

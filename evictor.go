package weir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/valuecopy"
	"github.com/weirhq/weir/state"
)

// TimestampedValue is an element of a window with its timestamp
// (NoTimestamp when it has none), as evictors see it (Flink's
// TimestampedValue).
type TimestampedValue[T any] struct {
	Value     T
	Timestamp int64
}

// EvictorContext is what an evictor sees of the operator.
type EvictorContext interface {
	CurrentWatermark() int64
	CurrentProcessingTime() int64
}

// Evictor removes elements of a window when it fires (Flink's Evictor):
// EvictBefore before the window function runs (it sees what is left),
// EvictAfter after it; what EvictAfter keeps stays in the window. Both
// return the elements kept, in order; they may filter elements in place and
// return a prefix of it. Another module may implement it.
type Evictor[T any] interface {
	EvictBefore(elements []TimestampedValue[T], w TimeWindow, ctx EvictorContext) []TimestampedValue[T]
	EvictAfter(elements []TimestampedValue[T], w TimeWindow, ctx EvictorContext) []TimestampedValue[T]
}

// CountEvictor keeps the last n elements of a window, evicting before the
// window function runs (Flink's CountEvictor.of(n)).
func CountEvictor[T any](n int64) Evictor[T] { return countEvictor[T]{max: checkCount(n)} }

// CountEvictorAfter keeps the last n elements, evicting after the window
// function ran (Flink's CountEvictor.of(n, true)).
func CountEvictorAfter[T any](n int64) Evictor[T] {
	return countEvictor[T]{max: checkCount(n), after: true}
}

func checkCount(n int64) int64 {
	if n < 1 {
		panic(fmt.Sprintf("weir: count evictor of %d elements: want at least 1", n))
	}
	return n
}

type countEvictor[T any] struct {
	max   int64
	after bool
}

func (e countEvictor[T]) evict(els []TimestampedValue[T]) []TimestampedValue[T] {
	if int64(len(els)) <= e.max {
		return els
	}
	return els[int64(len(els))-e.max:]
}

func (e countEvictor[T]) EvictBefore(els []TimestampedValue[T], _ TimeWindow, _ EvictorContext) []TimestampedValue[T] {
	if e.after {
		return els
	}
	return e.evict(els)
}

func (e countEvictor[T]) EvictAfter(els []TimestampedValue[T], _ TimeWindow, _ EvictorContext) []TimestampedValue[T] {
	if !e.after {
		return els
	}
	return e.evict(els)
}

func (e countEvictor[T]) String() string { return fmt.Sprintf("CountEvictor(%d)", e.max) }

// TimeEvictor keeps the elements whose timestamp is within size of the
// window's largest timestamp (ts > max - size), evicting before the window
// function runs (Flink's TimeEvictor.of(size)). Elements without a
// timestamp are not evicted.
func TimeEvictor[T any](size time.Duration) Evictor[T] {
	return timeEvictor[T]{size: checkSize(size)}
}

// TimeEvictorAfter is TimeEvictor evicting after the window function ran.
func TimeEvictorAfter[T any](size time.Duration) Evictor[T] {
	return timeEvictor[T]{size: checkSize(size), after: true}
}

func checkSize(d time.Duration) int64 {
	if d.Milliseconds() < 0 {
		panic(fmt.Sprintf("weir: time evictor of %v: want at least 0", d))
	}
	return d.Milliseconds()
}

type timeEvictor[T any] struct {
	size  int64
	after bool
}

func (e timeEvictor[T]) evict(els []TimestampedValue[T]) []TimestampedValue[T] {
	// Flink looks at the first element only: elements of a window either
	// all have timestamps or none.
	if len(els) == 0 || els[0].Timestamp == NoTimestamp {
		return els
	}
	maxTs := els[0].Timestamp
	for _, e := range els {
		maxTs = max(maxTs, e.Timestamp)
	}
	cutoff := maxTs - e.size
	kept := els[:0]
	for _, el := range els {
		if el.Timestamp > cutoff {
			kept = append(kept, el)
		}
	}
	return kept
}

func (e timeEvictor[T]) EvictBefore(els []TimestampedValue[T], _ TimeWindow, _ EvictorContext) []TimestampedValue[T] {
	if e.after {
		return els
	}
	return e.evict(els)
}

func (e timeEvictor[T]) EvictAfter(els []TimestampedValue[T], _ TimeWindow, _ EvictorContext) []TimestampedValue[T] {
	if !e.after {
		return els
	}
	return e.evict(els)
}

func (e timeEvictor[T]) String() string { return fmt.Sprintf("TimeEvictor(%dms)", e.size) }

// evictingHooks is what the operator calls on evicting contents: the
// element's timestamp before add, the window before get, and fired after
// the window function ran.
type evictingHooks interface {
	setEvictor(e any, ctx EvictorContext)
	element(ts int64)
	firing(w TimeWindow)
	fired()
}

// evictable gives the window operator evicting contents when w has an
// evictor (Flink's EvictingWindowOperator): every element with its
// timestamp in a ListState, and fold applying the window's function to
// what EvictBefore left when it fires.
func evictable[K comparable, T, R any](w WindowedStream[K, T], contents func() (windowContents[T, R], error), fold func([]T) (R, bool)) func() (windowContents[T, R], error) {
	if w.evictor == nil {
		return contents
	}
	c, err := codec.For[T]()
	return func() (windowContents[T, R], error) {
		if err != nil {
			return nil, fmt.Errorf("an evicting window keeps every element and needs a codec for the element type: %w", err)
		}
		return &evictingContents[T, R]{codec: tsCodec[T]{c}, fold: fold}, nil
	}
}

func reduceAll[T any](reduce func(a, b T) T) func([]T) (T, bool) {
	var cp func(T) T // the first element, copied when reduce could change it in place
	if c, err := codec.For[T](); err == nil {
		cp = valuecopy.Func(c)
	}
	return func(vs []T) (T, bool) {
		if len(vs) == 0 {
			var zero T
			return zero, false // nothing left to reduce: no result
		}
		acc := vs[0] // the window's kept element: reduce may change it
		if cp != nil {
			acc = cp(acc)
		}
		for _, v := range vs[1:] {
			acc = reduce(acc, v)
		}
		return acc, true
	}
}

func aggregateAll[T, ACC, R any](agg AggregateFunction[T, ACC, R]) func([]T) (R, bool) {
	return func(vs []T) (R, bool) {
		acc := agg.CreateAccumulator()
		for _, v := range vs {
			acc = agg.Add(v, acc)
		}
		return agg.GetResult(acc), true
	}
}

func listAll[T any](vs []T) ([]T, bool) { return vs, true }

type evictingContents[T, R any] struct {
	codec   codec.Codec[TimestampedValue[T]]
	st      state.ListState[TimestampedValue[T]]
	fold    func([]T) (R, bool)
	evictor Evictor[T]
	ctx     EvictorContext
	ts      int64
	window  TimeWindow
	kept    []TimestampedValue[T] // between get and fired
	pending bool
}

func (c *evictingContents[T, R]) setEvictor(e any, ctx EvictorContext) {
	c.evictor, c.ctx = e.(Evictor[T]), ctx
}
func (c *evictingContents[T, R]) element(ts int64)    { c.ts = ts }
func (c *evictingContents[T, R]) firing(w TimeWindow) { c.window = w }

func (c *evictingContents[T, R]) open(store state.KeyedStore) {
	c.st = state.GetListState(store, state.ListDescriptor[TimestampedValue[T]]{Name: "window-evicting-contents", Codec: c.codec})
}

func (c *evictingContents[T, R]) add(v T) bool {
	c.st.Add(TimestampedValue[T]{Value: v, Timestamp: c.ts})
	return true
}

// get runs EvictBefore and folds what is left (a new slice per firing: a
// process function may keep it).
func (c *evictingContents[T, R]) get() (R, bool) {
	l := c.st.Get()
	if len(l) == 0 {
		var zero R
		return zero, false
	}
	c.kept, c.pending = c.evictor.EvictBefore(l, c.window, c.ctx), true
	vals := make([]T, len(c.kept))
	for i, e := range c.kept {
		vals[i] = e.Value
	}
	return c.fold(vals)
}

// fired runs EvictAfter and writes back what the evictor kept.
func (c *evictingContents[T, R]) fired() {
	if !c.pending {
		return
	}
	kept := c.evictor.EvictAfter(c.kept, c.window, c.ctx)
	c.st.Update(kept) // empty clears
	c.kept, c.pending = nil, false
}

func (c *evictingContents[T, R]) take() (any, bool) {
	l := c.st.Get()
	if len(l) == 0 {
		return nil, false
	}
	c.st.Clear()
	return l, true
}

func (c *evictingContents[T, R]) absorb(raw any) { c.st.AddAll(raw.([]TimestampedValue[T])) }
func (c *evictingContents[T, R]) clear()         { c.st.Clear() }

// tsCodec encodes a TimestampedValue as its timestamp (varint) then the value.
type tsCodec[T any] struct{ c codec.Codec[T] }

func (t tsCodec[T]) AppendEncode(dst []byte, v TimestampedValue[T]) []byte {
	return t.c.AppendEncode(binary.AppendVarint(dst, v.Timestamp), v.Value)
}

func (t tsCodec[T]) Decode(b []byte) (TimestampedValue[T], int, error) {
	ts, n := binary.Varint(b)
	if n <= 0 {
		return TimestampedValue[T]{}, 0, errors.New("timestamped value: corrupt timestamp")
	}
	v, m, err := t.c.Decode(b[n:])
	if err != nil {
		return TimestampedValue[T]{}, 0, err
	}
	return TimestampedValue[T]{Value: v, Timestamp: ts}, n + m, nil
}

package weir

import (
	"fmt"
	"unsafe"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keyedruntime"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/shortkey"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/state"
)

// The operators below adapt user functions to the runtime. Each calls
// ctx.Enter before user code so that a panic names the right operator.

type noLifecycle struct{}

func (noLifecycle) Open(*operator.Context) error { return nil }
func (noLifecycle) Finish() error                { return nil }
func (noLifecycle) Close() error                 { return nil }

type mapOp[T, U any] struct {
	noLifecycle
	f     func(T) U
	out   operator.Input[U]
	batch operator.BatchInput[U] // out, when it takes batches
	ctx   *operator.Context
	buf   []U
	clear bool // U holds pointers: clear buf after each batch
}

func (o *mapOp[T, U]) ProcessElement(v T, ts int64) {
	o.ctx.Enter()
	o.out.ProcessElement(o.f(v), ts)
}

// ProcessBatch maps the whole batch, then emits it as one batch when the
// output takes batches: nothing runs between the user function's calls
// but the user function, so this is ProcessElement for each element, with
// one Enter and one call downstream per batch.
func (o *mapOp[T, U]) ProcessBatch(vs []T, ts int64) {
	if o.batch == nil {
		for _, v := range vs {
			o.ProcessElement(v, ts)
		}
		return
	}
	if cap(o.buf) < len(vs) {
		o.buf = make([]U, len(vs))
	}
	buf, f := o.buf[:len(vs)], o.f
	o.ctx.Enter()
	for i, v := range vs {
		buf[i] = f(v)
	}
	o.batch.ProcessBatch(buf, ts)
	if o.clear {
		clear(buf) // let go of what the elements reference
	}
}
func (o *mapOp[T, U]) ProcessWatermark(wm int64) { o.out.ProcessWatermark(wm) }

type filterOp[T any] struct {
	noLifecycle
	f     func(T) bool
	out   operator.Input[T]
	batch operator.BatchInput[T] // out, when it takes batches
	ctx   *operator.Context
	buf   []T
	clear bool // as in mapOp
}

func (o *filterOp[T]) ProcessElement(v T, ts int64) {
	o.ctx.Enter()
	if o.f(v) {
		o.out.ProcessElement(v, ts)
	}
}

// ProcessBatch keeps the batch's elements that pass into a batch of its
// own and emits it (when the output takes batches), like mapOp.
func (o *filterOp[T]) ProcessBatch(vs []T, ts int64) {
	if o.batch == nil {
		for _, v := range vs {
			o.ProcessElement(v, ts)
		}
		return
	}
	if cap(o.buf) < len(vs) {
		o.buf = make([]T, len(vs))
	}
	buf, f, n := o.buf[:len(vs)], o.f, 0
	o.ctx.Enter()
	for _, v := range vs {
		// Every element is written and only a kept one advances n: when
		// the predicate's outcome looks random (a filter keeping 80% of
		// hashed keys), a branch around the write mispredicts.
		keep := f(v)
		buf[n] = v
		if keep {
			n++
		}
	}
	if n > 0 {
		o.batch.ProcessBatch(buf[:n], ts)
	}
	if o.clear {
		clear(buf[:min(n+1, len(buf))]) // buf[n] may hold the last dropped element
	}
}
func (o *filterOp[T]) ProcessWatermark(wm int64) { o.out.ProcessWatermark(wm) }

// collector emits with the timestamp of the element being processed and
// re-enters its operator afterwards, because user code continues.
type collector[U any] struct {
	out operator.Input[U]
	ctx *operator.Context
	ts  int64
}

func (c *collector[U]) Collect(v U) {
	c.out.ProcessElement(v, c.ts)
	c.ctx.Enter()
}

type flatMapOp[T, U any] struct {
	noLifecycle
	f    func(T, Collector[U])
	col  collector[U]
	bcol batchCollector[U] // ProcessBatch's, when out takes batches
}

func (o *flatMapOp[T, U]) ProcessElement(v T, ts int64) {
	o.col.ctx.Enter()
	o.col.ts = ts
	o.f(v, &o.col)
}

// ProcessBatch implements operator.BatchInput: like mapOp, the function
// runs over the whole batch and what it collects goes on in batches, when
// the output takes them. The collected elements of one batch all have the
// batch's timestamp, so this is ProcessElement for each element in order.
func (o *flatMapOp[T, U]) ProcessBatch(vs []T, ts int64) {
	c := &o.bcol
	if c.out == nil {
		for _, v := range vs {
			o.ProcessElement(v, ts)
		}
		return
	}
	o.col.ctx.Enter()
	c.ts = ts
	for _, v := range vs {
		o.f(v, c)
	}
	c.flush()
}

// batchCollector gathers a flatMap's output into batches of up to
// flatMapBatch elements.
type batchCollector[U any] struct {
	out   operator.BatchInput[U]
	ctx   *operator.Context
	ts    int64
	buf   []U
	clear bool // as in mapOp
}

// flatMapBatch bounds the elements a flatMap holds before it hands them on,
// whatever each input element expands to.
const flatMapBatch = 256

func (c *batchCollector[U]) Collect(v U) {
	c.buf = append(c.buf, v)
	if len(c.buf) == flatMapBatch {
		c.flush()
	}
}

func (c *batchCollector[U]) flush() {
	if len(c.buf) == 0 {
		return
	}
	c.out.ProcessBatch(c.buf, c.ts)
	c.ctx.Enter()
	if c.clear {
		clear(c.buf) // let go of what the elements reference
	}
	c.buf = c.buf[:0]
}
func (o *flatMapOp[T, U]) ProcessWatermark(wm int64) { o.col.out.ProcessWatermark(wm) }

type processContext struct {
	runtimeContext
	ts int64
}

func (p *processContext) Timestamp() int64 { return p.ts }

type processOp[T, U any] struct {
	fnHooks
	fn   ProcessFunction[T, U]
	col  collector[U]
	pctx processContext
}

func (o *processOp[T, U]) Open(*operator.Context) error {
	if op, ok := o.fn.(Opener); ok {
		return op.Open(o.pctx.runtimeContext)
	}
	return nil
}

func (o *processOp[T, U]) ProcessElement(v T, ts int64) {
	o.col.ctx.Enter()
	o.col.ts, o.pctx.ts = ts, ts
	if err := o.fn.ProcessElement(&o.pctx, v, &o.col); err != nil {
		operator.Fail(err)
	}
}

func (o *processOp[T, U]) ProcessWatermark(wm int64) { o.col.out.ProcessWatermark(wm) }

func (o *processOp[T, U]) Finish() error {
	if f, ok := o.fn.(Finisher[U]); ok {
		o.col.ts = NoTimestamp
		return f.Finish(&o.col)
	}
	return nil
}

func (o *processOp[T, U]) Close() error {
	if c, ok := o.fn.(Closer); ok {
		return c.Close()
	}
	return nil
}

// reduceOp keeps one accumulator per key: in streaming mode in keyed
// ValueState (so it lives in the configured state backend) and emits each
// update; in batch mode in a Go map, emitting only final values at the end.
type reduceOp[K comparable, T any] struct {
	f   func(T, T) T
	key func(T) K
	out operator.Input[T]
	ctx *operator.Context
	// Batch mode only: each key's index into vals, so a record costs one
	// map lookup (a new key two) instead of a lookup and an assignment.
	// String keys (strs) are numbered by a shortkey.Index, which holds
	// short keys in its slots: a Go map compares a string key by loading
	// its bytes, a cache miss of its own at tens of thousands of keys.
	batch map[K]int
	strs  *shortkey.Index
	vals  []T
	// The batch accumulators' memory, as Config.BatchStateMemory counts
	// it: perKey for each key, and a string key's bytes.
	mem, memLimit, perKey int64
	keyCodec              codec.Codec[K]
	valueCodec            codec.Codec[T]
	core                  *keyedruntime.Core[K]
	acc                   state.ValueState[T]
	// table is acc's heap table when acc is a plain heap ValueState: then
	// ProcessElement does what acc.Value and acc.Update do, with direct calls.
	table *typedstore.Table[T]
	// outBatch is out when it takes batches: a streaming reduce over the
	// heap table then hands on each batch's updated values as one batch.
	outBatch operator.BatchInput[T]
	buf      []T
	clear    bool // as in mapOp
}

func (o *reduceOp[K, T]) Open(ctx *operator.Context) error {
	if o.batch != nil || o.strs != nil {
		return nil
	}
	core, err := keyedruntime.NewCore(ctx, o.keyCodec)
	if err != nil {
		return err
	}
	o.core = core
	o.acc = state.GetValueState(core.Store(), state.ValueDescriptor[T]{Name: "reduce", Codec: o.valueCodec})
	if h, ok := o.acc.(spi.DirectTable[T]); ok {
		o.table = h.TypedTable()
	}
	return nil
}

func (o *reduceOp[K, T]) ProcessElement(v T, ts int64) {
	o.ctx.Enter()
	k := o.key(v)
	if o.strs != nil {
		s := *(*string)(unsafe.Pointer(&k))
		if i, found := o.strs.Index(s, len(o.vals)); found {
			o.vals[i] = o.f(o.vals[i], v)
		} else {
			o.vals = append(o.vals, v)
			o.count(int64(len(s)))
		}
		return
	}
	if o.batch != nil {
		if i, ok := o.batch[k]; ok {
			o.vals[i] = o.f(o.vals[i], v)
			return
		}
		o.batch[k] = len(o.vals)
		o.vals = append(o.vals, v)
		o.count(0)
		return
	}
	if t := o.table; t != nil {
		v = o.reduceHeap(t, k, v)
	} else {
		o.core.SetKey(k)
		if a, ok := o.acc.Value(); ok {
			v = o.f(a, v)
		}
		o.acc.Update(v)
	}
	o.out.ProcessElement(v, ts)
}

// count adds a new key's accumulator to the batch's memory, and fails
// the subtask once that passes Config.BatchStateMemory.
func (o *reduceOp[K, T]) count(extra int64) {
	if o.mem += o.perKey + extra; o.mem > o.memLimit {
		operator.Fail(fmt.Errorf("batch Reduce: %d distinct keys take about %d bytes of accumulators in this subtask, more than Config.BatchStateMemory (%d bytes; weir run's --batch-state-memory): raise it, or run the job in streaming mode with the pebble state backend",
			len(o.vals), o.mem, o.memLimit))
	}
}

// reduceHeap reduces v into the accumulator of key k in the heap table t
// and returns the new accumulator. f reads no state, so an integer key's
// entry, found where it usually is, is updated without setting the key:
// no key group or image written to the store and read back, no cached
// entry; the table's memo finds a key it found before without even the
// key group's hash. Other keys are set and looked up as acc.Value and
// acc.Update would.
func (o *reduceOp[K, T]) reduceHeap(t *typedstore.Table[T], k K, v T) T {
	if x, ok := o.core.Word(k); ok {
		e := t.MemoWord(x)
		if e == nil {
			e = t.OwnedWord(o.core.WordGroup(x), x)
		}
		if e != nil {
			v = o.f(e.Val, v)
			e.Val = v
			return v
		}
	}
	o.core.SetKey(k)
	if e := t.Lookup(); e != nil {
		v = o.f(e.Val, v)
	}
	e, _ := t.Upsert()
	e.Val = v
	return v
}

// ProcessBatch implements operator.BatchInput: like mapOp, the whole batch
// is reduced (each element's key set, its accumulator read and updated, in
// order) before its updated values go on as one batch. Other modes and
// backends take the elements one by one.
func (o *reduceOp[K, T]) ProcessBatch(vs []T, ts int64) {
	t := o.table
	if t == nil || o.outBatch == nil {
		for _, v := range vs {
			o.ProcessElement(v, ts)
		}
		return
	}
	if cap(o.buf) < len(vs) {
		o.buf = make([]T, len(vs))
	}
	buf, key, f, core := o.buf[:len(vs)], o.key, o.f, o.core
	o.ctx.Enter()
	for i, v := range vs {
		// reduceHeap's first step here, where it inlines: most elements
		// end with it.
		k := key(v)
		if x, ok := core.Word(k); ok {
			if e := t.MemoWord(x); e != nil {
				v = f(e.Val, v)
				e.Val = v
				buf[i] = v
				continue
			}
		}
		buf[i] = o.reduceHeap(t, k, v)
	}
	o.outBatch.ProcessBatch(buf, ts)
	if o.clear {
		clear(buf)
	}
}

func (o *reduceOp[K, T]) ProcessWatermark(wm int64) { o.out.ProcessWatermark(wm) }

func (o *reduceOp[K, T]) Finish() error {
	for _, v := range o.vals {
		o.out.ProcessElement(v, NoTimestamp)
	}
	return nil
}

func (o *reduceOp[K, T]) Close() error { return nil }

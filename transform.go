package weir

import (
	"fmt"
	"github.com/weirhq/weir/failure"
	"reflect"
	"unsafe"

	"github.com/weirhq/weir/codec"

	"github.com/weirhq/weir/internal/graph"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/shortkey"
)

// Map applies f to every element.
func Map[T, U any](s DataStream[T], f func(T) U) DataStream[U] {
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		o := out.(operator.Input[U])
		op := &mapOp[T, U]{f: f, out: o, batch: operator.AsBatch(o), ctx: ctx, clear: !operator.PointerFree[U]()}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[U](s.env, addNode[U](s.env, "Map", fac, false, s.ends))
}

// FlatMap calls f for every element; f emits any number of elements.
func FlatMap[T, U any](s DataStream[T], f func(v T, out Collector[U])) DataStream[U] {
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		o := out.(operator.Input[U])
		op := &flatMapOp[T, U]{f: f, col: collector[U]{out: o, ctx: ctx}}
		if b := operator.AsBatch(o); b != nil {
			op.bcol = batchCollector[U]{out: b, ctx: ctx, buf: make([]U, 0, flatMapBatch), clear: !operator.PointerFree[U]()}
		}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[U](s.env, addNode[U](s.env, "FlatMap", fac, false, s.ends))
}

// Filter keeps the elements for which f is true.
func Filter[T any](s DataStream[T], f func(T) bool) DataStream[T] {
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		o := out.(operator.Input[T])
		op := &filterOp[T]{f: f, out: o, batch: operator.AsBatch(o), ctx: ctx, clear: !operator.PointerFree[T]()}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[T](s.env, addNode[T](s.env, "Filter", fac, false, s.ends))
}

// Process runs a process function over every element. If fn implements
// Opener, Closer or Finisher, those are called too.
func Process[T, U any](s DataStream[T], fn ProcessFunction[T, U]) DataStream[U] {
	checkHooks(s.env, "Process", fn, processHooks[U]())
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		f := instanceOf(fn)
		op := &processOp[T, U]{fnHooks: fnHooks{f}, fn: f, col: collector[U]{out: out.(operator.Input[U]), ctx: ctx}}
		op.pctx.runtimeContext = runtimeContext{ctx}
		return operator.Instance{Op: op, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[U](s.env, addNode[U](s.env, "Process", fac, false, s.ends))
}

// Union merges streams of the same type into one.
func Union[T any](s DataStream[T], others ...DataStream[T]) DataStream[T] {
	ends := append([]end(nil), s.ends...)
	for _, o := range others {
		if o.env != s.env {
			s.env.fail(fmt.Errorf("weir: Union of streams from different environments"))
		}
		ends = append(ends, o.ends...)
	}
	return DataStream[T]{env: s.env, ends: ends}
}

// KeyedStream is a stream partitioned by a key: all elements with the same
// key go to the same subtask, which owns the key's key group.
type KeyedStream[K comparable, T any] struct {
	DataStream[T]
	key      func(T) K
	keyCodec codec.Codec[K]
	codecErr error // why K has no derived codec; reported by keyed state users
}

// KeyBy partitions a stream by the key that key returns. Keyed state stores
// keys with a codec derived from K (see KeyByWithCodec).
func KeyBy[T any, K comparable](s DataStream[T], key func(T) K) KeyedStream[K, T] {
	c, err := codec.For[K]()
	ks := KeyByWithCodec(s, key, c)
	ks.codecErr = err // only keyed state needs the key's codec: fail there
	return ks
}

// KeyByWithCodec is KeyBy with the codec that keyed state uses for keys.
func KeyByWithCodec[T any, K comparable](s DataStream[T], key func(T) K, c codec.Codec[K]) KeyedStream[K, T] {
	keyed := s.repartition(graph.Hash, keySelector(key))
	return KeyedStream[K, T]{DataStream: keyed, key: key, keyCodec: c}
}

// defaultBatchStateMemory is Config.BatchStateMemory's default.
const defaultBatchStateMemory = 1 << 30

// batchKeyOverhead is what Config.BatchStateMemory counts for a batch
// Reduce's table per key besides the key and the value: a Go map's entry
// overhead, or an index slot's, and the slack of growing slices.
const batchKeyOverhead = 32

// Reduce combines the elements of each key with f. In streaming mode it emits
// the updated value after every element (a rolling reduce); in batch mode it
// emits the final value of each key at the end of input.
func Reduce[K comparable, T any](ks KeyedStream[K, T], f func(acc, v T) T) DataStream[T] {
	valueCodec, valueErr := codec.For[T]()
	fac := operator.FactoryFunc(func(ctx *operator.Context, out any) (operator.Instance, error) {
		op := &reduceOp[K, T]{f: f, key: ks.key, out: out.(operator.Input[T]), ctx: ctx}
		if ctx.Mode == operator.Batch {
			switch op.memLimit = ks.env.cfg.BatchStateMemory; {
			case op.memLimit == 0:
				op.memLimit = defaultBatchStateMemory
			case op.memLimit < 0:
				return operator.Instance{}, fmt.Errorf("Config.BatchStateMemory is %d bytes: want a positive number, or 0 for the default (%d)", op.memLimit, defaultBatchStateMemory)
			}
			op.perKey = int64(unsafe.Sizeof(*new(K))+unsafe.Sizeof(*new(T))) + batchKeyOverhead
			if reflect.TypeFor[K]().Kind() == reflect.String {
				op.strs = new(shortkey.Index)
			} else {
				op.batch = map[K]int{}
			}
		} else {
			if ks.keyCodec == nil {
				return operator.Instance{}, failure.Permanent(fmt.Errorf("a streaming reduce keeps keyed state and needs a codec for the key: %w (use KeyByWithCodec)", ks.codecErr))
			}
			if valueErr != nil {
				return operator.Instance{}, failure.Permanent(fmt.Errorf("a streaming reduce keeps keyed state and needs a codec for its values: %w", valueErr))
			}
			op.keyCodec, op.valueCodec = ks.keyCodec, valueCodec
			op.outBatch, op.clear = operator.AsBatch(op.out), !operator.PointerFree[T]()
		}
		return operator.Instance{Op: op, Keyed: op.batch == nil, Inputs: []any{operator.Input[T](op)}}, nil
	})
	return newStream[T](ks.env, addNode[T](ks.env, "Reduce", fac, false, ks.ends))
}

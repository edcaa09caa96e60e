package state

import (
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/valuecopy"
)

// GetValueState returns the value state described by d.
func GetValueState[V any](s KeyedStore, d ValueDescriptor[V]) ValueState[V] {
	meta := stateMeta(d.Name, snapshot.KindValue, d.TTL, codecID[V](d.Codec))
	d.Codec = codecFor(d.Codec, d.Name, "Codec")
	meta.Schema = schemaOf(d.Codec)
	return register(s, meta, evolveOne(meta, part[V]{"value", d.Codec, meta.Schema}), func(b spi.Backend) (ValueState[V], error) {
		if hs, ok := b.(*typedstore.Store); ok {
			return newHeapCell(hs, meta, d.Codec)
		}
		t, err := serialized(b)
		if err != nil {
			return nil, err
		}
		return &kvCell[V]{t: t, meta: meta, codec: d.Codec, ttl: newTTL(meta, b.Now)}, nil
	})
}

// newHeapCell returns a single value per key in the heap backend: ValueState,
// and the accumulator of reducing and aggregating states. Without TTL the
// table holds the value alone, with TTL the value and its timestamp: the
// heap backend's speed is bound by the size of its table entries once the
// tables leave the caches, so states without TTL do not carry one.
//
// A value that can be changed in place (valuecopy.Mutable) is copied
// through its codec on the first write after a snapshot began, and Value
// hands out only such an unshared copy: user code may change what it read.
func newHeapCell[V any](s *typedstore.Store, meta snapshot.StateMeta, c codec.Codec[V]) (cell[V], error) {
	clone := valuecopy.Func(c)
	if meta.HasTTL() {
		return newHeapTTLCell(s, meta, c, clone)
	}
	h := &heapCell[V]{mut: clone != nil}
	if clone == nil {
		clone = func(v V) V { return v }
	}
	t, err := typedstore.NewTable(s, meta, typedstore.Ops[V]{
		Clone: clone,
		Emit: func(e *typedstore.Entry[V], _ int64, scratch *[]byte, emit typedstore.Emit) error {
			*scratch = c.AppendEncode((*scratch)[:0], e.Val)
			return emit(nil, false, *scratch, false, 0)
		},
		Restore: func(e *typedstore.Entry[V], se snapshot.Entry, _ bool) error {
			v, _, err := c.Decode(se.Value)
			e.Val = v
			return err
		},
	})
	h.t = t
	return h, err
}

// heapCell is a heap cell without TTL.
type heapCell[V any] struct {
	t   *typedstore.Table[V]
	mut bool // V can be changed in place: Value returns an unshared value
}

func (h *heapCell[V]) Value() (V, bool) {
	if e := h.t.Lookup(); e != nil {
		if h.mut {
			e = h.t.Writable(e)
		}
		return e.Val, true
	}
	var zero V
	return zero, false
}

func (h *heapCell[V]) valueForUpdate() (V, bool) {
	if e := h.t.Lookup(); e != nil {
		return h.t.Writable(e).Val, true
	}
	var zero V
	return zero, false
}

func (h *heapCell[V]) Update(v V) {
	e, _ := h.t.Upsert()
	e.Val = v
}

func (h *heapCell[V]) Clear() { h.t.Delete() }

// TypedTable implements spi.DirectTable: the cell's accessors add nothing
// to its table's.
func (h *heapCell[V]) TypedTable() *typedstore.Table[V] { return h.t }

var _ spi.DirectTable[int] = (*heapCell[int])(nil)

// timed is a value with the time of its last write (or read, for
// OnReadAndWrite), for TTL.
type timed[V any] struct {
	v  V
	ts int64
}

// heapTTLCell is a heap cell with TTL.
type heapTTLCell[V any] struct {
	t   *typedstore.Table[timed[V]]
	ttl ttlPolicy
	mut bool // as heapCell's
}

// newHeapTTLCell is newHeapCell with TTL; clone is nil for a value that
// cannot be changed in place.
func newHeapTTLCell[V any](s *typedstore.Store, meta snapshot.StateMeta, c codec.Codec[V], clone func(V) V) (*heapTTLCell[V], error) {
	h := &heapTTLCell[V]{ttl: newTTL(meta, s.Now), mut: clone != nil}
	if clone == nil {
		clone = func(v V) V { return v }
	}
	t, err := typedstore.NewTable(s, meta, typedstore.Ops[timed[V]]{
		Clone: func(e timed[V]) timed[V] { return timed[V]{v: clone(e.v), ts: e.ts} },
		Emit: func(e *typedstore.Entry[timed[V]], now int64, scratch *[]byte, emit typedstore.Emit) error {
			if h.ttl.expired(e.Val.ts, now) {
				return nil
			}
			*scratch = c.AppendEncode((*scratch)[:0], e.Val.v)
			return emit(nil, false, *scratch, true, e.Val.ts)
		},
		Restore: func(e *typedstore.Entry[timed[V]], se snapshot.Entry, restoredTTL bool) error {
			v, _, err := c.Decode(se.Value)
			if err != nil {
				return err
			}
			e.Val = timed[V]{v: v, ts: restoredTS(se, restoredTTL, s.Now)}
			return nil
		},
	})
	h.t = t
	return h, err
}

// restoredTS is the TTL timestamp of a restored entry: its own, or the
// restore time if the snapshot's state had no TTL.
func restoredTS(se snapshot.Entry, restoredTTL bool, now func() int64) int64 {
	if restoredTTL && se.HasTS {
		return se.TS
	}
	return now()
}

func (h *heapTTLCell[V]) Value() (V, bool) {
	e := h.t.Lookup()
	if e == nil {
		var zero V
		return zero, false
	}
	now := h.ttl.now()
	if h.ttl.expired(e.Val.ts, now) {
		h.t.Delete()
		var zero V
		return zero, false
	}
	if h.ttl.onRead || h.mut {
		e = h.t.Writable(e)
	}
	if h.ttl.onRead {
		e.Val.ts = now
	}
	return e.Val.v, true
}

func (h *heapTTLCell[V]) valueForUpdate() (V, bool) {
	v, ok := h.Value()
	if !ok {
		return v, false
	}
	return h.t.Writable(h.t.Lookup()).Val.v, true
}

func (h *heapTTLCell[V]) Update(v V) {
	e, _ := h.t.Upsert()
	e.Val = timed[V]{v: v, ts: h.ttl.now()}
}

func (h *heapTTLCell[V]) Clear() { h.t.Delete() }

// kvCell is a single value per key in a serialized backend.
type kvCell[V any] struct {
	t     spi.KVTable
	meta  snapshot.StateMeta
	codec codec.Codec[V]
	ttl   ttlPolicy
	buf   []byte
}

func (h *kvCell[V]) Value() (V, bool) {
	var zero V
	b, ts, ok, err := h.t.Get(nil)
	if err != nil {
		fail(h.meta.Name, "get", err)
	}
	if !ok {
		return zero, false
	}
	now := h.ttl.clock()
	if h.ttl.expired(ts, now) {
		h.Clear()
		return zero, false
	}
	v, _, err := h.codec.Decode(b)
	if err != nil {
		fail(h.meta.Name, "decode", err)
	}
	if h.ttl.ttl > 0 && h.ttl.onRead {
		h.Update(v)
	}
	return v, true
}

func (h *kvCell[V]) valueForUpdate() (V, bool) { return h.Value() }

func (h *kvCell[V]) Update(v V) {
	h.buf = h.codec.AppendEncode(h.buf[:0], v)
	if err := h.t.Set(nil, h.buf, h.ttl.clock()); err != nil {
		fail(h.meta.Name, "put", err)
	}
}

func (h *kvCell[V]) Clear() {
	if err := h.t.Delete(nil); err != nil {
		fail(h.meta.Name, "delete", err)
	}
}

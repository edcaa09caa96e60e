package state

import (
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/heap"
)

// GetValueState returns the value state described by d.
func GetValueState[V any](s KeyedStore, d ValueDescriptor[V]) ValueState[V] {
	meta := stateMeta(d.Name, snapshot.KindValue, d.TTL)
	need(d.Codec != nil, d.Name, "Codec")
	return register(s, meta, func(b Backend) (ValueState[V], error) {
		if b.Heap != nil {
			return newHeapCell(b.Heap, meta, d.Codec, func(v V) V { return v })
		}
		return &kvCell[V]{t: b.KV, meta: meta, codec: d.Codec, ttl: newTTL(meta, b.Now)}, nil
	})
}

// heapCell is a single value per key in the heap backend: ValueState, and the
// accumulator of reducing and aggregating states.
type heapCell[V any] struct {
	t     *heap.Table[V]
	ttl   ttlPolicy
	codec codec.Codec[V]
}

func newHeapCell[V any](s *heap.Store, meta snapshot.StateMeta, c codec.Codec[V], clone func(V) V) (*heapCell[V], error) {
	h := &heapCell[V]{ttl: newTTL(meta, s.Now), codec: c}
	t, err := heap.NewTable(s, meta, heap.Ops[V]{
		Clone: clone,
		Emit: func(e *heap.Entry[V], now int64, scratch *[]byte, emit heap.Emit) error {
			if h.ttl.expired(e.TS, now) {
				return nil
			}
			*scratch = c.AppendEncode((*scratch)[:0], e.Val)
			return emit(nil, false, *scratch, h.ttl.ttl > 0, e.TS)
		},
		Restore: func(e *heap.Entry[V], se snapshot.Entry, restoredTTL bool) error {
			v, _, err := c.Decode(se.Value)
			if err != nil {
				return err
			}
			e.Val, e.TS = v, restoredTS(se, restoredTTL, s.Now)
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

// codecClone copies a value through its codec, for accumulators that user
// functions may mutate in place.
func codecClone[V any](c codec.Codec[V]) func(V) V {
	return func(v V) V {
		out, _, err := c.Decode(c.AppendEncode(nil, v))
		if err != nil {
			panic("state: codec cannot decode its own encoding: " + err.Error())
		}
		return out
	}
}

func (h *heapCell[V]) Value() (V, bool) {
	e := h.t.Lookup()
	if e == nil {
		var zero V
		return zero, false
	}
	if h.ttl.ttl > 0 {
		now := h.ttl.now()
		if h.ttl.expired(e.TS, now) {
			h.t.Delete()
			var zero V
			return zero, false
		}
		if h.ttl.onRead {
			h.t.Writable(e).TS = now
		}
	}
	return e.Val, true
}

func (h *heapCell[V]) valueForUpdate() (V, bool) {
	v, ok := h.Value()
	if !ok {
		return v, false
	}
	return h.t.Writable(h.t.Lookup()).Val, true
}

func (h *heapCell[V]) Update(v V) {
	e := h.t.Lookup()
	if e == nil {
		e = h.t.Insert()
	} else {
		e = h.t.Writable(e)
	}
	e.Val = v
	if h.ttl.ttl > 0 {
		e.TS = h.ttl.now()
	}
}

func (h *heapCell[V]) Clear() { h.t.Delete() }

// kvCell is a single value per key in a serialized backend.
type kvCell[V any] struct {
	t     KVTable
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

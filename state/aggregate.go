package state

import (
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
)

// cell is the single stored accumulator under reducing and aggregating states.
type cell[V any] interface {
	Value() (V, bool)
	// valueForUpdate is Value for a read-modify-write: the returned value
	// is not shared with a snapshot, so Reduce/Add may mutate it.
	valueForUpdate() (V, bool)
	Update(V)
	Clear()
}

// GetReducingState returns the reducing state described by d.
func GetReducingState[V any](s KeyedStore, d ReducingDescriptor[V]) ReducingState[V] {
	meta := stateMeta(d.Name, snapshot.KindReducing, d.TTL, codecID[V](d.Codec))
	d.Codec = codecFor(d.Codec, d.Name, "Codec")
	need(d.Reduce != nil, d.Name, "Reduce function")
	meta.Schema = schemaOf(d.Codec)
	return register(s, meta, evolveOne(meta, part[V]{"value", d.Codec, meta.Schema}), func(b spi.Backend) (ReducingState[V], error) {
		var c cell[V]
		if hs, ok := b.(*typedstore.Store); ok {
			hc, err := newHeapCell(hs, meta, d.Codec)
			if err != nil {
				return nil, err
			}
			c = hc
		} else {
			t, err := serialized(b)
			if err != nil {
				return nil, err
			}
			c = &kvCell[V]{t: t, meta: meta, codec: d.Codec, ttl: newTTL(meta, b.Now)}
		}
		return &reducing[V]{c: c, reduce: d.Reduce}, nil
	})
}

type reducing[V any] struct {
	c      cell[V]
	reduce func(a, b V) V
}

func (r *reducing[V]) Get() (V, bool) { return r.c.Value() }
func (r *reducing[V]) Clear()         { r.c.Clear() }
func (r *reducing[V]) Add(v V) {
	if old, ok := r.c.valueForUpdate(); ok {
		v = r.reduce(old, v)
	}
	r.c.Update(v)
}

// GetAggregatingState returns the aggregating state described by d.
func GetAggregatingState[IN, ACC, OUT any](s KeyedStore, d AggregatingDescriptor[IN, ACC, OUT]) AggregatingState[IN, OUT] {
	meta := stateMeta(d.Name, snapshot.KindAggregating, d.TTL, codecID[ACC](d.AccCodec))
	d.AccCodec = codecFor(d.AccCodec, d.Name, "AccCodec")
	need(d.Create != nil && d.Add != nil && d.Result != nil, d.Name, "Create, Add and Result functions")
	meta.Schema = schemaOf(d.AccCodec)
	return register(s, meta, evolveOne(meta, part[ACC]{"accumulator", d.AccCodec, meta.Schema}), func(b spi.Backend) (AggregatingState[IN, OUT], error) {
		var c cell[ACC]
		if hs, ok := b.(*typedstore.Store); ok {
			hc, err := newHeapCell(hs, meta, d.AccCodec)
			if err != nil {
				return nil, err
			}
			c = hc
		} else {
			t, err := serialized(b)
			if err != nil {
				return nil, err
			}
			c = &kvCell[ACC]{t: t, meta: meta, codec: d.AccCodec, ttl: newTTL(meta, b.Now)}
		}
		return &aggregating[IN, ACC, OUT]{c: c, d: d}, nil
	})
}

type aggregating[IN, ACC, OUT any] struct {
	c cell[ACC]
	d AggregatingDescriptor[IN, ACC, OUT]
}

func (a *aggregating[IN, ACC, OUT]) Get() (OUT, bool) {
	acc, ok := a.c.Value()
	if !ok {
		var zero OUT
		return zero, false
	}
	return a.d.Result(acc), true
}

func (a *aggregating[IN, ACC, OUT]) Clear() { a.c.Clear() }

func (a *aggregating[IN, ACC, OUT]) Add(in IN) {
	acc, ok := a.c.valueForUpdate()
	if !ok {
		acc = a.d.Create()
	}
	a.c.Update(a.d.Add(in, acc))
}

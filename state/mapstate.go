package state

import (
	"fmt"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"iter"
	"maps"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/valuecopy"
)

// GetMapState returns the map state described by d.
func GetMapState[UK comparable, UV any](s KeyedStore, d MapDescriptor[UK, UV]) MapState[UK, UV] {
	meta := stateMeta(d.Name, snapshot.KindMap, d.TTL, codecID[UK](d.UserKeyCodec)+" -> "+codecID[UV](d.ValueCodec))
	d.UserKeyCodec = codecFor(d.UserKeyCodec, d.Name, "UserKeyCodec")
	d.ValueCodec = codecFor(d.ValueCodec, d.Name, "ValueCodec")
	meta.Schema, meta.KeySchema = schemaOf(d.ValueCodec), schemaOf(d.UserKeyCodec)
	evolve := evolveTwo(meta, part[UK]{"user key", d.UserKeyCodec, meta.KeySchema}, part[UV]{"value", d.ValueCodec, meta.Schema})
	return register(s, meta, evolve, func(b spi.Backend) (MapState[UK, UV], error) {
		if hs, ok := b.(*typedstore.Store); ok {
			if intKeyed[UK]() {
				return newHeapIntMap(hs, meta, d)
			}
			return newHeapMap(hs, meta, d)
		}
		t, err := serialized(b)
		if err != nil {
			return nil, err
		}
		return &kvMap[UK, UV]{t: t, meta: meta, d: d, ttl: newTTL(meta, b.Now)}, nil
	})
}

type mapElem[UV any] struct {
	v  UV
	ts int64
}

type heapMap[UK comparable, UV any] struct {
	t   *typedstore.Table[map[UK]mapElem[UV]]
	ttl ttlPolicy
	mut bool // UV can be changed in place: reads see an unshared entry
}

func newHeapMap[UK comparable, UV any](s *typedstore.Store, meta snapshot.StateMeta, d MapDescriptor[UK, UV]) (*heapMap[UK, UV], error) {
	h := &heapMap[UK, UV]{ttl: newTTL(meta, s.Now)}
	clone := maps.Clone[map[UK]mapElem[UV]]
	if cp := valuecopy.Func(d.ValueCodec); cp != nil {
		// Values that can be changed in place are copied too.
		h.mut = true
		clone = func(m map[UK]mapElem[UV]) map[UK]mapElem[UV] {
			out := make(map[UK]mapElem[UV], len(m))
			for k, el := range m {
				out[k] = mapElem[UV]{v: cp(el.v), ts: el.ts}
			}
			return out
		}
	}
	t, err := typedstore.NewTable(s, meta, typedstore.Ops[map[UK]mapElem[UV]]{
		Clone: clone,
		Emit: func(e *typedstore.Entry[map[UK]mapElem[UV]], now int64, scratch *[]byte, emit typedstore.Emit) error {
			for k, el := range e.Val {
				if h.ttl.expired(el.ts, now) {
					continue
				}
				b := d.UserKeyCodec.AppendEncode((*scratch)[:0], k)
				n := len(b)
				b = d.ValueCodec.AppendEncode(b, el.v)
				*scratch = b
				if err := emit(b[:n:n], true, b[n:], h.ttl.ttl > 0, el.ts); err != nil {
					return err
				}
			}
			return nil
		},
		Restore: func(e *typedstore.Entry[map[UK]mapElem[UV]], se snapshot.Entry, restoredTTL bool) error {
			k, v, err := decodeMapEntry(d, se)
			if err != nil {
				return err
			}
			if e.Val == nil {
				e.Val = map[UK]mapElem[UV]{}
			}
			e.Val[k] = mapElem[UV]{v: v, ts: restoredTS(se, restoredTTL, s.Now)}
			return nil
		},
	})
	h.t = t
	return h, err
}

func (h *heapMap[UK, UV]) Get(k UK) (UV, bool) {
	var zero UV
	e := h.t.Lookup()
	if e == nil {
		return zero, false
	}
	if h.mut {
		e = h.t.Writable(e)
	}
	el, ok := e.Val[k]
	if !ok {
		return zero, false
	}
	if h.ttl.ttl > 0 {
		now := h.ttl.now()
		if h.ttl.expired(el.ts, now) {
			h.Remove(k)
			return zero, false
		}
		if h.ttl.onRead {
			h.t.Writable(e).Val[k] = mapElem[UV]{v: el.v, ts: now}
		}
	}
	return el.v, true
}

func (h *heapMap[UK, UV]) Put(k UK, v UV) {
	e, inserted := h.t.Upsert()
	if inserted {
		e.Val = map[UK]mapElem[UV]{}
	}
	e.Val[k] = mapElem[UV]{v: v, ts: h.ttl.clock()}
}

func (h *heapMap[UK, UV]) Remove(k UK) {
	e := h.t.Lookup()
	if e == nil {
		return
	}
	if _, ok := e.Val[k]; !ok {
		return
	}
	if len(e.Val) == 1 {
		h.t.Delete()
		return
	}
	delete(h.t.Writable(e).Val, k)
}

func (h *heapMap[UK, UV]) Contains(k UK) bool {
	_, ok := h.Get(k)
	return ok
}

// live returns the entry's map after dropping expired elements (nil if none is left).
func (h *heapMap[UK, UV]) live(touch bool) map[UK]mapElem[UV] {
	e := h.t.Lookup()
	if e != nil && h.mut && touch {
		e = h.t.Writable(e) // All hands out values that may be changed
	}
	if e == nil || h.ttl.ttl == 0 {
		if e == nil {
			return nil
		}
		return e.Val
	}
	now := h.ttl.now()
	var dead []UK
	for k, el := range e.Val {
		if h.ttl.expired(el.ts, now) {
			dead = append(dead, k)
		}
	}
	if len(dead) == len(e.Val) {
		h.t.Delete()
		return nil
	}
	if len(dead) > 0 || (touch && h.ttl.onRead) {
		e = h.t.Writable(e)
		for _, k := range dead {
			delete(e.Val, k)
		}
		if touch && h.ttl.onRead {
			for k, el := range e.Val {
				e.Val[k] = mapElem[UV]{v: el.v, ts: now}
			}
		}
	}
	return e.Val
}

func (h *heapMap[UK, UV]) All() iter.Seq2[UK, UV] {
	return func(yield func(UK, UV) bool) {
		for k, el := range h.live(true) {
			if !yield(k, el.v) {
				return
			}
		}
	}
}

func (h *heapMap[UK, UV]) Keys() iter.Seq[UK] {
	return func(yield func(UK) bool) {
		for k := range h.live(true) {
			if !yield(k) {
				return
			}
		}
	}
}

func (h *heapMap[UK, UV]) IsEmpty() bool { return len(h.live(false)) == 0 }

func (h *heapMap[UK, UV]) Clear() { h.t.Delete() }

type kvMap[UK comparable, UV any] struct {
	t    spi.KVTable
	meta snapshot.StateMeta
	d    MapDescriptor[UK, UV]
	ttl  ttlPolicy
	kbuf []byte
	vbuf []byte
}

func (h *kvMap[UK, UV]) key(k UK) []byte {
	h.kbuf = h.d.UserKeyCodec.AppendEncode(h.kbuf[:0], k)
	return h.kbuf
}

func (h *kvMap[UK, UV]) Get(k UK) (UV, bool) {
	var zero UV
	uk := h.key(k)
	b, ts, ok, err := h.t.Get(uk)
	if err != nil {
		fail(h.meta.Name, "get", err)
	}
	if !ok {
		return zero, false
	}
	now := h.ttl.clock()
	if h.ttl.expired(ts, now) {
		if err := h.t.Delete(uk); err != nil {
			fail(h.meta.Name, "delete", err)
		}
		return zero, false
	}
	v, _, err := h.d.ValueCodec.Decode(b)
	if err != nil {
		fail(h.meta.Name, "decode", err)
	}
	if h.ttl.ttl > 0 && h.ttl.onRead {
		h.Put(k, v)
	}
	return v, true
}

func (h *kvMap[UK, UV]) Put(k UK, v UV) {
	h.vbuf = h.d.ValueCodec.AppendEncode(h.vbuf[:0], v)
	if err := h.t.Set(h.key(k), h.vbuf, h.ttl.clock()); err != nil {
		fail(h.meta.Name, "put", err)
	}
}

func (h *kvMap[UK, UV]) Remove(k UK) {
	if err := h.t.Delete(h.key(k)); err != nil {
		fail(h.meta.Name, "delete", err)
	}
}

func (h *kvMap[UK, UV]) Contains(k UK) bool {
	_, ok := h.Get(k)
	return ok
}

// scan yields the live entries, decoded, and removes the expired ones. It
// streams from the backend's iterator, which reads a consistent view of the
// state as of the scan's start: fn may write to this or any other state
// (with a TTL refreshed on read, scan itself does), and the scan neither
// sees those writes nor is disturbed by them. Memory stays bounded by one
// entry however large the map.
func (h *kvMap[UK, UV]) scan(decodeValue, touch bool, fn func(UK, UV) bool) {
	now := h.ttl.clock()
	refresh := touch && h.ttl.ttl > 0 && h.ttl.onRead
	var derr error
	err := h.t.Scan(func(ukb, vb []byte, ts int64) bool {
		if h.ttl.expired(ts, now) {
			if derr = h.t.Delete(ukb); derr != nil {
				derr = fmt.Errorf("delete: %w", derr)
				return false
			}
			return true
		}
		k, _, err := h.d.UserKeyCodec.Decode(ukb)
		if err != nil {
			derr = fmt.Errorf("decode: %w", err)
			return false
		}
		var v UV
		if decodeValue || refresh {
			if v, _, err = h.d.ValueCodec.Decode(vb); err != nil {
				derr = fmt.Errorf("decode: %w", err)
				return false
			}
		}
		if refresh {
			h.vbuf = h.d.ValueCodec.AppendEncode(h.vbuf[:0], v)
			if derr = h.t.Set(ukb, h.vbuf, now); derr != nil {
				derr = fmt.Errorf("refresh: %w", derr)
				return false
			}
		}
		return fn(k, v)
	})
	if err != nil {
		fail(h.meta.Name, "scan", err)
	}
	if derr != nil {
		fail(h.meta.Name, "scan", derr)
	}
}

func (h *kvMap[UK, UV]) All() iter.Seq2[UK, UV] {
	return func(yield func(UK, UV) bool) { h.scan(true, true, yield) }
}

func (h *kvMap[UK, UV]) Keys() iter.Seq[UK] {
	return func(yield func(UK) bool) {
		h.scan(false, true, func(k UK, _ UV) bool { return yield(k) })
	}
}

func (h *kvMap[UK, UV]) IsEmpty() bool {
	empty := true
	h.scan(false, false, func(UK, UV) bool { empty = false; return false })
	return empty
}

func (h *kvMap[UK, UV]) Clear() {
	if err := h.t.DeleteAll(); err != nil {
		fail(h.meta.Name, "clear", err)
	}
}

// decodeMapEntry decodes a map state's snapshot entry: its user key and
// value.
func decodeMapEntry[UK comparable, UV any](d MapDescriptor[UK, UV], se snapshot.Entry) (UK, UV, error) {
	k, _, err := d.UserKeyCodec.Decode(se.UserKey)
	if err != nil {
		var v UV
		return k, v, err
	}
	v, _, err := d.ValueCodec.Decode(se.Value)
	return k, v, err
}

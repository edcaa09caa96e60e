package state

import (
	"slices"
	"unsafe"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/prefetch"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/internal/valuecopy"
)

// GetListState returns the list state described by d.
func GetListState[V any](s KeyedStore, d ListDescriptor[V]) ListState[V] {
	meta := stateMeta(d.Name, snapshot.KindList, d.TTL, codecID[V](d.Codec))
	d.Codec = codecFor(d.Codec, d.Name, "Codec")
	meta.Schema = schemaOf(d.Codec)
	return register(s, meta, evolveOne(meta, part[V]{"list element", d.Codec, meta.Schema}), func(b spi.Backend) (ListState[V], error) {
		if hs, ok := b.(*typedstore.Store); ok {
			return newHeapList(hs, meta, d.Codec)
		}
		t, err := serialized(b)
		if err != nil {
			return nil, err
		}
		return &kvList[V]{t: t, meta: meta, codec: d.Codec, ttl: newTTL(meta, b.Now)}, nil
	})
}

type listElem[V any] struct {
	v  V
	ts int64
}

type heapList[V any] struct {
	t   *typedstore.Table[[]listElem[V]]
	ttl ttlPolicy
	mut bool // V can be changed in place: Get reads an unshared entry
}

func newHeapList[V any](s *typedstore.Store, meta snapshot.StateMeta, c codec.Codec[V]) (*heapList[V], error) {
	h := &heapList[V]{ttl: newTTL(meta, s.Now)}
	_, strs := any((*V)(nil)).(*string) // decided once, not per entry
	clone := slices.Clone[[]listElem[V]]
	if cp := valuecopy.Func(c); cp != nil {
		// Elements that can be changed in place are copied too.
		h.mut = true
		clone = func(l []listElem[V]) []listElem[V] {
			out := make([]listElem[V], len(l))
			for i, el := range l {
				out[i] = listElem[V]{v: cp(el.v), ts: el.ts}
			}
			return out
		}
	}
	t, err := typedstore.NewTable(s, meta, typedstore.Ops[[]listElem[V]]{
		Clone: clone,
		Emit: func(e *typedstore.Entry[[]listElem[V]], now int64, scratch *[]byte, emit typedstore.Emit) error {
			for i, el := range e.Val {
				if strs { // V is string
					prefetchString(*(*[]listElem[string])(unsafe.Pointer(&e.Val)), i+stringsAhead)
				}
				if h.ttl.expired(el.ts, now) {
					continue
				}
				*scratch = c.AppendEncode((*scratch)[:0], el.v)
				if err := emit(nil, false, *scratch, h.ttl.ttl > 0, el.ts); err != nil {
					return err
				}
			}
			return nil
		},
		Restore: func(e *typedstore.Entry[[]listElem[V]], se snapshot.Entry, restoredTTL bool) error {
			v, _, err := c.Decode(se.Value)
			if err != nil {
				return err
			}
			e.Val = append(e.Val, listElem[V]{v: v, ts: restoredTS(se, restoredTTL, s.Now)})
			return nil
		},
	})
	h.t = t
	return h, err
}

// stringsAhead is how many elements ahead of the one it encodes a
// snapshot of a list of strings prefetches. Each string is an object of
// its own, somewhere in the heap: encoding the bids q20 keeps (1.7 GB of
// them) waited on a miss per string, 1.7 s of the 3 s of CPU its
// checkpoint took.
const stringsAhead = 4

// prefetchString prefetches the first four cache lines that the bytes of
// s[i].v span, if there is an s[i].
func prefetchString(s []listElem[string], i int) {
	if i >= len(s) {
		return
	}
	var lines [4]uintptr
	p := uintptr(unsafe.Pointer(unsafe.StringData(s[i].v)))
	n := 0
	for l, end := p&^63, p+uintptr(len(s[i].v)); l < end && n < len(lines); l += 64 {
		lines[n] = l
		n++
	}
	prefetch.Lines(lines[:n])
}

func (h *heapList[V]) Get() []V {
	e := h.t.Lookup()
	if e == nil {
		return nil
	}
	if h.mut {
		e = h.t.Writable(e)
	}
	out := make([]V, 0, len(e.Val))
	if h.ttl.ttl == 0 {
		for _, el := range e.Val {
			out = append(out, el.v)
		}
		return out
	}
	now := h.ttl.now()
	live := e.Val[:0:0]
	for _, el := range e.Val {
		if !h.ttl.expired(el.ts, now) {
			out = append(out, el.v)
			if h.ttl.onRead {
				el.ts = now
			}
			live = append(live, el)
		}
	}
	switch {
	case len(live) == 0:
		h.t.Delete()
		return nil
	case len(live) < len(e.Val) || h.ttl.onRead:
		h.t.Writable(e).Val = live // a new slice: the old one may be in a snapshot
	}
	return out
}

func (h *heapList[V]) Add(v V) { h.AddAll([]V{v}) }

func (h *heapList[V]) AddAll(vs []V) {
	if len(vs) == 0 {
		return
	}
	e, _ := h.t.Upsert()
	now := h.ttl.clock()
	for _, v := range vs {
		e.Val = append(e.Val, listElem[V]{v: v, ts: now})
	}
}

func (h *heapList[V]) Update(vs []V) {
	h.t.Delete()
	h.AddAll(vs)
}

func (h *heapList[V]) Clear() { h.t.Delete() }

type kvList[V any] struct {
	t     spi.KVTable
	meta  snapshot.StateMeta
	codec codec.Codec[V]
	ttl   ttlPolicy
	buf   []byte
}

func (h *kvList[V]) Get() []V {
	var out []V
	var keep [][]byte
	var keepTS []int64
	now := h.ttl.clock()
	rewrite := false
	var derr error
	err := h.t.ScanList(func(b []byte, ts int64) bool {
		if h.ttl.expired(ts, now) {
			rewrite = true
			return true
		}
		v, _, err := h.codec.Decode(b)
		if err != nil {
			derr = err
			return false
		}
		out = append(out, v)
		if h.ttl.ttl > 0 {
			keep = append(keep, slices.Clone(b))
			if h.ttl.onRead {
				ts = now
				rewrite = true
			}
			keepTS = append(keepTS, ts)
		}
		return true
	})
	if err != nil {
		fail(h.meta.Name, "get", err)
	}
	if derr != nil {
		fail(h.meta.Name, "decode", derr)
	}
	if rewrite {
		if err := h.t.SetList(keep, keepTS); err != nil {
			fail(h.meta.Name, "put", err)
		}
	}
	return out
}

func (h *kvList[V]) Add(v V) {
	h.buf = h.codec.AppendEncode(h.buf[:0], v)
	if err := h.t.Append(h.buf, h.ttl.clock()); err != nil {
		fail(h.meta.Name, "append", err)
	}
}

func (h *kvList[V]) AddAll(vs []V) {
	for _, v := range vs {
		h.Add(v)
	}
}

func (h *kvList[V]) Update(vs []V) {
	elems := make([][]byte, len(vs))
	ts := make([]int64, len(vs))
	now := h.ttl.clock()
	for i, v := range vs {
		elems[i] = h.codec.AppendEncode(nil, v)
		ts[i] = now
	}
	if err := h.t.SetList(elems, ts); err != nil {
		fail(h.meta.Name, "put", err)
	}
}

func (h *kvList[V]) Clear() {
	if err := h.t.Delete(nil); err != nil {
		fail(h.meta.Name, "delete", err)
	}
}

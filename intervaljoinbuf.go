package weir

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/state"
)

// joinElem is one buffered element of an interval join side on the heap
// backend.
type joinElem[T any] struct {
	ts int64
	v  T
}

// heapJoinSide is one side of an interval join on the heap backend: per key,
// the buffered elements in one slice sorted by timestamp (elements of one
// timestamp in arrival order), held as typed values.
//
// It replaces a MapState[int64, []T] there, whose per-key Go map cost a
// map iteration per element joined (the other side's buckets) and per
// timer (finding the due buckets), an allocated bucket per element and up
// to three table lookups per element: two thirds of the operator's time
// after its timers were made coarse. Sorted by timestamp, the buckets due
// at a timer are a prefix (the cleanup time is the timestamp plus a
// constant of the side) and the earliest cleanup time is the first element.
//
// Its snapshot is the MapState's canonical form, same state name, kind and
// codec identity: one map entry per timestamp, user key the timestamp
// (codec.Int64), value the slice of that timestamp's elements
// (codec.Slice). So checkpoints restore across backends and versions, and
// rescale as any keyed state.
type heapJoinSide[T any] struct {
	t *typedstore.Table[[]joinElem[T]]
}

// heapStoreOf returns the heap store behind a keyed store, or nil for
// another backend.
func heapStoreOf(s state.KeyedStore) *typedstore.Store {
	if h, ok := s.(spi.DirectStore); ok {
		return h.TypedStore()
	}
	return nil
}

// mapStateCodecID is the codec identity state.GetMapState records for a
// MapState[UK, UV] with these codecs (state's codecID, joined by " -> "),
// so that this side's snapshots are that MapState's.
func mapStateCodecID[UK, UV any](uk codec.Codec[UK], uv codec.Codec[UV]) string {
	id := func(t reflect.Type, c any) string {
		s := t.String()
		if v, ok := c.(state.CodecVersioned); ok {
			s += fmt.Sprintf("@v%d", v.CodecVersion())
		}
		return s
	}
	return id(reflect.TypeFor[UK](), uk) + " -> " + id(reflect.TypeFor[UV](), uv)
}

func newHeapJoinSide[T any](s *typedstore.Store, name string, c codec.Codec[T]) (*heapJoinSide[T], error) {
	keyCodec, runCodec := codec.Int64(), codec.Slice(c)
	meta := snapshot.StateMeta{Name: name, Kind: snapshot.KindMap, Codec: mapStateCodecID(keyCodec, runCodec)}
	t, err := typedstore.NewTable(s, meta, typedstore.Ops[[]joinElem[T]]{
		Clone: slices.Clone[[]joinElem[T]],
		Emit: func(e *typedstore.Entry[[]joinElem[T]], _ int64, scratch *[]byte, emit typedstore.Emit) error {
			var run []T // snapshot goroutine: one per entry is fine
			es := e.Val
			for i := 0; i < len(es); {
				j := i + 1
				for j < len(es) && es[j].ts == es[i].ts {
					j++
				}
				run = run[:0]
				for _, el := range es[i:j] {
					run = append(run, el.v)
				}
				b := keyCodec.AppendEncode((*scratch)[:0], es[i].ts)
				n := len(b)
				b = runCodec.AppendEncode(b, run)
				*scratch = b
				if err := emit(b[:n:n], true, b[n:], false, 0); err != nil {
					return err
				}
				i = j
			}
			return nil
		},
		Restore: func(e *typedstore.Entry[[]joinElem[T]], se snapshot.Entry, _ bool) error {
			ts, _, err := keyCodec.Decode(se.UserKey)
			if err != nil {
				return err
			}
			vs, _, err := runCodec.Decode(se.Value)
			if err != nil {
				return err
			}
			for _, v := range vs {
				e.Val = insertSorted(e.Val, ts, v)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &heapJoinSide[T]{t: t}, nil
}

// insertSorted adds (ts, v) after every element with a timestamp <= ts: at
// the end unless elements come out of order.
func insertSorted[T any](es []joinElem[T], ts int64, v T) []joinElem[T] {
	i := len(es)
	for i > 0 && es[i-1].ts > ts {
		i--
	}
	return slices.Insert(es, i, joinElem[T]{ts: ts, v: v})
}

// add buffers v at ts for the current key and says whether the key already
// held elements at ts. It first drops the elements whose cleanup time
// (ts+keep) is below the watermark wm: no join sees them any more (see
// intervalJoinFn.visible; those at wm may still be visible), and an active
// key's buffer so stays as short as Flink's however late its cleanup timer.
func (h *heapJoinSide[T]) add(ts int64, v T, keep, wm int64) (existed bool) {
	e, _ := h.t.Upsert()
	es := e.Val
	if n := len(es); n > 0 && addTs(es[0].ts, keep) < wm {
		d := 1
		for d < n && addTs(es[d].ts, keep) < wm {
			d++
		}
		m := copy(es, es[d:])
		clear(es[m:])
		es = es[:m]
	}
	i := len(es)
	for i > 0 && es[i-1].ts > ts {
		i--
	}
	existed = i > 0 && es[i-1].ts == ts
	if es == nil {
		// A key's buffer empties and is deleted at its timers, and a
		// buffer usually holds a few elements: one allocation, not
		// append's three growing from one element to four.
		es = make([]joinElem[T], 0, 4)
	}
	if i == len(es) {
		e.Val = append(es, joinElem[T]{ts: ts, v: v})
	} else {
		e.Val = slices.Insert(es, i, joinElem[T]{ts: ts, v: v})
	}
	return existed
}

// elems returns the current key's elements (nil if none), to be read only
// until the next change of this side.
func (h *heapJoinSide[T]) elems() []joinElem[T] {
	if e := h.t.Lookup(); e != nil {
		return e.Val
	}
	return nil
}

// removeDue removes the current key's elements with ts+keep <= t (a prefix)
// and returns the earliest cleanup time left, ok false if none is left.
func (h *heapJoinSide[T]) removeDue(t, keep int64) (next int64, ok bool) {
	e := h.t.Lookup()
	if e == nil {
		return 0, false
	}
	es := e.Val
	n := 0
	for n < len(es) && addTs(es[n].ts, keep) <= t {
		n++
	}
	if n == len(es) {
		h.t.Delete()
		return 0, false
	}
	if n > 0 {
		e = h.t.Writable(e)
		// Shift down in place (the array is the entry's own after
		// Writable) and clear the tail, so removed values are not kept
		// alive and the array is reused by later appends.
		m := copy(e.Val, e.Val[n:])
		clear(e.Val[m:])
		e.Val = e.Val[:m]
	}
	return addTs(e.Val[0].ts, keep), true
}

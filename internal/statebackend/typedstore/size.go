package typedstore

import (
	"math"
	"reflect"
	"unsafe"
)

// measure returns the bytes that the value at p points to (not the value
// itself, which its slot holds) and the number of container elements it
// visited to find out.
type measure func(p unsafe.Pointer) (bytes, visited int64)

// measureOf derives, once per table and by reflection, the measure of a
// value of type t. The rule:
//
//   - a type that holds no pointers: nil (nothing to count, nothing done
//     per record);
//   - a string: its length;
//   - a slice: its capacity times the element's size, plus what each
//     element up to its length points to;
//   - an array or a struct: the sum over its elements or fields;
//   - a map: an estimate of its table (mapBytes of its length and its key
//     and element sizes) plus what each key and element points to;
//   - a pointer (to a type that does not contain itself): nothing if nil,
//     else its target's size and what that points to.
//
// Interfaces, functions, channels, unsafe pointers and recursive types
// cannot be measured this way: ok is false, and the table counts such a
// value by the length of its encoding (encodedMeasure).
func measureOf(t reflect.Type) (m measure, ok bool) {
	return measureIn(t, map[reflect.Type]bool{})
}

func measureIn(t reflect.Type, open map[reflect.Type]bool) (measure, bool) {
	if !hasPointers(t) {
		return nil, true
	}
	if open[t] {
		return nil, false // recursive
	}
	open[t] = true
	defer delete(open, t)
	switch t.Kind() {
	case reflect.String:
		return func(p unsafe.Pointer) (int64, int64) { return int64(len(*(*string)(p))), 0 }, true
	case reflect.Slice:
		return sliceMeasure(t, open)
	case reflect.Array:
		em, ok := measureIn(t.Elem(), open)
		if !ok {
			return nil, false
		}
		n, es := t.Len(), t.Elem().Size()
		return func(p unsafe.Pointer) (b, v int64) {
			for i := range n {
				eb, ev := em(unsafe.Add(p, uintptr(i)*es))
				b, v = b+eb, v+ev
			}
			return b, v
		}, true
	case reflect.Struct:
		return structMeasure(t, open)
	case reflect.Map:
		return mapMeasure(t, open)
	case reflect.Pointer:
		em, ok := measureIn(t.Elem(), open)
		if !ok {
			return nil, false
		}
		size := int64(t.Elem().Size())
		return func(p unsafe.Pointer) (int64, int64) {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return 0, 0
			}
			if em == nil {
				return size, 0
			}
			b, v := em(q)
			return size + b, v
		}, true
	}
	return nil, false
}

// shallowOf is the part of measureOf's rule that visits no container
// elements: a slice counts its capacity times its element's size, a map
// its table, and what their elements point to is left out. It costs the
// same for every value of t. t must have a measure.
func shallowOf(t reflect.Type) measure {
	if !hasPointers(t) {
		return func(unsafe.Pointer) (int64, int64) { return 0, 0 }
	}
	switch t.Kind() {
	case reflect.Slice:
		es := int64(t.Elem().Size())
		return func(p unsafe.Pointer) (int64, int64) { return int64((*sliceHeader)(p).cap) * es, 0 }
	case reflect.Map:
		ks, es := t.Key().Size(), t.Elem().Size()
		return func(p unsafe.Pointer) (int64, int64) {
			if *(*unsafe.Pointer)(p) == nil {
				return 0, 0
			}
			return mapBytes(reflect.NewAt(t, p).Elem().Len(), ks, es), 0
		}
	case reflect.Array:
		em, n, es := shallowOf(t.Elem()), t.Len(), t.Elem().Size()
		return func(p unsafe.Pointer) (b, v int64) {
			for i := range n {
				eb, _ := em(unsafe.Add(p, uintptr(i)*es))
				b += eb
			}
			return b, 0
		}
	case reflect.Struct:
		type field struct {
			off uintptr
			m   measure
		}
		var fs []field
		for i := range t.NumField() {
			if f := t.Field(i); hasPointers(f.Type) {
				fs = append(fs, field{f.Offset, shallowOf(f.Type)})
			}
		}
		return func(p unsafe.Pointer) (b, v int64) {
			for _, f := range fs {
				fb, _ := f.m(unsafe.Add(p, f.off))
				b += fb
			}
			return b, 0
		}
	case reflect.Pointer:
		em, size := shallowOf(t.Elem()), int64(t.Elem().Size())
		return func(p unsafe.Pointer) (int64, int64) {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return 0, 0
			}
			b, _ := em(q)
			return size + b, 0
		}
	}
	m, _ := measureOf(t) // a string
	return m
}

// hasPointers says whether a value of type t holds a pointer.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func sliceMeasure(t reflect.Type, open map[reflect.Type]bool) (measure, bool) {
	em, ok := measureIn(t.Elem(), open)
	if !ok {
		return nil, false
	}
	es := t.Elem().Size()
	if em == nil {
		return func(p unsafe.Pointer) (int64, int64) {
			return int64((*sliceHeader)(p).cap) * int64(es), 0
		}, true
	}
	return func(p unsafe.Pointer) (int64, int64) {
		h := (*sliceHeader)(p)
		b, v := int64(h.cap)*int64(es), int64(h.len)
		for i := range h.len {
			eb, ev := em(unsafe.Add(h.data, uintptr(i)*es))
			b, v = b+eb, v+ev
		}
		return b, v
	}, true
}

func structMeasure(t reflect.Type, open map[reflect.Type]bool) (measure, bool) {
	type field struct {
		off uintptr
		m   measure
	}
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		m, ok := measureIn(f.Type, open)
		if !ok {
			return nil, false
		}
		if m != nil {
			fs = append(fs, field{f.Offset, m})
		}
	}
	if len(fs) == 1 && fs[0].off == 0 {
		return fs[0].m, true
	}
	return func(p unsafe.Pointer) (b, v int64) {
		for _, f := range fs {
			fb, fv := f.m(unsafe.Add(p, f.off))
			b, v = b+fb, v+fv
		}
		return b, v
	}, true
}

// mapBytes estimates the table of a Go map of n entries of key and
// element sizes ks and es: slots of both and a control byte each, at a
// load of 7/8, and a header.
func mapBytes(n int, ks, es uintptr) int64 {
	return 48 + int64(n)*int64(ks+es+1)*8/7
}

func mapMeasure(t reflect.Type, open map[reflect.Type]bool) (measure, bool) {
	km, ok := measureIn(t.Key(), open)
	if !ok {
		return nil, false
	}
	em, ok := measureIn(t.Elem(), open)
	if !ok {
		return nil, false
	}
	ks, es := t.Key().Size(), t.Elem().Size()
	if km == nil && em == nil {
		return func(p unsafe.Pointer) (int64, int64) {
			if *(*unsafe.Pointer)(p) == nil {
				return 0, 0
			}
			return mapBytes(reflect.NewAt(t, p).Elem().Len(), ks, es), 0
		}, true
	}
	// The key and element are copied out of the map into these (the
	// measure runs on the task goroutine only).
	kv, ev := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
	kp, ep := kv.Addr().UnsafePointer(), ev.Addr().UnsafePointer()
	return func(p unsafe.Pointer) (int64, int64) {
		if *(*unsafe.Pointer)(p) == nil {
			return 0, 0
		}
		m := reflect.NewAt(t, p).Elem()
		b, v := mapBytes(m.Len(), ks, es), int64(m.Len())
		for it := m.MapRange(); it.Next(); {
			if km != nil {
				kv.SetIterKey(it)
				xb, xv := km(kp)
				b, v = b+xb, v+xv
			}
			if em != nil {
				ev.SetIterValue(it)
				xb, xv := em(ep)
				b, v = b+xb, v+xv
			}
		}
		kv.SetZero() // keep nothing of the map alive
		ev.SetZero()
		return b, v
	}, true
}

// visits says whether measureOf's measure of t visits container elements
// (a slice or map whose elements hold pointers): then its cost grows with
// the value, else it is the same for every value of t.
func visits(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice:
		return hasPointers(t.Elem())
	case reflect.Map:
		return hasPointers(t.Key()) || hasPointers(t.Elem())
	case reflect.Array, reflect.Pointer:
		return visits(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if visits(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// sizer counts what a sized table's values point to. A write to an entry
// is handed out as a pointer (Writable, Upsert, Insert, OwnedWord,
// Probed), and the caller then changes the value in place: the table
// cannot see the new value when it hands the entry out, so it remembers
// the entry (pend) and measures it when the write is settled, at the
// table's next write, delete, growth or snapshot, whichever is first.
// Then the difference from what the entry was counted at goes to (or
// comes back from) the store's Memory, and a growth past it fails there.
//
// A value whose measure visits no elements (a string, a struct of
// strings) is measured when it is handed out and when it settles: what it
// was counted at is its measure. A value whose measure visits elements (a
// list of strings, a map of them) or that is measured by its encoding
// keeps what it was counted at in a word per slot (group.sizes, cells):
// measuring it on every write would make appending to a long list cost
// the list's length. After a measure that visited v elements, the entry's
// next v/8 writes are measured shallowly (shallowOf: arrays and map
// tables, not what their elements point to), so a measure costs at most
// about 8 visits per write, and what the elements written since the last
// full measure point to (at most one in nine) is not counted yet.
type sizer[E any] struct {
	m       measure // nil: by the length of the value's encoding
	shallow measure // with cells
	cells   bool
	scratch []byte // encoded's
	pend    *Entry[E]
	cell    *int64 // pend's word in its group's sizes, with cells
	// before is what pend measured when it was handed out: in full
	// without cells, shallowly with cells while its word says to wait.
	before int64
}

// newSizer returns the sizer of a table of E, or nil if E holds no
// pointers.
func newSizer[E any]() *sizer[E] {
	t := reflect.TypeFor[E]()
	m, ok := measureOf(t)
	switch {
	case !ok:
		return &sizer[E]{cells: true, shallow: func(unsafe.Pointer) (int64, int64) { return 0, 0 }}
	case m == nil:
		return nil
	case visits(t):
		return &sizer[E]{m: m, cells: true, shallow: shallowOf(t)}
	}
	return &sizer[E]{m: m}
}

// A size word holds the bytes an entry was counted at (cellMask) and,
// above cellBits, how many writes are still not measured in full.
const (
	cellBits = 40
	cellMask = 1<<cellBits - 1
	cellWait = 1<<(63-cellBits) - 1
)

func cellBytes(c int64) int64 { return c & cellMask }

// counted is what the value in slot i of g (sl) is counted at.
func (t *Table[E]) counted(g *group[E], i int, sl *slot[E]) int64 {
	if z := t.sz; !z.cells {
		b, _ := z.m(unsafe.Pointer(&sl.e.Val))
		return b
	}
	if g.sizes == nil {
		return 0
	}
	return cellBytes(g.sizes[i])
}

// uncount forgets what slot i of g is counted at, for a delete, and
// returns it.
func (t *Table[E]) uncount(g *group[E], i int, sl *slot[E]) int64 {
	n := t.counted(g, i, sl)
	if g.sizes != nil {
		g.sizes[i] = 0
	}
	return n
}

// track makes slot i of key group index idx the entry being written,
// settling the one before.
func (t *Table[E]) track(idx, i int) {
	z := t.sz
	if !z.cells {
		t.trackEntry(&t.groups[idx].t.at(i).e)
		return
	}
	if z.pend != nil {
		t.settle()
	}
	g := &t.groups[idx]
	if g.sizes == nil {
		g.sizes = make([]int64, g.t.size())
	}
	z.pend, z.cell = &g.t.at(i).e, &g.sizes[i]
	if g.sizes[i]>>cellBits > 0 {
		z.before, _ = z.shallow(unsafe.Pointer(&z.pend.Val))
	}
}

// trackEntry is track for a table without cells.
func (t *Table[E]) trackEntry(e *Entry[E]) {
	z := t.sz
	if z.pend == e {
		return
	}
	if z.pend != nil {
		t.settle()
	}
	z.pend = e
	z.before, _ = z.m(unsafe.Pointer(&e.Val))
}

// trackCurrent is track for the current key's owned entry e.
func (t *Table[E]) trackCurrent(e *Entry[E]) {
	z := t.sz
	if !z.cells {
		t.trackEntry(e)
		return
	}
	if z.pend == e {
		return
	}
	s := t.s
	g := &t.groups[s.kgIdx].t
	if len(g.p0) > 0 {
		// A one-page table: the index is where e is.
		t.track(s.kgIdx, int((uintptr(unsafe.Pointer(slotOf(e)))-uintptr(unsafe.Pointer(&g.p0[0])))/unsafe.Sizeof(slot[E]{})))
		return
	}
	t.track(s.kgIdx, g.find(s.image(), s.cur))
}

// settle measures the entry being written, if any, and counts the
// difference from what it was counted at.
func (t *Table[E]) settle() {
	z := t.sz
	e := z.pend
	if e == nil {
		return
	}
	z.pend = nil
	if !z.cells {
		b, _ := z.m(unsafe.Pointer(&e.Val))
		t.recount(z.before, b)
		return
	}
	c := *z.cell
	old := cellBytes(c)
	var b, wait int64
	if wait = c >> cellBits; wait > 0 {
		now, _ := z.shallow(unsafe.Pointer(&e.Val))
		b, wait = max(0, old+now-z.before), wait-1
	} else {
		var v int64
		b, v = z.measureEntry(e, &t.ops)
		wait = min(v/8, cellWait)
	}
	b = min(b, cellMask)
	t.recount(old, b)
	*z.cell = b | wait<<cellBits
}

// recount counts a value at b bytes instead of old.
func (t *Table[E]) recount(old, b int64) {
	if b > old {
		t.s.growValues(t.md.Name, b-old)
	} else if b < old {
		t.s.shrink(old - b)
	}
}

// measureEntry measures e's value, by its measure or, without one, by
// the length of what Ops.Emit encodes it to (an entry per element).
func (z *sizer[E]) measureEntry(e *Entry[E], ops *Ops[E]) (bytes, visited int64) {
	if z.m != nil {
		return z.m(unsafe.Pointer(&e.Val))
	}
	return z.encoded(e, ops)
}

// encoded is measureEntry without a measure (apart, so that the variables
// its callback captures are not allocated for every measure).
func (z *sizer[E]) encoded(e *Entry[E], ops *Ops[E]) (bytes, visited int64) {
	if ops.Emit == nil {
		return 0, 0
	}
	_ = ops.Emit(e, math.MinInt64, &z.scratch, func(uk []byte, _ bool, v []byte, _ bool, _ int64) error {
		bytes += int64(len(uk) + len(v))
		visited++
		return nil
	})
	return bytes, visited
}
